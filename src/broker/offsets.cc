// ListOffsets (earliest, latest, by timestamp, max timestamp), OffsetForLeaderEpoch and
// DeleteRecords. Shale has one leader epoch per partition (0): the only leader ever is this
// broker and the shared storage makes every restart a continuation of the same log.
#include "broker/handlers.h"

namespace shale::broker {

using protocol::ErrorCode;

namespace {

constexpr int64_t kLatest = -1;
constexpr int64_t kEarliest = -2;
constexpr int64_t kMaxTimestamp = -3;
constexpr int64_t kEarliestLocal = -4;
constexpr int64_t kLatestTiered = -5;

struct Found {
  ErrorCode error = ErrorCode::kNone;
  int64_t offset = -1;
  int64_t timestamp = -1;
};

// The first record at or after `from` whose timestamp is >= ts, reading batch by batch.
asio::awaitable<Found> scan_for_timestamp(Partition& p, int64_t from, int64_t ts) {
  int64_t offset = from;
  while (offset < p.high_watermark()) {
    auto r = co_await await_callback<Result<std::vector<storage::StreamRecord>>>(
        [&](std::function<void(Result<std::vector<storage::StreamRecord>>)> done) {
          p.read(offset, storage::kMiB, std::move(done));
        });
    if (!r.ok()) co_return Found{storage_error_code(r.error()), -1, -1};
    if (r->empty()) break;
    for (const auto& rec : *r) {
      protocol::BatchReader reader(rec.payload, false, false);
      while (true) {
        auto nb = reader.next();
        if (!nb.ok() || !nb->has_value()) break;
        const auto& batch = **nb;
        const auto& h = batch.header();
        if (h.max_timestamp < ts) continue;
        if (h.timestamp_type() == protocol::TimestampType::kLogAppendTime) {
          co_return Found{ErrorCode::kNone, std::max(h.base_offset, from), h.max_timestamp};
        }
        Found f;
        (void)batch.for_each_record([&](const protocol::RecordView& v) {
          const int64_t rts = h.base_timestamp + v.timestamp_delta;
          const int64_t off = h.base_offset + v.offset_delta;
          if (f.offset < 0 && rts >= ts && off >= from) {
            f.offset = off;
            f.timestamp = rts;
          }
        });
        if (f.offset >= 0) co_return f;
      }
      offset = rec.end_offset();
    }
  }
  co_return Found{};
}

// A request naming the leader epoch it expects: this broker must serve the partition, under
// that epoch (-1: any). Kafka's errors for a stale and for a future epoch.
ErrorCode leader_check(const Partition& part, int32_t current_leader_epoch) {
  if (!part.serving()) return ErrorCode::kNotLeaderOrFollower;
  if (current_leader_epoch >= 0 && current_leader_epoch < part.leader_epoch())
    return ErrorCode::kFencedLeaderEpoch;
  if (current_leader_epoch > part.leader_epoch()) return ErrorCode::kUnknownLeaderEpoch;
  return ErrorCode::kNone;
}

}  // namespace

asio::awaitable<protocol::ListOffsetsResponse> handle_list_offsets(
    Broker& b, int16_t version, protocol::ListOffsetsRequest req) {
  (void)version;
  protocol::ListOffsetsResponse resp;
  for (auto& t : req.topics) {
    auto& tr = resp.topics.emplace_back();
    tr.name = t.name;
    for (auto& rp : t.partitions) {
      auto& pr = tr.partitions.emplace_back();
      pr.partition_index = rp.partition_index;
      auto part = b.topics().partition(t.name, rp.partition_index);
      if (!part || part->deleted()) {
        pr.error_code = static_cast<int16_t>(ErrorCode::kUnknownTopicOrPartition);
        continue;
      }
      if (ErrorCode e = leader_check(*part, rp.current_leader_epoch); e != ErrorCode::kNone) {
        pr.error_code = static_cast<int16_t>(e);
        continue;
      }
      if (version >= 4) pr.leader_epoch = part->leader_epoch();
      switch (rp.timestamp) {
        case kLatest:
          // read_committed (isolation level 1) ends at the last stable offset.
          pr.offset =
              req.isolation_level == 1 ? part->last_stable_offset() : part->high_watermark();
          break;
        case kEarliest:
        case kEarliestLocal:
          pr.offset = part->log_start_offset();
          break;
        case kLatestTiered:
          // Kafka answers -1 when nothing is tiered; here everything is in object storage
          // already, so the durable end is the honest answer.
          pr.offset = part->high_watermark();
          break;
        case kMaxTimestamp: {
          auto [ts, off] = part->max_timestamp();
          if (off >= part->log_start_offset()) {
            pr.timestamp = ts;
            pr.offset = off;
          }
          break;
        }
        default: {
          if (rp.timestamp < 0) {
            pr.error_code = static_cast<int16_t>(ErrorCode::kInvalidRequest);
            break;
          }
          auto base = part->find_batch_by_timestamp(rp.timestamp);
          if (!base) break;  // no record that late: offset -1, timestamp -1
          Found f = co_await scan_for_timestamp(*part, std::max(*base, part->log_start_offset()),
                                                rp.timestamp);
          pr.error_code = static_cast<int16_t>(f.error);
          pr.offset = f.offset;
          pr.timestamp = f.timestamp;
          break;
        }
      }
    }
  }
  co_return resp;
}

asio::awaitable<protocol::OffsetForLeaderEpochResponse> handle_offset_for_leader_epoch(
    Broker& b, int16_t version, protocol::OffsetForLeaderEpochRequest req) {
  (void)version;
  protocol::OffsetForLeaderEpochResponse resp;
  for (auto& t : req.topics) {
    auto& tr = resp.topics.emplace_back();
    tr.topic = t.topic;
    for (auto& rp : t.partitions) {
      auto& pr = tr.partitions.emplace_back();
      pr.partition = rp.partition;
      auto part = b.topics().partition(t.topic, rp.partition);
      if (!part || part->deleted()) {
        pr.error_code = static_cast<int16_t>(ErrorCode::kUnknownTopicOrPartition);
        continue;
      }
      if (ErrorCode e = leader_check(*part, rp.current_leader_epoch); e != ErrorCode::kNone) {
        pr.error_code = static_cast<int16_t>(e);
        continue;
      }
      // The end of the requested epoch: the start of the next one in the partition's
      // leader-epoch history, or the log end for the current (or a later) epoch.
      auto [epoch, end] = part->end_offset_for(rp.leader_epoch);
      pr.leader_epoch = epoch;
      pr.end_offset = end;
    }
  }
  co_return resp;
}

asio::awaitable<protocol::DeleteRecordsResponse> handle_delete_records(
    Broker& b, int16_t version, protocol::DeleteRecordsRequest req) {
  (void)version;
  protocol::DeleteRecordsResponse resp;
  for (auto& t : req.topics) {
    auto& tr = resp.topics.emplace_back();
    tr.name = t.name;
    for (auto& rp : t.partitions) {
      auto& pr = tr.partitions.emplace_back();
      pr.partition_index = rp.partition_index;
      pr.low_watermark = -1;
      auto part = b.topics().partition(t.name, rp.partition_index);
      if (!part || part->deleted()) {
        pr.error_code = static_cast<int16_t>(ErrorCode::kUnknownTopicOrPartition);
        continue;
      }
      if (!part->serving()) {
        pr.error_code = static_cast<int16_t>(ErrorCode::kNotLeaderOrFollower);
        continue;
      }
      const int64_t hw = part->high_watermark();
      const int64_t target = rp.offset == -1 ? hw : rp.offset;
      if (target < 0 || target > hw) {
        pr.error_code = static_cast<int16_t>(ErrorCode::kOffsetOutOfRange);
        continue;
      }
      if (target > part->log_start_offset()) {
        auto work = [part, target] { return part->stream()->trim(target); };
        Status st = co_await b.blocking(std::move(work));
        if (!st.ok()) {
          pr.error_code = static_cast<int16_t>(storage_error_code(st.error()));
          continue;
        }
      }
      pr.low_watermark = part->log_start_offset();
    }
  }
  co_return resp;
}

}  // namespace shale::broker
