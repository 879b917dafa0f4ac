// Kafka record batches, magic v2 (the only format Shale accepts): header parsing and
// validation, zero-copy record iteration, offset/epoch/timestamp rewriting and a builder.
//
// Layout (big-endian; offsets in bytes):
//   0 baseOffset i64 | 8 batchLength i32 | 12 partitionLeaderEpoch i32 | 16 magic i8 |
//   17 crc u32 | 21 attributes i16 | 23 lastOffsetDelta i32 | 27 baseTimestamp i64 |
//   35 maxTimestamp i64 | 43 producerId i64 | 51 producerEpoch i16 | 53 baseSequence i32 |
//   57 recordCount i32 | 61 records...
// batchLength counts the bytes after itself (total size = 12 + batchLength). The CRC-32C
// covers attributes..end, so base offset and leader epoch can be rewritten without it.
//
// Errors: wrong magic → Errc::kUnsupported (Kafka UNSUPPORTED_FOR_MESSAGE_FORMAT); bad CRC,
// inconsistent sizes or counts → Errc::kCorruption (Kafka CORRUPT_MESSAGE). batch_error_code()
// does that mapping in one place.
//
// Ownership: RecordBatch holds a Buffer slice of the bytes it was parsed from (no copies);
// Record views point into that slice (or into a decompressed buffer the iterator owns) and are
// valid while it lives. All types are plain values; use from one thread at a time.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "base/buffer.h"
#include "base/result.h"
#include "protocol/compression.h"
#include "protocol/errors.h"

namespace shale::protocol {

constexpr size_t kBatchHeaderSize = 61;
constexpr size_t kBatchLogOverhead = 12;  // baseOffset + batchLength
constexpr size_t kBatchCrcOffset = 17;
constexpr size_t kBatchAttributesOffset = 21;
constexpr int8_t kMagicV2 = 2;

enum class TimestampType : uint8_t { kCreateTime = 0, kLogAppendTime = 1 };

struct BatchHeader {
  int64_t base_offset = 0;
  int32_t batch_length = 0;
  int32_t partition_leader_epoch = -1;
  int8_t magic = kMagicV2;
  uint32_t crc = 0;
  int16_t attributes = 0;
  int32_t last_offset_delta = 0;
  int64_t base_timestamp = 0;
  int64_t max_timestamp = 0;
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
  int32_t base_sequence = -1;
  int32_t record_count = 0;

  Compression compression() const { return static_cast<Compression>(attributes & 0x07); }
  TimestampType timestamp_type() const {
    return (attributes & 0x08) != 0 ? TimestampType::kLogAppendTime : TimestampType::kCreateTime;
  }
  bool is_transactional() const { return (attributes & 0x10) != 0; }
  bool is_control() const { return (attributes & 0x20) != 0; }
  bool has_delete_horizon() const { return (attributes & 0x40) != 0; }
  int64_t last_offset() const { return base_offset + last_offset_delta; }
  size_t total_size() const { return kBatchLogOverhead + static_cast<size_t>(batch_length); }
  bool operator==(const BatchHeader&) const = default;
};

// Decodes the 61 header bytes at p (no validation).
BatchHeader decode_batch_header(const uint8_t* p);
// Encodes h into 61 bytes at p, exactly as stored (the crc field is written as given).
void encode_batch_header(const BatchHeader& h, uint8_t* p);

struct RecordHeaderView {
  std::string_view key;
  std::optional<std::string_view> value;
};

// One record, viewing the bytes it was decoded from.
struct RecordView {
  int8_t attributes = 0;
  int64_t timestamp_delta = 0;
  int32_t offset_delta = 0;
  std::optional<std::string_view> key;
  std::optional<std::string_view> value;
  int32_t header_count = 0;
  // The encoded headers; iterate with for_each_header().
  std::string_view headers_raw;
  // Calls f(RecordHeaderView) for each header; fails on malformed headers.
  template <typename F>
  Status for_each_header(F&& f) const;
};

// Iterates the records of an uncompressed record area (the bytes after the 61-byte header, or
// a decompressed payload). Every read is bounds-checked.
class RecordIterator {
 public:
  RecordIterator(const uint8_t* data, size_t size, int32_t count)
      : p_(data), end_(data + size), left_(count) {}
  // Next record, std::nullopt at the end, or an error for malformed bytes. After the last
  // record, finish() checks that no bytes remain.
  Result<std::optional<RecordView>> next();
  Status finish() const;

 private:
  const uint8_t* p_;
  const uint8_t* end_;
  int32_t left_;
};

// Decodes headers from RecordView::headers_raw (used by for_each_header).
Result<RecordHeaderView> next_record_header(const uint8_t*& p, const uint8_t* end);

template <typename F>
Status RecordView::for_each_header(F&& f) const {
  const auto* p = reinterpret_cast<const uint8_t*>(headers_raw.data());
  const uint8_t* end = p + headers_raw.size();
  for (int32_t i = 0; i < header_count; ++i) {
    auto h = next_record_header(p, end);
    if (!h.ok()) return std::move(h).error();
    f(*h);
  }
  return ok_status();
}

// How strictly validate() checks offset deltas.
enum class OffsetCheck {
  // Produce path: deltas are exactly 0..count-1 and lastOffsetDelta == count-1.
  kProduce,
  // Stored/fetched batches (compaction leaves gaps): deltas strictly increase and stay
  // <= lastOffsetDelta.
  kMonotonic,
};

class RecordBatch {
 public:
  // Parses one batch at the start of `bytes` and checks magic, sizes and (optionally) the CRC.
  // The batch may be followed by more bytes (see BatchReader for frames of several batches).
  static Result<RecordBatch> parse(const Buffer& bytes, bool verify_crc = true);

  const BatchHeader& header() const { return header_; }
  // The whole batch (header + records), sharing the parsed buffer.
  const Buffer& bytes() const { return bytes_; }
  // The record area (compressed when compression() != kNone).
  Buffer records_area() const { return bytes_.slice(kBatchHeaderSize, bytes_.size()); }

  // CRC-32C of attributes..end as computed from the bytes.
  uint32_t compute_crc() const;

  // Iterates every record (decompressing into `scratch` when compressed; `scratch` must stay
  // alive while the views are used) and checks record framing, the record count and offset
  // deltas. Decompressed output is capped at `max_decompressed` bytes.
  Status validate(OffsetCheck check, size_t max_decompressed = 64u << 20) const;
  // Calls f(const RecordView&) for every record. Same checks as validate().
  template <typename F>
  Status for_each_record(F&& f, OffsetCheck check = OffsetCheck::kMonotonic,
                         size_t max_decompressed = 64u << 20) const;

  // Rewrites of the header fields a broker assigns. The records are never copied: the result
  // is [new 61-byte header, original record area]. The CRC is recomputed only when a field it
  // covers (attributes, max timestamp) changes.
  struct Rewrite {
    std::optional<int64_t> base_offset;
    std::optional<int32_t> partition_leader_epoch;
    // Switches the batch to LogAppendTime with this max timestamp.
    std::optional<int64_t> log_append_time;
  };
  BufferChain rewrite(const Rewrite& rw) const;
  // The same, applied to a writable copy of the batch's 61-byte header (the record area is
  // read, not written, to recompute the CRC when needed). Returns the new header.
  BatchHeader rewrite_header(const Rewrite& rw, uint8_t* header61) const;

  // A copy of this batch whose records are compressed with `to` (kNone: uncompressed), for a
  // topic whose compression.type differs from the producer's. Every header field but the codec
  // bits, the length and the CRC is kept. Decompressed input is capped at `max_decompressed`.
  Result<RecordBatch> recompressed(Compression to, size_t max_decompressed = 64u << 20) const;

 private:
  Result<std::pair<Buffer, const uint8_t*>> record_payload(size_t max_decompressed) const;

  BatchHeader header_;
  Buffer bytes_;
};

// Iterates the batches of a frame (Produce records field, Fetch records, a WAL entry).
class BatchReader {
 public:
  // allow_partial_tail: a truncated final batch ends iteration instead of failing (Fetch
  // responses may end with one; Produce requests may not).
  explicit BatchReader(Buffer frame, bool allow_partial_tail = false, bool verify_crc = true)
      : frame_(std::move(frame)), partial_ok_(allow_partial_tail), verify_crc_(verify_crc) {}
  // Next batch, std::nullopt at the end.
  Result<std::optional<RecordBatch>> next();
  size_t position() const { return pos_; }

 private:
  Buffer frame_;
  size_t pos_ = 0;
  bool partial_ok_;
  bool verify_crc_;
};

// Kafka error code for a batch parse/validate error (kUnsupported → magic, else corrupt).
ErrorCode batch_error_code(const Error& e);

// Builds an uncompressed v2 batch (tests, tools, control records).
class RecordBatchBuilder {
 public:
  struct Header {
    std::string key;
    std::optional<std::string> value;
  };
  RecordBatchBuilder& base_offset(int64_t v) {
    header_.base_offset = v;
    return *this;
  }
  RecordBatchBuilder& partition_leader_epoch(int32_t v) {
    header_.partition_leader_epoch = v;
    return *this;
  }
  RecordBatchBuilder& producer(int64_t id, int16_t epoch, int32_t base_sequence) {
    header_.producer_id = id;
    header_.producer_epoch = epoch;
    header_.base_sequence = base_sequence;
    return *this;
  }
  RecordBatchBuilder& transactional(bool v) { return flag(0x10, v); }
  RecordBatchBuilder& control(bool v) { return flag(0x20, v); }
  RecordBatchBuilder& log_append_time(bool v) { return flag(0x08, v); }
  // Appends a record with offset delta = number of records so far.
  RecordBatchBuilder& add(int64_t timestamp, std::optional<std::string_view> key,
                          std::optional<std::string_view> value,
                          const std::vector<Header>& headers = {});
  size_t record_count() const { return static_cast<size_t>(count_); }
  // The finished batch (CRC computed). The builder may be reused after clear().
  Buffer build() const;
  void clear();

 private:
  RecordBatchBuilder& flag(int16_t bit, bool v) {
    header_.attributes =
        static_cast<int16_t>(v ? (header_.attributes | bit) : (header_.attributes & ~bit));
    return *this;
  }
  BatchHeader header_;
  std::vector<uint8_t> records_;
  std::vector<int64_t> timestamps_;
  int32_t count_ = 0;
};

template <typename F>
Status RecordBatch::for_each_record(F&& f, OffsetCheck check, size_t max_decompressed) const {
  auto payload = record_payload(max_decompressed);
  if (!payload.ok()) return std::move(payload).error();
  const Buffer& owner = payload->first;
  RecordIterator it(owner.data(), owner.size(), header_.record_count);
  int64_t prev = -1;
  while (true) {
    auto r = it.next();
    if (!r.ok()) return std::move(r).error();
    if (!r->has_value()) break;
    const RecordView& rec = **r;
    const int64_t d = rec.offset_delta;
    const bool bad = check == OffsetCheck::kProduce ? d != prev + 1
                                                    : (d <= prev || d > header_.last_offset_delta);
    if (bad) return Error::make(Errc::kCorruption, "record offset delta out of sequence");
    prev = d;
    f(rec);
  }
  SHALE_TRY(it.finish());
  if (check == OffsetCheck::kProduce && prev != header_.last_offset_delta) {
    return Error::make(Errc::kCorruption, "lastOffsetDelta does not match the records");
  }
  return ok_status();
}

}  // namespace shale::protocol
