#include "protocol/record_batch.h"

#include <cstring>
#include <string>

#include "base/crc32c.h"
#include "base/endian.h"
#include "base/varint.h"

namespace shale::protocol {

namespace {

Error corrupt(std::string what) { return Error::make(Errc::kCorruption, std::move(what)); }

// Reads a signed varint length: -1 = null, otherwise the bytes must fit before `end`.
bool read_len(const uint8_t*& p, const uint8_t* end, int32_t* out) {
  const uint8_t* q = varint::get_s32(p, end, out);
  if (q == nullptr || *out < -1 || (*out >= 0 && static_cast<size_t>(end - q) < size_t(*out))) {
    return false;
  }
  p = q;
  return true;
}

std::string_view view(const uint8_t* p, int32_t n) {
  return {reinterpret_cast<const char*>(p), static_cast<size_t>(n)};
}

}  // namespace

BatchHeader decode_batch_header(const uint8_t* p) {
  BatchHeader h;
  h.base_offset = static_cast<int64_t>(be::load64(p));
  h.batch_length = static_cast<int32_t>(be::load32(p + 8));
  h.partition_leader_epoch = static_cast<int32_t>(be::load32(p + 12));
  h.magic = static_cast<int8_t>(p[16]);
  h.crc = be::load32(p + 17);
  h.attributes = static_cast<int16_t>(be::load16(p + 21));
  h.last_offset_delta = static_cast<int32_t>(be::load32(p + 23));
  h.base_timestamp = static_cast<int64_t>(be::load64(p + 27));
  h.max_timestamp = static_cast<int64_t>(be::load64(p + 35));
  h.producer_id = static_cast<int64_t>(be::load64(p + 43));
  h.producer_epoch = static_cast<int16_t>(be::load16(p + 51));
  h.base_sequence = static_cast<int32_t>(be::load32(p + 53));
  h.record_count = static_cast<int32_t>(be::load32(p + 57));
  return h;
}

void encode_batch_header(const BatchHeader& h, uint8_t* p) {
  be::store64(p, static_cast<uint64_t>(h.base_offset));
  be::store32(p + 8, static_cast<uint32_t>(h.batch_length));
  be::store32(p + 12, static_cast<uint32_t>(h.partition_leader_epoch));
  p[16] = static_cast<uint8_t>(h.magic);
  be::store32(p + 17, h.crc);
  be::store16(p + 21, static_cast<uint16_t>(h.attributes));
  be::store32(p + 23, static_cast<uint32_t>(h.last_offset_delta));
  be::store64(p + 27, static_cast<uint64_t>(h.base_timestamp));
  be::store64(p + 35, static_cast<uint64_t>(h.max_timestamp));
  be::store64(p + 43, static_cast<uint64_t>(h.producer_id));
  be::store16(p + 51, static_cast<uint16_t>(h.producer_epoch));
  be::store32(p + 53, static_cast<uint32_t>(h.base_sequence));
  be::store32(p + 57, static_cast<uint32_t>(h.record_count));
}

// ---------------------------------------------------------------------------------------------
// Records

Result<std::optional<RecordView>> RecordIterator::next() {
  if (left_ <= 0) return std::optional<RecordView>();
  int32_t len = 0;
  const uint8_t* q = varint::get_s32(p_, end_, &len);
  if (q == nullptr || len < 0 || static_cast<size_t>(end_ - q) < static_cast<size_t>(len)) {
    return corrupt("record length exceeds the batch");
  }
  const uint8_t* p = q;
  const uint8_t* rend = q + len;
  RecordView r;
  if (p >= rend) return corrupt("truncated record");
  r.attributes = static_cast<int8_t>(*p++);
  p = varint::get_s64(p, rend, &r.timestamp_delta);
  if (p == nullptr) return corrupt("bad record timestamp delta");
  p = varint::get_s32(p, rend, &r.offset_delta);
  if (p == nullptr) return corrupt("bad record offset delta");
  int32_t n = 0;
  if (!read_len(p, rend, &n)) return corrupt("bad record key length");
  if (n >= 0) {
    r.key = view(p, n);
    p += n;
  }
  if (!read_len(p, rend, &n)) return corrupt("bad record value length");
  if (n >= 0) {
    r.value = view(p, n);
    p += n;
  }
  const uint8_t* hq = varint::get_s32(p, rend, &r.header_count);
  if (hq == nullptr || r.header_count < 0) return corrupt("bad record header count");
  r.headers_raw = std::string_view(reinterpret_cast<const char*>(hq), size_t(rend - hq));
  // Walk the headers now so a malformed record is rejected here, not when a consumer of the
  // view happens to look at them; each header takes at least two bytes.
  if (static_cast<size_t>(r.header_count) > r.headers_raw.size() / 2) {
    return corrupt("record header count exceeds the record");
  }
  const uint8_t* hp = hq;
  for (int32_t i = 0; i < r.header_count; ++i) {
    auto h = next_record_header(hp, rend);
    if (!h.ok()) return std::move(h).error();
  }
  if (hp != rend) return corrupt("record length does not match its fields");
  p_ = rend;
  --left_;
  return std::optional<RecordView>(r);
}

Status RecordIterator::finish() const {
  if (left_ > 0) return corrupt("fewer records than recordCount");
  if (p_ != end_) return corrupt("bytes left after the last record");
  return ok_status();
}

Result<RecordHeaderView> next_record_header(const uint8_t*& p, const uint8_t* end) {
  RecordHeaderView h;
  int32_t n = 0;
  if (!read_len(p, end, &n) || n < 0) return corrupt("bad record header key");
  h.key = view(p, n);
  p += n;
  if (!read_len(p, end, &n)) return corrupt("bad record header value");
  if (n >= 0) {
    h.value = view(p, n);
    p += n;
  }
  return h;
}

// ---------------------------------------------------------------------------------------------
// RecordBatch

Result<RecordBatch> RecordBatch::parse(const Buffer& bytes, bool verify_crc) {
  if (bytes.size() < kBatchLogOverhead + 5) return corrupt("record batch shorter than its header");
  // Magic sits at byte 16; check it before the length so an old-format message set reports
  // UNSUPPORTED_FOR_MESSAGE_FORMAT rather than a size error.
  const int8_t magic = static_cast<int8_t>(bytes.data()[16]);
  if (magic != kMagicV2) {
    return Error::make(Errc::kUnsupported,
                       "record batch magic " + std::to_string(magic) + " (only v2 is supported)");
  }
  if (bytes.size() < kBatchHeaderSize) return corrupt("record batch shorter than its header");
  RecordBatch b;
  b.header_ = decode_batch_header(bytes.data());
  const BatchHeader& h = b.header_;
  if (h.batch_length < static_cast<int32_t>(kBatchHeaderSize - kBatchLogOverhead)) {
    return corrupt("batchLength " + std::to_string(h.batch_length) + " below the header size");
  }
  if (h.total_size() > bytes.size()) {
    return corrupt("batchLength " + std::to_string(h.batch_length) + " exceeds the " +
                   std::to_string(bytes.size()) + " bytes available");
  }
  if (h.record_count < 0) return corrupt("negative recordCount");
  if (h.last_offset_delta < 0) return corrupt("negative lastOffsetDelta");
  // Each record takes at least 7 bytes (length, attributes, 3 varints, 2 lengths, count);
  // compressed batches are checked after decompression instead.
  const size_t area = h.total_size() - kBatchHeaderSize;
  if (h.compression() == Compression::kNone && static_cast<size_t>(h.record_count) > area / 7) {
    return corrupt("recordCount exceeds what the batch can hold");
  }
  if (static_cast<uint8_t>(h.compression()) > 4) return corrupt("unknown compression codec");
  b.bytes_ = bytes.slice(0, h.total_size());
  if (verify_crc && b.compute_crc() != h.crc) return corrupt("record batch CRC mismatch");
  return b;
}

uint32_t RecordBatch::compute_crc() const {
  return crc32c::value(bytes_.data() + kBatchAttributesOffset,
                       bytes_.size() - kBatchAttributesOffset);
}

Result<std::pair<Buffer, const uint8_t*>> RecordBatch::record_payload(
    size_t max_decompressed) const {
  Buffer area = records_area();
  if (header_.compression() == Compression::kNone) {
    return std::make_pair(area, area.data());
  }
  auto out = decompress(header_.compression(), area.data(), area.size(), max_decompressed);
  if (!out.ok()) return std::move(out).error();
  return std::make_pair(*out, out->data());
}

Status RecordBatch::validate(OffsetCheck check, size_t max_decompressed) const {
  return for_each_record([](const RecordView&) {}, check, max_decompressed);
}

BatchHeader RecordBatch::rewrite_header(const Rewrite& rw, uint8_t* header61) const {
  BatchHeader h = header_;
  bool crc_dirty = false;
  if (rw.base_offset) h.base_offset = *rw.base_offset;
  if (rw.partition_leader_epoch) h.partition_leader_epoch = *rw.partition_leader_epoch;
  if (rw.log_append_time) {
    const auto attrs = static_cast<int16_t>(h.attributes | 0x08);
    crc_dirty = attrs != h.attributes || h.max_timestamp != *rw.log_append_time;
    h.attributes = attrs;
    h.max_timestamp = *rw.log_append_time;
  }
  encode_batch_header(h, header61);
  if (crc_dirty) {
    uint32_t crc =
        crc32c::value(header61 + kBatchAttributesOffset, kBatchHeaderSize - kBatchAttributesOffset);
    crc = crc32c::extend(crc, bytes_.data() + kBatchHeaderSize, bytes_.size() - kBatchHeaderSize);
    h.crc = crc;
    be::store32(header61 + kBatchCrcOffset, crc);
  }
  return h;
}

Result<RecordBatch> RecordBatch::recompressed(Compression to, size_t max_decompressed) const {
  auto payload = record_payload(max_decompressed);
  if (!payload.ok()) return std::move(payload).error();
  const Buffer& plain = payload->first;
  auto packed = compress(to, plain.data(), plain.size());
  if (!packed.ok()) return std::move(packed).error();
  std::vector<uint8_t> out(kBatchHeaderSize + packed->size());
  BatchHeader h = header_;
  h.attributes = static_cast<int16_t>((h.attributes & ~0x07) | static_cast<int16_t>(to));
  h.batch_length = static_cast<int32_t>(out.size() - kBatchLogOverhead);
  encode_batch_header(h, out.data());
  std::memcpy(out.data() + kBatchHeaderSize, packed->data(), packed->size());
  be::store32(out.data() + kBatchCrcOffset, crc32c::value(out.data() + kBatchAttributesOffset,
                                                          out.size() - kBatchAttributesOffset));
  return RecordBatch::parse(Buffer::take(std::move(out)), true);
}

BufferChain RecordBatch::rewrite(const Rewrite& rw) const {
  BufferBuilder hb(kBatchHeaderSize);
  rewrite_header(rw, hb.grow(kBatchHeaderSize));
  BufferChain out;
  out.push_back(std::move(hb).freeze());
  out.push_back(bytes_.slice(kBatchHeaderSize, bytes_.size()));
  return out;
}

// ---------------------------------------------------------------------------------------------
// BatchReader

Result<std::optional<RecordBatch>> BatchReader::next() {
  const size_t left = frame_.size() - pos_;
  if (left == 0) return std::optional<RecordBatch>();
  if (partial_ok_) {
    if (left < kBatchLogOverhead) return std::optional<RecordBatch>();
    const auto len = static_cast<int32_t>(be::load32(frame_.data() + pos_ + 8));
    if (len >= 0 && kBatchLogOverhead + static_cast<size_t>(len) > left) {
      return std::optional<RecordBatch>();
    }
  }
  auto b = RecordBatch::parse(frame_.slice(pos_, left), verify_crc_);
  if (!b.ok()) return std::move(b).error();
  pos_ += b->bytes().size();
  return std::optional<RecordBatch>(std::move(b).value());
}

ErrorCode batch_error_code(const Error& e) {
  return e.code == Errc::kUnsupported ? ErrorCode::kUnsupportedForMessageFormat
                                      : ErrorCode::kCorruptMessage;
}

// ---------------------------------------------------------------------------------------------
// RecordBatchBuilder

namespace {
void put_varint(std::vector<uint8_t>& v, int64_t x) {
  uint8_t tmp[varint::kMaxVarint64];
  uint8_t* e = varint::put_s64(tmp, x);
  v.insert(v.end(), tmp, e);
}
void put_bytes(std::vector<uint8_t>& v, std::optional<std::string_view> s) {
  if (!s) {
    put_varint(v, -1);
    return;
  }
  put_varint(v, static_cast<int64_t>(s->size()));
  v.insert(v.end(), s->begin(), s->end());
}
}  // namespace

RecordBatchBuilder& RecordBatchBuilder::add(int64_t timestamp, std::optional<std::string_view> key,
                                            std::optional<std::string_view> value,
                                            const std::vector<Header>& headers) {
  const int64_t first_ts = timestamps_.empty() ? timestamp : timestamps_.front();
  std::vector<uint8_t> body;
  body.push_back(0);  // attributes (unused in v2)
  put_varint(body, timestamp - first_ts);
  put_varint(body, count_);
  put_bytes(body, key);
  put_bytes(body, value);
  put_varint(body, static_cast<int64_t>(headers.size()));
  for (const auto& h : headers) {
    put_bytes(body, std::string_view(h.key));
    put_bytes(body, h.value ? std::optional<std::string_view>(*h.value) : std::nullopt);
  }
  put_varint(records_, static_cast<int64_t>(body.size()));
  records_.insert(records_.end(), body.begin(), body.end());
  timestamps_.push_back(timestamp);
  ++count_;
  return *this;
}

Buffer RecordBatchBuilder::build() const {
  BatchHeader h = header_;
  h.magic = kMagicV2;
  h.record_count = count_;
  h.last_offset_delta = count_ > 0 ? count_ - 1 : 0;
  h.base_timestamp = timestamps_.empty() ? -1 : timestamps_.front();
  int64_t max_ts = h.base_timestamp;
  for (int64_t t : timestamps_) max_ts = std::max(max_ts, t);
  h.max_timestamp = max_ts;
  h.batch_length = static_cast<int32_t>(kBatchHeaderSize - kBatchLogOverhead + records_.size());
  BufferBuilder out(kBatchHeaderSize + records_.size());
  uint8_t* p = out.grow(kBatchHeaderSize);
  out.append(records_.data(), records_.size());
  p = out.data();
  encode_batch_header(h, p);
  const uint32_t crc =
      crc32c::value(p + kBatchAttributesOffset, out.size() - kBatchAttributesOffset);
  be::store32(p + kBatchCrcOffset, crc);
  return std::move(out).freeze();
}

void RecordBatchBuilder::clear() {
  records_.clear();
  timestamps_.clear();
  count_ = 0;
}

}  // namespace shale::protocol
