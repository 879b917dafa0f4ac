#include "storage/record.h"

#include "base/endian.h"

namespace shale::storage {

void encode_record_header(uint8_t* out, const EncodedRecordHeader& h) {
  out[0] = kRecordMagic;
  be::store64(out + 1, static_cast<uint64_t>(h.stream_id));
  be::store64(out + 9, static_cast<uint64_t>(h.epoch));
  be::store64(out + 17, static_cast<uint64_t>(h.base_offset));
  be::store32(out + 25, h.count);
  be::store32(out + 29, h.length);
}

Result<EncodedRecordHeader> decode_record_header(const uint8_t* p, size_t n) {
  if (n < kRecordHeaderSize) return Error::make(Errc::kCorruption, "short stream record header");
  if (p[0] != kRecordMagic) return Error::make(Errc::kCorruption, "bad stream record magic");
  EncodedRecordHeader h;
  h.stream_id = static_cast<int64_t>(be::load64(p + 1));
  h.epoch = static_cast<int64_t>(be::load64(p + 9));
  h.base_offset = static_cast<int64_t>(be::load64(p + 17));
  h.count = be::load32(p + 25);
  h.length = be::load32(p + 29);
  if (h.base_offset < 0 || h.count == 0) {
    return Error::make(Errc::kCorruption, "bad stream record offsets");
  }
  return h;
}

Result<DecodedRecord> decode_record(const Buffer& buf, size_t* used) {
  auto h = decode_record_header(buf.data(), buf.size());
  if (!h.ok()) return std::move(h).error();
  if (buf.size() - kRecordHeaderSize < h->length) {
    return Error::make(Errc::kCorruption, "stream record payload truncated");
  }
  *used = kRecordHeaderSize + h->length;
  return DecodedRecord{*h, buf.slice(kRecordHeaderSize, h->length)};
}

}  // namespace shale::storage
