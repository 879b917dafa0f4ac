// The transaction coordinator (KIP-98, KIP-447; Kafka's TransactionCoordinator): one record per
// transactional.id in the MetaStore (`<ns>/txn/<transactional.id>`: producer id and epoch,
// state, partitions, consumer groups and their pending offsets, timeout), the epoch bumps that
// fence zombie producers, and the two-phase commit that ends a transaction:
//
//   Ongoing --EndTxn--> PrepareCommit|PrepareAbort (persisted) --markers durable in every
//   partition, then (commit) the pending offsets written to the group coordinator-->
//   CompleteCommit|CompleteAbort (persisted)
//
// A crash after the Prepare record is written is finished by start() (recover()), which redoes
// the markers (a partition whose transaction is already closed writes none) and the offsets
// (idempotent), so a transaction ends wholly committed or wholly aborted. Transactions older
// than their timeout are aborted by the coordinator with a bumped epoch (the producer is then
// fenced). Design and recovery cases: docs/transactions.md.
//
// Threads: every public method may block (MetaStore writes, waiting for markers): call it on a
// worker thread, never on a shard. One mutex guards the records; it is released while markers
// are written, because Partition::append calls verify() with the partition's mutex held (lock
// order: partition, then coordinator). A transaction in a Prepare state is owned by the thread
// completing it; every other call on it answers CONCURRENT_TRANSACTIONS meanwhile.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/result.h"
#include "protocol/errors.h"

namespace shale::meta {
class MetaStore;
}

namespace shale::broker {

enum class TxnState : uint8_t {
  kEmpty = 0,
  kOngoing = 1,
  kPrepareCommit = 2,
  kPrepareAbort = 3,
  kCompleteCommit = 4,
  kCompleteAbort = 5,
};
// Kafka's names ("Empty", "Ongoing", "PrepareCommit", ...), as the admin APIs report them.
const char* txn_state_name(TxnState s);

struct TxnTopicPartition {
  std::string topic;
  int32_t partition = 0;
  auto operator<=>(const TxnTopicPartition&) const = default;
};

struct TxnPendingOffset {
  int64_t offset = 0;
  int32_t leader_epoch = -1;
  std::optional<std::string> metadata;
  bool operator==(const TxnPendingOffset&) const = default;
};

// One transactional.id's record (what is persisted).
struct TxnMetadata {
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
  // The epoch before the coordinator last bumped it on its own (timeout abort), so that the
  // fenced producer may still re-initialise with it (KIP-360); -1: none.
  int16_t last_producer_epoch = -1;
  int32_t timeout_ms = 60000;
  TxnState state = TxnState::kEmpty;
  std::set<TxnTopicPartition> partitions;
  // group id -> (topic-partition -> offset); a group added by AddOffsetsToTxn has an entry.
  std::map<std::string, std::map<TxnTopicPartition, TxnPendingOffset>> groups;
  int64_t start_ms = -1;  // when the transaction became Ongoing
  int64_t update_ms = -1;

  std::string encode() const;
  static Result<TxnMetadata> decode(const std::string& bytes);
  bool operator==(const TxnMetadata&) const = default;
};

struct TxnCoordinatorConfig {
  std::string ns = "shale";                 // MetaStore key namespace
  int32_t max_timeout_ms = 900000;          // transaction.max.timeout.ms
  int64_t abort_check_interval_ms = 10000;  // transaction.abort.timed.out...interval.ms
  int32_t marker_retry_backoff_ms = 100;    // between marker write attempts
};

// What the coordinator needs from the broker; blocking calls made on the caller's thread.
struct TxnHooks {
  // Appends the marker to one partition and waits until it is durable (ok when the partition
  // has no open transaction of the producer, or no longer exists).
  std::function<Status(const TxnTopicPartition&, int64_t producer_id, int16_t epoch, bool commit,
                       int32_t coordinator_epoch)>
      write_marker;
  // Makes a committed transaction's offsets visible in the group coordinator.
  std::function<Status(const std::string& group,
                       const std::map<TxnTopicPartition, TxnPendingOffset>& offsets)>
      commit_offsets;
  std::function<bool(const TxnTopicPartition&)> partition_exists;
  std::function<Result<int64_t>()> allocate_producer_id;
  std::function<int64_t()> now_ms;  // wall clock; unset: system clock
};

struct TxnInitResult {
  protocol::ErrorCode error = protocol::ErrorCode::kNone;
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
};

struct TxnDescription {
  std::string transactional_id;
  protocol::ErrorCode error = protocol::ErrorCode::kNone;
  TxnMetadata meta;
};

class TxnCoordinator {
 public:
  TxnCoordinator(TxnCoordinatorConfig cfg, meta::MetaStore* meta, TxnHooks hooks);
  ~TxnCoordinator();
  TxnCoordinator(const TxnCoordinator&) = delete;
  TxnCoordinator& operator=(const TxnCoordinator&) = delete;

  // Loads every record, bumps the coordinator epoch, completes every Prepare* transaction
  // (recovery) and starts the timeout thread (unless abort_check_interval_ms <= 0). Until it
  // has run every API answers COORDINATOR_LOAD_IN_PROGRESS.
  Status start();
  void stop();
  bool loaded() const;

  // InitProducerId with a transactional.id. (pid, epoch) = (-1, -1) unless the producer
  // re-initialises after an abortable error (KIP-360).
  TxnInitResult init_producer_id(const std::string& tid, int32_t timeout_ms, int64_t producer_id,
                                 int16_t epoch);
  // AddPartitionsToTxn: one error per partition (the same for all unless some are unknown).
  std::map<TxnTopicPartition, protocol::ErrorCode> add_partitions(
      const std::string& tid, int64_t producer_id, int16_t epoch,
      const std::vector<TxnTopicPartition>& partitions);
  protocol::ErrorCode add_offsets(const std::string& tid, int64_t producer_id, int16_t epoch,
                                  const std::string& group);
  // TxnOffsetCommit: stores the offsets as pending in the transaction (visible on commit).
  protocol::ErrorCode txn_offset_commit(
      const std::string& tid, const std::string& group, int64_t producer_id, int16_t epoch,
      const std::vector<std::pair<TxnTopicPartition, TxnPendingOffset>>& offsets);
  protocol::ErrorCode end_txn(const std::string& tid, int64_t producer_id, int16_t epoch,
                              bool commit);
  // Produce of a transactional batch: is the partition in the producer's ongoing transaction
  // at this epoch? Never blocks (memory only).
  protocol::ErrorCode verify(int64_t producer_id, int16_t epoch, const TxnTopicPartition& tp);

  // KIP-447: does an unfinished transaction hold TxnOffsetCommit offsets of this group for
  // this partition? (OffsetFetch with require_stable answers UNSTABLE_OFFSET_COMMIT then.)
  bool has_pending_offsets(const std::string& group, const std::string& topic,
                           int32_t partition) const;

  // Aborts every Ongoing transaction older than its timeout (epoch bumped); returns how many.
  int abort_expired();

  std::vector<TxnDescription> describe(const std::vector<std::string>& tids);
  // ListTransactions: filters empty = all.
  std::vector<std::pair<std::string, TxnMetadata>> list(const std::vector<std::string>& states,
                                                        const std::vector<int64_t>& producer_ids,
                                                        int64_t min_duration_ms);
  int32_t coordinator_epoch() const { return coordinator_epoch_; }
  // Sets TxnHooks::commit_offsets (the group coordinator is created after the broker). Call
  // before start().
  void set_commit_offsets(decltype(TxnHooks::commit_offsets) fn) {
    hooks_.commit_offsets = std::move(fn);
  }

 private:
  int64_t now() const;
  std::string key(const std::string& tid) const { return cfg_.ns + "/txn/ids/" + tid; }
  Status persist(const std::string& tid, const TxnMetadata& m);
  // Prepare → markers → offsets → Complete, for a record already persisted in a Prepare
  // state. Called without mu_; retries the markers until they are written or stop().
  Status complete(const std::string& tid);
  // Moves an Ongoing record to Prepare{Commit,Abort} (persisted), with lock held.
  protocol::ErrorCode prepare_locked(const std::string& tid, TxnMetadata& m, bool commit);
  void timeout_loop();

  TxnCoordinatorConfig cfg_;
  meta::MetaStore* meta_;
  TxnHooks hooks_;
  int32_t coordinator_epoch_ = 0;

  mutable std::mutex mu_;
  bool loaded_ = false;
  bool stopping_ = false;
  std::map<std::string, TxnMetadata> txns_;
  std::map<int64_t, std::string> by_producer_;  // producer id -> transactional.id
  std::condition_variable cv_;
  std::thread timeout_thread_;
};

}  // namespace shale::broker
