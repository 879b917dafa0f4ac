// The object format shared by stream-set objects (many streams) and stream objects (one
// stream), after AutoMQ's with CRC32C added; the byte layout is in
// docs/formats.md:
//   [data block]...[data block][index block][footer 48 B]
// A data block holds consecutive records of one stream (about object_block_size bytes); the
// index block has one 36-byte entry per data block, sorted by (stream id, start offset), so a
// reader binary-searches it and issues one ranged GET per data block it needs.
// ObjectWriter writes blocks into large uninitialised arenas sized from a hint (the caller knows
// how many bytes it will add), so building an object costs one copy of each payload: no
// zero-filling and no vector regrowth, which dominated uploads of blocks with many small runs.
// Threading: ObjectWriter is single-threaded; the parse functions are pure.
#pragma once

#include <cstdint>
#include <vector>

#include "base/buffer.h"
#include "base/result.h"
#include "storage/record.h"

namespace shale::storage {

constexpr uint8_t kDataBlockMagic = 0x5A;
constexpr size_t kDataBlockHeader = 14;
constexpr size_t kIndexEntrySize = 36;
constexpr size_t kFooterSize = 48;
constexpr uint64_t kObjectMagic = 0x88e241b785f4cff7ull;

struct DataBlockIndex {
  int64_t stream_id = 0;
  int64_t start_offset = 0;
  int64_t end_offset = 0;  // exclusive
  uint32_t record_count = 0;
  uint64_t position = 0;
  uint32_t size = 0;  // including the block header
};

class ObjectWriter {
 public:
  // size_hint: about how many bytes add() will be given (payloads + kRecordHeaderSize each);
  // 0 when unknown. A wrong hint costs an extra arena, never correctness.
  explicit ObjectWriter(uint64_t block_size, uint64_t size_hint = 0)
      : block_size_(block_size), hint_(size_hint) {}
  // Records must arrive sorted by (stream id, base offset), contiguous within a stream.
  void add(int64_t stream_id, int64_t epoch, int64_t base_offset, uint32_t count,
           const Buffer& payload);
  // Seals the object; returns its bytes (data blocks, index, footer).
  BufferChain finish();
  const std::vector<DataBlockIndex>& index() const { return index_; }
  uint64_t size() const { return size_; }

 private:
  void close_block();
  // Makes room for n more bytes in the arena, moving the open block to a new arena if needed.
  void reserve(size_t n);
  // Moves the closed blocks of the current arena into out_ as one Buffer.
  void flush_closed();
  uint64_t block_size_;
  uint64_t hint_;
  BufferChain out_;
  std::shared_ptr<uint8_t[]> arena_;
  size_t arena_cap_ = 0;
  size_t arena_used_ = 0;    // bytes written to the arena (closed blocks + open block)
  size_t closed_start_ = 0;  // first arena byte not yet in out_
  size_t block_start_ = 0;   // arena offset of the open block
  bool in_block_ = false;
  DataBlockIndex cur_index_;
  std::vector<DataBlockIndex> index_;
  uint64_t size_ = 0;
};

// The parsed index of one object.
struct ObjectIndex {
  uint64_t object_size = 0;
  std::vector<DataBlockIndex> blocks;
  // First block of `stream_id` whose end_offset > offset, or blocks.size().
  size_t find(int64_t stream_id, int64_t offset) const;
};

// Bytes to fetch from the end of an object of `object_size` bytes to get footer and (usually)
// the whole index in one GET.
uint64_t index_read_size(uint64_t object_size);
// Parses footer + index from `tail`, the last tail.size() bytes of the object. If the index
// starts before the tail, returns kOutOfRange with *needed = bytes to fetch from the end.
Result<ObjectIndex> parse_object_index(const Buffer& tail, uint64_t object_size, uint64_t* needed);
// Verifies and decodes one data block (payloads share the block's bytes).
Result<std::vector<DecodedRecord>> parse_data_block(const Buffer& block);

}  // namespace shale::storage
