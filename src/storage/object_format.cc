#include "storage/object_format.h"

#include <algorithm>
#include <cstring>

#include "base/crc32c.h"
#include "base/endian.h"

namespace shale::storage {

void ObjectWriter::reserve(size_t n) {
  if (arena_ && arena_cap_ - arena_used_ >= n) return;
  size_t open = in_block_ ? arena_used_ - block_start_ : 0;
  flush_closed();
  // Size the arena for what the hint says is still to come (capped, so a huge compaction
  // output does not allocate gigabytes at once), and never below one block.
  constexpr size_t kMaxArena = 64 * 1024 * 1024;
  size_t want = std::max<size_t>(open + n, std::max<size_t>(block_size_ + 64 * 1024, 64 * 1024));
  if (hint_ > 0) want = std::max<size_t>(want, std::min<size_t>(hint_ + 4096, kMaxArena));
  // Uninitialised on purpose: every byte handed out is written before it is read.
  std::shared_ptr<uint8_t[]> fresh(new uint8_t[want]);
  if (open > 0) std::memcpy(fresh.get(), arena_.get() + block_start_, open);
  arena_ = std::move(fresh);
  arena_cap_ = want;
  arena_used_ = open;
  closed_start_ = 0;
  block_start_ = 0;
}

void ObjectWriter::flush_closed() {
  size_t end = in_block_ ? block_start_ : arena_used_;
  if (arena_ && end > closed_start_) {
    const uint8_t* p = arena_.get();
    out_.push_back(
        Buffer(std::shared_ptr<const void>(arena_, p), p + closed_start_, end - closed_start_));
  }
  closed_start_ = end;
}

void ObjectWriter::add(int64_t stream_id, int64_t epoch, int64_t base_offset, uint32_t count,
                       const Buffer& payload) {
  if (in_block_ &&
      (cur_index_.stream_id != stream_id || arena_used_ - block_start_ >= block_size_)) {
    close_block();
  }
  size_t rec = kRecordHeaderSize + payload.size();
  reserve(rec + (in_block_ ? 0 : kDataBlockHeader));
  if (!in_block_) {
    in_block_ = true;
    block_start_ = arena_used_;
    arena_used_ += kDataBlockHeader;
    cur_index_ = DataBlockIndex{stream_id, base_offset, base_offset, 0, size_, 0};
  }
  uint8_t* h = arena_.get() + arena_used_;
  encode_record_header(h, EncodedRecordHeader{stream_id, epoch, base_offset, count,
                                              static_cast<uint32_t>(payload.size())});
  if (!payload.empty()) std::memcpy(h + kRecordHeaderSize, payload.data(), payload.size());
  arena_used_ += rec;
  hint_ = hint_ > rec ? hint_ - rec : 0;
  cur_index_.end_offset = base_offset + count;
  cur_index_.record_count += 1;
}

void ObjectWriter::close_block() {
  uint8_t* h = arena_.get() + block_start_;
  size_t len = arena_used_ - block_start_;
  size_t body = len - kDataBlockHeader;
  h[0] = kDataBlockMagic;
  h[1] = 0;  // flags: reserved for compression
  be::store32(h + 2, cur_index_.record_count);
  be::store32(h + 6, static_cast<uint32_t>(body));
  be::store32(h + 10, crc32c::value(h + kDataBlockHeader, body));
  cur_index_.size = static_cast<uint32_t>(len);
  size_ += len;
  index_.push_back(cur_index_);
  in_block_ = false;
}

BufferChain ObjectWriter::finish() {
  if (in_block_) close_block();
  flush_closed();
  arena_.reset();
  arena_cap_ = arena_used_ = closed_start_ = block_start_ = 0;
  BufferBuilder idx(index_.size() * kIndexEntrySize + kFooterSize);
  for (const auto& e : index_) {
    uint8_t* p = idx.grow(kIndexEntrySize);
    be::store64(p, static_cast<uint64_t>(e.stream_id));
    be::store64(p + 8, static_cast<uint64_t>(e.start_offset));
    be::store32(p + 16, static_cast<uint32_t>(e.end_offset - e.start_offset));
    be::store32(p + 20, e.record_count);
    be::store64(p + 24, e.position);
    be::store32(p + 32, e.size);
  }
  uint64_t index_pos = size_;
  uint32_t index_len = static_cast<uint32_t>(idx.size());
  uint32_t index_crc = crc32c::value(idx.data(), idx.size());
  uint8_t* f = idx.grow(kFooterSize);
  std::fill(f, f + kFooterSize, 0);
  be::store64(f, index_pos);
  be::store32(f + 8, index_len);
  be::store32(f + 12, index_crc);
  be::store64(f + 40, kObjectMagic);
  size_ += idx.size();
  out_.push_back(std::move(idx).freeze());
  BufferChain done = std::move(out_);
  out_ = BufferChain();
  return done;
}

size_t ObjectIndex::find(int64_t stream_id, int64_t offset) const {
  auto it = std::partition_point(blocks.begin(), blocks.end(), [&](const DataBlockIndex& b) {
    return b.stream_id < stream_id || (b.stream_id == stream_id && b.end_offset <= offset);
  });
  return static_cast<size_t>(it - blocks.begin());
}

uint64_t index_read_size(uint64_t object_size) {
  return std::min<uint64_t>(object_size, 8192 + kIndexEntrySize * (object_size / (1 << 20) + 1));
}

Result<ObjectIndex> parse_object_index(const Buffer& tail, uint64_t object_size, uint64_t* needed) {
  if (tail.size() < kFooterSize || tail.size() > object_size) {
    return Error::make(Errc::kCorruption, "object shorter than its footer");
  }
  const uint8_t* f = tail.data() + tail.size() - kFooterSize;
  if (be::load64(f + 40) != kObjectMagic) return Error::make(Errc::kCorruption, "bad object magic");
  uint64_t index_pos = be::load64(f);
  uint32_t index_len = be::load32(f + 8);
  if (index_len % kIndexEntrySize != 0 || index_pos + index_len + kFooterSize != object_size) {
    return Error::make(Errc::kCorruption, "bad object footer");
  }
  uint64_t tail_start = object_size - tail.size();
  if (index_pos < tail_start) {
    if (needed) *needed = object_size - index_pos;
    return Error::make(Errc::kOutOfRange, "index starts before the fetched tail");
  }
  const uint8_t* p = tail.data() + (index_pos - tail_start);
  if (crc32c::value(p, index_len) != be::load32(f + 12)) {
    return Error::make(Errc::kCorruption, "object index checksum mismatch");
  }
  ObjectIndex out;
  out.object_size = object_size;
  out.blocks.reserve(index_len / kIndexEntrySize);
  for (uint32_t i = 0; i < index_len; i += kIndexEntrySize, p += kIndexEntrySize) {
    DataBlockIndex e;
    e.stream_id = static_cast<int64_t>(be::load64(p));
    e.start_offset = static_cast<int64_t>(be::load64(p + 8));
    e.end_offset = e.start_offset + be::load32(p + 16);
    e.record_count = be::load32(p + 20);
    e.position = be::load64(p + 24);
    e.size = be::load32(p + 32);
    if (e.position + e.size > index_pos) return Error::make(Errc::kCorruption, "bad index entry");
    out.blocks.push_back(e);
  }
  return out;
}

Result<std::vector<DecodedRecord>> parse_data_block(const Buffer& block) {
  if (block.size() < kDataBlockHeader || block.data()[0] != kDataBlockMagic) {
    return Error::make(Errc::kCorruption, "bad data block header");
  }
  const uint8_t* h = block.data();
  uint32_t count = be::load32(h + 2);
  uint32_t len = be::load32(h + 6);
  if (len != block.size() - kDataBlockHeader) {
    return Error::make(Errc::kCorruption, "data block length mismatch");
  }
  if (crc32c::value(h + kDataBlockHeader, len) != be::load32(h + 10)) {
    return Error::make(Errc::kCorruption, "data block checksum mismatch");
  }
  std::vector<DecodedRecord> out;
  out.reserve(count);
  Buffer rest = block.slice(kDataBlockHeader, len);
  for (uint32_t i = 0; i < count; ++i) {
    size_t used = 0;
    auto r = decode_record(rest, &used);
    if (!r.ok()) return std::move(r).error();
    out.push_back(std::move(r).value());
    rest = rest.slice(used, rest.size() - used);
  }
  if (!rest.empty()) return Error::make(Errc::kCorruption, "trailing bytes in data block");
  return out;
}

}  // namespace shale::storage
