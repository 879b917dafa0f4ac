// The side-data snapshot of one partition: producer state, time index and batch-size index as
// of a stream offset `covered_end` (every batch below it, none at or above it). Partition::open
// loads it and replays only the stream tail from covered_end instead of the whole stream.
// Stored with Stream::put_meta under kPartitionSnapshotKey; the binary format (versioned,
// CRC32C-protected) is described in docs/formats.md.
//
// Threads: plain values and pure functions.
// Invariants: index entries are in increasing offset order and all lie below covered_end;
// decode() rejects anything malformed (wrong version, bad CRC, truncation, trailing bytes)
// so a damaged snapshot falls back to a full replay instead of wrong state.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"
#include "broker/producer_state.h"

namespace shale::broker {

inline constexpr const char* kPartitionSnapshotKey = "broker.partition.snapshot";
// Version 2 adds the open and aborted transactions; version 1 (none) is still read.
inline constexpr uint8_t kPartitionSnapshotVersion = 2;

// One entry per batch that raised the partition's maximum timestamp.
struct TimeIndexEntry {
  int64_t max_timestamp;  // running maximum up to and including this batch
  int64_t base_offset;
  int64_t max_timestamp_offset;  // offset of the record carrying max_timestamp
  bool operator==(const TimeIndexEntry&) const = default;
};

// One entry per batch (or, after thinning, per run of adjacent batches).
struct SizeIndexEntry {
  int64_t base_offset;
  int64_t end_offset;        // exclusive
  int64_t cumulative_bytes;  // bytes of all batches up to and including this one
  bool operator==(const SizeIndexEntry&) const = default;
};

struct ProducerSnapshot {
  int64_t producer_id;
  int16_t epoch;
  std::vector<ProducerBatch> batches;  // oldest first
};

struct AbortedTxnEntry {
  int64_t producer_id;
  int64_t first_offset;
  int64_t last_offset;
  bool operator==(const AbortedTxnEntry&) const = default;
};

struct PartitionSnapshot {
  int64_t covered_end = 0;
  std::vector<TimeIndexEntry> time_index;
  std::vector<SizeIndexEntry> sizes;
  int64_t sizes_cumulative_before = 0;      // cumulative_bytes just before sizes.front()
  std::vector<ProducerSnapshot> producers;  // ordered by producer id
  // Transactions open at covered_end: (producer id, first offset), by producer id.
  std::vector<std::pair<int64_t, int64_t>> open_txns;
  // Aborted transactions whose marker lies below covered_end, by marker offset.
  std::vector<AbortedTxnEntry> aborted_txns;

  std::string encode() const;
  static Result<PartitionSnapshot> decode(const std::string& bytes);
};

// Merges runs of adjacent entries so that at most max_entries remain. A merged time entry keeps
// the run's first base offset and last (largest) timestamp, so a lookup lands at or before the
// exact batch (ListOffsets scans forward from there); a merged size entry spans the run.
void thin_time_index(std::vector<TimeIndexEntry>& v, size_t max_entries);
void thin_size_index(std::vector<SizeIndexEntry>& v, size_t max_entries);

}  // namespace shale::broker
