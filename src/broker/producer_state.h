// Idempotent-producer state of one partition, as Kafka's ProducerStateManager keeps it: per
// producer id the current epoch and the last five appended batches (sequence range and offsets),
// used to reject out-of-order or fenced batches and to answer a retried duplicate with the
// offset it got the first time.
//
// Durability: the state is derived from the batches in the log (every stored batch carries its
// producer id, epoch and base sequence), so a partition rebuilds it when it opens
// (Partition::open) from its last snapshot plus a replay of the log after it.
// Threads: not thread-safe; the owning Partition guards it with its mutex.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <unordered_map>
#include <utility>

#include "protocol/errors.h"

namespace shale::broker {

constexpr size_t kProducerBatchesKept = 5;  // Kafka's NUM_BATCHES_TO_RETAIN

struct ProducerBatch {
  int32_t first_seq = 0;
  int32_t last_seq = 0;
  int64_t first_offset = 0;
  int64_t last_offset = 0;
  int64_t timestamp = -1;  // the batch's max timestamp (or its LogAppendTime)
  bool operator==(const ProducerBatch&) const = default;
};

struct ProducerEntry {
  int16_t epoch = -1;
  std::deque<ProducerBatch> batches;  // oldest first, at most kProducerBatchesKept
};

// What check() decided about an incoming batch.
struct ProducerCheck {
  protocol::ErrorCode error = protocol::ErrorCode::kNone;
  std::optional<ProducerBatch> duplicate;  // set: the batch was appended before, at these offsets
};

class ProducerStateMap {
 public:
  // Validates a batch from a client (Kafka's findDuplicateBatch + checkProducerEpoch +
  // checkSequence). Batches without a producer id always pass. A producer without state here
  // must start at sequence 0 (else UNKNOWN_PRODUCER_ID; Kafka since KIP-360 accepts any
  // sequence because its producer state expires; Shale never drops a producer's state while
  // the partition lives, so a gap means earlier batches were refused: producer_state.cc).
  ProducerCheck check(int64_t producer_id, int16_t epoch, int32_t first_seq,
                      int32_t last_seq) const;
  // Records an appended batch (after check() passed, or while replaying the log).
  void record(int64_t producer_id, int16_t epoch, const ProducerBatch& b);
  // A transaction marker written with `epoch`: a newer epoch (the coordinator fenced the
  // producer) replaces the entry's epoch and forgets its batches, as Kafka does.
  void bump_epoch(int64_t producer_id, int16_t epoch);
  size_t size() const { return producers_.size(); }
  const ProducerEntry* find(int64_t producer_id) const;
  // Snapshots (partition_snapshot.h): every entry, and putting one back as it was.
  const std::unordered_map<int64_t, ProducerEntry>& entries() const { return producers_; }
  void restore(int64_t producer_id, ProducerEntry entry) {
    producers_[producer_id] = std::move(entry);
  }

 private:
  std::unordered_map<int64_t, ProducerEntry> producers_;
};

}  // namespace shale::broker
