// The stream record encoding, used unchanged as the WAL record body and inside object data
// blocks (as AutoMQ's; Shale adds no fields). Layout, all big-endian:
//   magic 0x22 (1) | stream id (8) | epoch (8) | base offset (8) | count (4) | length (4) | payload
// Thread-safety: pure functions.
#pragma once

#include <cstdint>

#include "base/buffer.h"
#include "base/result.h"

namespace shale::storage {

constexpr uint8_t kRecordMagic = 0x22;
constexpr size_t kRecordHeaderSize = 33;

struct EncodedRecordHeader {
  int64_t stream_id = 0;
  int64_t epoch = 0;
  int64_t base_offset = 0;
  uint32_t count = 0;
  uint32_t length = 0;
};

// Writes the 33-byte header into out.
void encode_record_header(uint8_t* out, const EncodedRecordHeader& h);
// Parses a header from at least kRecordHeaderSize bytes; kCorruption on a bad magic.
Result<EncodedRecordHeader> decode_record_header(const uint8_t* p, size_t n);

// A decoded record that shares the payload bytes of the buffer it came from.
struct DecodedRecord {
  EncodedRecordHeader h;
  Buffer payload;
};
// Decodes the record at the start of buf (payload sliced, not copied); *used = bytes consumed.
Result<DecodedRecord> decode_record(const Buffer& buf, size_t* used);

}  // namespace shale::storage
