// DescribeLogDirs: Shale has one "log directory", the broker's data directory (its WAL and, for
// file:// buckets, its objects); every partition lives there with offset lag 0 and no future
// replica. Sizes come from each partition's batch-size index (Partition::size_bytes), total and
// usable bytes (v4+) from statvfs of the directory. While the storage engine is degraded
// (uploads failing, docs/operations.md) the dir's error code is KAFKA_STORAGE_ERROR, as Kafka
// reports an offline log dir; its partitions stay listed (data already stored is readable).
// Non-blocking apart from one statvfs call.
#include <sys/statvfs.h>

#include <algorithm>

#include "broker/handlers.h"

namespace shale::broker {

using protocol::DescribeLogDirsResponse;

namespace {

void add_topic(const Topic& t, const std::vector<int32_t>* only,
               DescribeLogDirsResponse::DescribeLogDirsResult& dir) {
  DescribeLogDirsResponse::DescribeLogDirsTopic out;
  out.name = t.name;
  for (const auto& p : t.partitions) {
    if (p->deleted() || !p->serving()) continue;  // cluster mode: only what this broker holds
    if (only != nullptr && std::find(only->begin(), only->end(), p->index()) == only->end()) {
      continue;
    }
    auto& po = out.partitions.emplace_back();
    po.partition_index = p->index();
    po.partition_size = p->size_bytes();
    po.offset_lag = 0;
    po.is_future_key = false;
  }
  if (!out.partitions.empty()) dir.topics.push_back(std::move(out));
}

}  // namespace

asio::awaitable<DescribeLogDirsResponse> handle_describe_log_dirs(
    Broker& b, int16_t version, protocol::DescribeLogDirsRequest req) {
  DescribeLogDirsResponse resp;
  const std::string& log_dir = b.config().log_dir;
  if (log_dir.empty()) co_return resp;
  auto& dir = resp.results.emplace_back();
  dir.log_dir = log_dir;
  if (b.engine().health().degraded) {
    dir.error_code = static_cast<int16_t>(protocol::ErrorCode::kKafkaStorageError);
  }
  if (!req.topics) {
    for (const auto& t : b.topics().list()) add_topic(*t, nullptr, dir);
  } else {
    // Kafka lists only the requested partitions this broker hosts; unknown ones are left out.
    for (const auto& rt : *req.topics) {
      TopicPtr t = b.topics().find(rt.topic);
      if (t) add_topic(*t, &rt.partitions, dir);
    }
  }
  if (version >= 4) {
    struct statvfs st {};
    if (::statvfs(log_dir.c_str(), &st) == 0) {
      dir.total_bytes = static_cast<int64_t>(st.f_blocks) * static_cast<int64_t>(st.f_frsize);
      dir.usable_bytes = static_cast<int64_t>(st.f_bavail) * static_cast<int64_t>(st.f_frsize);
    }
  }
  co_return resp;
}

}  // namespace shale::broker
