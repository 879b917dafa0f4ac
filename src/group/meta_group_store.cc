#include "group/meta_group_store.h"

#include <map>

#include "group/record_codec.h"

namespace shale::group {

MetaGroupStore::MetaGroupStore(meta::MetaStore* meta, std::string root)
    : meta_(meta), root_(std::move(root)) {}

Status MetaGroupStore::save_group(const GroupRecord& group) {
  meta::Txn txn;
  txn.ops.push_back(
      meta::Op::put(codec::meta_key(root_, group.group_id), codec::encode_group(group)));
  SHALE_TRY(meta_->commit(txn));
  return ok_status();
}

Status MetaGroupStore::save_offsets(std::string_view group_id,
                                    const std::vector<OffsetRecord>& commits,
                                    const std::vector<TopicPartition>& deletes) {
  if (commits.empty() && deletes.empty()) return ok_status();
  std::vector<meta::Op> ops;
  ops.reserve(commits.size() + deletes.size());
  for (const auto& tp : deletes) {
    ops.push_back(meta::Op::del(codec::offset_key(root_, group_id, tp.topic, tp.partition)));
  }
  for (const auto& c : commits) {
    ops.push_back(meta::Op::put(codec::offset_key(root_, group_id, c.topic, c.partition),
                                codec::encode_offset(c.value)));
  }
  // Each partition's offset stands alone (Kafka clients see one result per partition), so a
  // commit larger than the store's transaction limit (etcd's --max-txn-ops) goes in several
  // transactions; after a failure the client retries, rewriting the same values.
  const size_t limit = meta_->max_txn_ops() == 0 ? ops.size() : meta_->max_txn_ops();
  for (size_t i = 0; i < ops.size(); i += limit) {
    meta::Txn txn;
    for (size_t j = i; j < ops.size() && j < i + limit; ++j) txn.ops.push_back(std::move(ops[j]));
    SHALE_TRY(meta_->commit(txn));
  }
  return ok_status();
}

Status MetaGroupStore::delete_group(std::string_view group_id) {
  meta::Txn txn;
  txn.ops.push_back(meta::Op::del_prefix(codec::group_prefix(root_, group_id)));
  SHALE_TRY(meta_->commit(txn));
  return ok_status();
}

Result<std::vector<StoredGroup>> MetaGroupStore::load_all() {
  auto kvs = meta_->prefix(root_);
  if (!kvs.ok()) return std::move(kvs).error();
  std::map<std::string, StoredGroup> groups;
  for (const auto& kv : *kvs) {
    auto key = codec::parse_key(root_, kv.key);
    if (!key.ok()) return Error::make(Errc::kCorruption, kv.key + ": " + key.error().message);
    StoredGroup& g = groups[key->group_id];
    g.group_id = key->group_id;
    if (key->is_meta) {
      auto rec = codec::decode_group(key->group_id, kv.value);
      if (!rec.ok()) return std::move(rec).error();
      g.metadata = std::move(*rec);
    } else {
      auto v = codec::decode_offset(kv.value);
      if (!v.ok()) return Error::make(Errc::kCorruption, kv.key + ": " + v.error().message);
      g.offsets.push_back(OffsetRecord{key->topic, key->partition, std::move(*v)});
    }
  }
  std::vector<StoredGroup> out;
  out.reserve(groups.size());
  for (auto& [id, g] : groups) out.push_back(std::move(g));
  return out;
}

}  // namespace shale::group
