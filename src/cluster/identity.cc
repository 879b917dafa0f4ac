#include "cluster/identity.h"

#include <nlohmann/json.hpp>

namespace shale::cluster {

Status check_identity(meta::MetaStore* store, const Keys& keys, const std::string& cluster_id,
                      const std::string& object_store, int32_t group_shards) {
  nlohmann::json mine;
  mine["cluster_id"] = cluster_id;
  mine["object_store"] = object_store;
  if (group_shards > 0) mine["group_shards"] = group_shards;
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto cur = store->get(keys.identity());
    if (!cur.ok()) return std::move(cur).error();
    if (!cur->has_value()) {
      meta::Txn t;
      t.compares.push_back({keys.identity(), 0});
      t.ops.push_back(meta::Op::put(keys.identity(), mine.dump()));
      auto r = store->commit(t);
      if (r.ok()) return ok_status();
      if (r.error().code != Errc::kConflict) return std::move(r).error();
      continue;  // another broker recorded it first: compare with that
    }
    auto j = nlohmann::json::parse((*cur)->value, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("cluster_id") ||
        !j["cluster_id"].is_string() || !j.contains("object_store") ||
        !j["object_store"].is_string())
      return Error::make(Errc::kCorruption, keys.identity() + " is not a cluster identity record");
    const std::string theirs_id = j["cluster_id"].get<std::string>();
    const std::string theirs_store = j["object_store"].get<std::string>();
    if (theirs_id != cluster_id)
      return Error::make(Errc::kInvalidArgument,
                         "this broker's cluster id '" + cluster_id +
                             "' differs from the cluster's '" + theirs_id + "' recorded at " +
                             keys.identity() + " (set cluster.id, or use another metadata.store)");
    if (theirs_store != object_store)
      return Error::make(Errc::kInvalidArgument,
                         "this broker's object store '" + object_store +
                             "' differs from the cluster's '" + theirs_store + "' recorded at " +
                             keys.identity() + " (every broker must share s3.data.buckets)");
    // Recorded by brokers that shard groups; a record without it predates the field.
    if (group_shards > 0 && j.contains("group_shards") && j["group_shards"].is_number_integer() &&
        j["group_shards"].get<int64_t>() != group_shards)
      return Error::make(Errc::kInvalidArgument,
                         "this broker's offsets.topic.num.partitions (" +
                             std::to_string(group_shards) + ") differs from the cluster's (" +
                             std::to_string(j["group_shards"].get<int64_t>()) + ") recorded at " +
                             keys.identity() + " (every broker must use the same value)");
    return ok_status();
  }
  return Error::make(Errc::kConflict, "cluster identity kept changing", true);
}

}  // namespace shale::cluster
