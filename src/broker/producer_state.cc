#include "broker/producer_state.h"

#include <limits>

namespace shale::broker {

using protocol::ErrorCode;

namespace {

bool in_sequence(int32_t last_seq, int32_t next_seq) {
  return static_cast<int64_t>(next_seq) == static_cast<int64_t>(last_seq) + 1 ||
         (next_seq == 0 && last_seq == std::numeric_limits<int32_t>::max());
}

}  // namespace

const ProducerEntry* ProducerStateMap::find(int64_t producer_id) const {
  auto it = producers_.find(producer_id);
  return it == producers_.end() ? nullptr : &it->second;
}

ProducerCheck ProducerStateMap::check(int64_t producer_id, int16_t epoch, int32_t first_seq,
                                      int32_t last_seq) const {
  ProducerCheck out;
  if (producer_id < 0) return out;
  const ProducerEntry* e = find(producer_id);
  if (e == nullptr) {
    // A producer's sequence on a partition starts at 0. A later batch from a producer this
    // partition has no state for means earlier batches never arrived here: a request refused
    // (NOT_LEADER_OR_FOLLOWER while the partition was being opened, or while the lease was not
    // surely valid) with this one pipelined behind it. Accepting it would put it in the log
    // before its predecessors and leave the client's retry of them out of sequence (librdkafka:
    // a fatal "sequence desynchronization"). UNKNOWN_PRODUCER_ID, as Kafka answered before
    // KIP-360, makes the client bump its epoch and resend from sequence 0.
    if (first_seq != 0) out.error = ErrorCode::kUnknownProducerId;
    return out;
  }
  if (epoch == e->epoch) {
    for (const auto& b : e->batches) {
      if (b.first_seq == first_seq && b.last_seq == last_seq) {
        out.duplicate = b;
        return out;
      }
    }
  }
  if (epoch < e->epoch) {
    out.error = ErrorCode::kInvalidProducerEpoch;
    return out;
  }
  if (epoch != e->epoch) {
    // A bumped epoch must restart its sequences at 0.
    if (first_seq != 0 && e->epoch >= 0) out.error = ErrorCode::kOutOfOrderSequenceNumber;
    return out;
  }
  if (!e->batches.empty() && !in_sequence(e->batches.back().last_seq, first_seq)) {
    out.error = ErrorCode::kOutOfOrderSequenceNumber;
  }
  return out;
}

void ProducerStateMap::record(int64_t producer_id, int16_t epoch, const ProducerBatch& b) {
  if (producer_id < 0) return;
  ProducerEntry& e = producers_[producer_id];
  if (epoch != e.epoch) {
    e.epoch = epoch;
    e.batches.clear();
  }
  e.batches.push_back(b);
  while (e.batches.size() > kProducerBatchesKept) e.batches.pop_front();
}

void ProducerStateMap::bump_epoch(int64_t producer_id, int16_t epoch) {
  if (producer_id < 0) return;
  ProducerEntry& e = producers_[producer_id];
  if (epoch > e.epoch) {
    e.epoch = epoch;
    e.batches.clear();
  }
}

}  // namespace shale::broker
