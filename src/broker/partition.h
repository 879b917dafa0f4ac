// One Kafka partition on this broker: its data stream (storage::Stream, one stream offset per
// Kafka record, one stream record per Kafka record batch), the idempotent-producer state, a
// time index, a batch-size index (retention.bytes, DescribeLogDirs), and the fetch requests
// waiting for new data.
//
// Threads: a Partition is shared by every shard. mu_ guards the producer state, the time index
// and the order of appends (next_offset() is read and the append issued under it, so offsets
// are assigned in one order whichever shard produces). waiters_mu_ guards the waiter list only;
// it is separate because append callbacks (which wake waiters) may run inline while mu_ is held.
// open() and write_snapshot() block (MetaStore + reads); call them on a worker thread, never on
// a shard.
// Side data: producer state and the indexes are derived from the batch headers. open() loads
// the last snapshot (partition_snapshot.h) and replays the stream from the offset it covers, so
// they survive restarts (graceful or not) exactly as far as the acknowledged data does. A
// snapshot only ever covers durable offsets (below end_offset() when it was taken).
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <asio/any_io_executor.hpp>
#include <asio/steady_timer.hpp>

#include "base/result.h"
#include "broker/partition_snapshot.h"
#include "broker/producer_state.h"
#include "protocol/errors.h"
#include "protocol/record_batch.h"
#include "storage/engine.h"

namespace shale::broker {

// A fetch waiting for data: woken (once) by an append to any partition it registered with.
struct FetchWaiter : std::enable_shared_from_this<FetchWaiter> {
  explicit FetchWaiter(asio::any_io_executor ex) : timer(std::move(ex)) {}
  void wake();
  asio::steady_timer timer;  // used only on its executor's thread
  std::atomic<bool> notified{false};
};

// A validated batch from a Produce request, ready to append.
struct PreparedBatch {
  protocol::RecordBatch batch;
  int64_t max_timestamp = -1;       // max record timestamp (CreateTime)
  int32_t max_timestamp_delta = 0;  // offset delta of the record holding it
};

// An aborted transaction of one partition, as Fetch (read_committed) reports it: its first
// data offset and the offset of its abort marker.
struct AbortedTxn {
  int64_t producer_id = -1;
  int64_t first_offset = -1;
  int64_t last_offset = -1;  // the abort marker's offset
  bool operator==(const AbortedTxn&) const = default;
};

// What DescribeProducers reports about one producer of a partition.
struct ProducerView {
  int64_t producer_id = -1;
  int16_t epoch = -1;
  int32_t last_sequence = -1;
  int64_t last_timestamp = -1;
  int64_t current_txn_start_offset = -1;
  int32_t coordinator_epoch = -1;  // of the producer's last marker here
};

// Checks a transactional batch with the transaction coordinator (is this partition part of
// the producer's ongoing transaction, at this epoch?). Called with the partition's mutex held,
// so it must not call back into the partition.
using TxnVerifier = std::function<protocol::ErrorCode(int64_t producer_id, int16_t epoch)>;

struct AppendStart {
  protocol::ErrorCode error = protocol::ErrorCode::kNone;
  std::string message;
  int64_t base_offset = -1;
  int64_t log_append_time = -1;
  bool pending = false;  // true: `done` will be called once all appends are durable (or failed)
};

// Kafka error for an engine error (back-pressure → retriable REQUEST_TIMED_OUT, fenced or
// closed → NOT_LEADER_OR_FOLLOWER so clients refresh metadata, I/O → KAFKA_STORAGE_ERROR).
protocol::ErrorCode storage_error_code(const Error& e);

class Partition {
 public:
  Partition(std::string topic, int32_t index, int64_t stream_id)
      : topic_(std::move(topic)), index_(index), stream_id_(stream_id) {}

  // Blocking: opens the stream (fencing any earlier owner), loads the side-data snapshot (unless
  // use_snapshot is false, or it is unreadable) and replays the stream after it. leader_epoch is
  // the ownership epoch this broker serves the partition under (cluster mode; 0 on one node); a
  // new epoch is recorded with its start offset (the stream end) in the stream's leader-epoch
  // history (OffsetForLeaderEpoch). After a successful open the partition is serving().
  Status open(storage::Engine& engine, bool use_snapshot = true, int32_t leader_epoch = 0);

  // Whether this object serves the partition: open succeeded and neither close() nor
  // stop_serving() ran since. Cluster mode replaces the object on each change of owner, so a
  // handler holding an old one sees false and answers NOT_LEADER_OR_FOLLOWER.
  bool serving() const { return serving_.load(std::memory_order_acquire); }
  // Blocking: stops serving (new appends answer NOT_LEADER_OR_FOLLOWER), waits for the appends
  // in flight, writes the side-data snapshot and closes the stream (its WAL data uploaded), so
  // that another broker can open it. Waiting fetches are woken.
  Status close();
  // Stops serving at once without touching the stream (another broker owns it already).
  void stop_serving();

  const std::string& topic() const { return topic_; }
  int32_t index() const { return index_; }
  int64_t stream_id() const { return stream_id_; }
  storage::Stream* stream() const { return stream_; }
  int64_t high_watermark() const { return stream_ ? stream_->end_offset() : -1; }
  int64_t log_start_offset() const { return stream_ ? stream_->start_offset() : -1; }
  int32_t leader_epoch() const { return leader_epoch_; }
  // OffsetForLeaderEpoch: (the largest epoch <= `epoch`, the end offset of that epoch — the
  // start of the next one, or the high watermark for the current epoch). (-1, -1) when `epoch`
  // is older than every epoch of the history.
  std::pair<int32_t, int64_t> end_offset_for(int32_t epoch) const;
  bool deleted() const { return deleted_.load(); }
  void mark_deleted() {
    deleted_.store(true);
    notify_waiters();
  }

  // Checks producer state, assigns offsets (rewriting each batch header in place) and issues
  // the appends. log_append_time >= 0 stamps the batches with it.
  // Transactional batches are checked with `verify` first (none given: refused with
  // INVALID_TXN_STATE) and open the producer's transaction on this partition.
  AppendStart append(std::vector<PreparedBatch>& batches, int64_t log_append_time,
                     std::function<void(Status)> done, const TxnVerifier& verify = nullptr);

  // Transactions (docs/transactions.md). Appends a control batch (Kafka's commit or abort
  // marker) for the producer's transaction on this partition; `done` runs once it is durable.
  // Nothing is appended (and `done` runs at once with ok) when the producer has no open
  // transaction here (a retried marker after a crash, or a partition that got no data).
  void append_marker(int64_t producer_id, int16_t epoch, bool commit, int32_t coordinator_epoch,
                     std::function<void(Status)> done);
  // First offset not yet decided (the first offset of the oldest open transaction), at most
  // the high watermark and at least the log start offset.
  int64_t last_stable_offset() const;
  // Aborted transactions overlapping [from, upper): Fetch's aborted_transactions.
  std::vector<AbortedTxn> aborted_txns(int64_t from, int64_t upper) const;
  bool has_open_txn(int64_t producer_id) const;
  std::vector<ProducerView> producers() const;

  // Reads committed batches from `offset` (see storage::Stream::read).
  void read(int64_t offset, size_t max_bytes, storage::ReadCallback done);

  void add_waiter(const std::shared_ptr<FetchWaiter>& w);
  void notify_waiters();

  // First offset whose batch max timestamp is >= ts (the batch to search), or nullopt.
  std::optional<int64_t> find_batch_by_timestamp(int64_t ts) const;
  // (max timestamp, offset of the record carrying it), or (-1, -1) when empty.
  std::pair<int64_t, int64_t> max_timestamp() const;
  size_t producer_count() const;
  // retention.ms: the offset to trim to so that only batches whose max timestamp (running
  // maximum, as Kafka's time index) is >= cutoff remain; nullopt when nothing is that old.
  std::optional<int64_t> retention_offset(int64_t cutoff_ms) const;
  // Bytes of the batches from the log start to the end (a batch the start falls inside counts
  // whole), including appends still in flight.
  int64_t size_bytes() const;
  // retention.bytes: the offset to trim to (a batch boundary) so that at most limit_bytes
  // remain; nullopt when the partition is within the limit.
  std::optional<int64_t> retention_bytes_offset(int64_t limit_bytes) const;

  // The side data as of the durable end (batches still in flight left out). max_entries > 0
  // thins the indexes to that many entries each.
  PartitionSnapshot snapshot(size_t max_entries = 0) const;
  // Blocking: stores snapshot(kSnapshotMaxIndexEntries) with Stream::put_meta. Returns the
  // offset it covers.
  Result<int64_t> write_snapshot();
  // Batches appended since the last snapshot written or loaded, and when that was (steady ms).
  int64_t batches_since_snapshot() const { return batches_since_snapshot_.load(); }
  int64_t snapshot_time_ms() const { return snapshot_time_ms_.load(); }
  // Offset the snapshot loaded by open() covered (-1: none, a full replay).
  int64_t loaded_snapshot_offset() const { return loaded_snapshot_offset_; }

  static constexpr size_t kSnapshotMaxIndexEntries = 16384;

 private:
  void index_batch(int64_t base, int64_t end, int64_t bytes, int64_t max_ts, int64_t max_ts_offset);
  Status replay(int64_t from);
  void restore(const PartitionSnapshot& s);
  // A marker at `offset` closes the producer's open transaction (mu_ held).
  void apply_marker(int64_t producer_id, int16_t epoch, bool commit, int64_t offset);

  const std::string topic_;
  const int32_t index_;
  const int64_t stream_id_;
  storage::Stream* stream_ = nullptr;
  std::atomic<bool> deleted_{false};
  std::atomic<bool> serving_{false};
  int32_t leader_epoch_ = 0;
  // (epoch, start offset), increasing; set by open() before the partition is published.
  std::vector<std::pair<int32_t, int64_t>> epochs_;

  mutable std::mutex mu_;
  ProducerStateMap producers_;
  std::vector<TimeIndexEntry> time_index_;  // strictly increasing max_timestamp
  int64_t max_ts_ = -1;
  int64_t max_ts_offset_ = -1;
  std::deque<SizeIndexEntry> sizes_;  // increasing offsets; front pruned below the log start
  int64_t sizes_cumulative_before_ = 0;
  std::map<int64_t, int64_t> open_txns_;  // producer id -> first offset of its open transaction
  std::deque<AbortedTxn> aborted_;        // by marker offset; front pruned below the log start
  // Transactions closed by a marker that may not be durable yet: a snapshot must still list
  // them as open (pruned once the marker is below the durable end).
  std::deque<AbortedTxn> recently_closed_;
  std::map<int64_t, int32_t> coordinator_epochs_;  // producer id -> its last marker's
  std::mutex snapshot_mu_;  // one write_snapshot() at a time (maintenance thread, stop, tests)
  std::atomic<int64_t> batches_since_snapshot_{0};
  std::atomic<int64_t> snapshot_time_ms_{0};
  int64_t loaded_snapshot_offset_ = -1;

  std::mutex waiters_mu_;
  std::vector<std::weak_ptr<FetchWaiter>> waiters_;
};

}  // namespace shale::broker
