#include "storage/object_format.h"

#include <gtest/gtest.h>

namespace shale::storage {
namespace {

Buffer bytes(int seed, size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(seed * 31 + i);
  return Buffer::copy(s);
}

TEST(ObjectFormat, RoundTripManyStreamsAndBlocks) {
  ObjectWriter w(4096);
  for (int64_t s = 1; s <= 3; ++s) {
    for (int64_t off = 0; off < 100; off += 5) {
      w.add(s, 7, off, 5, bytes(static_cast<int>(s * 1000 + off), 300));
    }
  }
  Buffer obj = w.finish().flatten();
  ASSERT_EQ(obj.size(), w.size());
  uint64_t need = 0;
  Buffer tail = obj.slice(obj.size() - index_read_size(obj.size()), obj.size());
  auto idx = parse_object_index(tail, obj.size(), &need);
  ASSERT_TRUE(idx.ok()) << idx.error().to_string();
  ASSERT_GT(idx->blocks.size(), 3u);
  // Each stream's blocks tile [0, 100).
  for (int64_t s = 1; s <= 3; ++s) {
    int64_t next = 0;
    for (auto& b : idx->blocks) {
      if (b.stream_id != s) continue;
      EXPECT_EQ(b.start_offset, next);
      next = b.end_offset;
    }
    EXPECT_EQ(next, 100);
  }
  size_t i = idx->find(2, 42);
  ASSERT_LT(i, idx->blocks.size());
  const auto& b = idx->blocks[i];
  EXPECT_EQ(b.stream_id, 2);
  EXPECT_LE(b.start_offset, 42);
  EXPECT_GT(b.end_offset, 42);
  auto recs = parse_data_block(obj.slice(b.position, b.size));
  ASSERT_TRUE(recs.ok());
  ASSERT_EQ(recs->size(), b.record_count);
  EXPECT_EQ((*recs)[0].h.base_offset, b.start_offset);
  EXPECT_EQ((*recs)[0].h.epoch, 7);
  EXPECT_EQ((*recs)[0].payload.view(), bytes(static_cast<int>(2000 + b.start_offset), 300).view());
  EXPECT_EQ(idx->find(2, 100), idx->find(3, 0));
  EXPECT_EQ(idx->find(9, 0), idx->blocks.size());
}

// A wrong size hint must not change the bytes: too small forces arena switches in the middle
// of open blocks, too large leaves most of the arena unused.
TEST(ObjectFormat, SizeHintDoesNotChangeTheObject) {
  auto build = [](uint64_t hint) {
    ObjectWriter w(4096, hint);
    for (int64_t s = 1; s <= 5; ++s) {
      for (int64_t off = 0; off < 60; off += 3) {
        w.add(s, 2, off, 3, bytes(static_cast<int>(s * 77 + off), 500 + (off * 37) % 3000));
      }
      if (s == 3) w.add(s, 2, 60, 1, Buffer());  // an empty payload is a valid record
    }
    BufferChain c = w.finish();
    EXPECT_EQ(c.size(), w.size());
    return std::string(c.flatten().view());
  };
  std::string exact = build(0);
  EXPECT_EQ(build(1), exact);
  EXPECT_EQ(build(100), exact);
  EXPECT_EQ(build(1 << 24), exact);
  Buffer obj = Buffer::copy(exact);
  auto idx = parse_object_index(obj, obj.size(), nullptr);
  ASSERT_TRUE(idx.ok()) << idx.error().to_string();
  size_t records = 0;
  for (auto& b : idx->blocks) {
    auto recs = parse_data_block(obj.slice(b.position, b.size));
    ASSERT_TRUE(recs.ok()) << recs.error().to_string();
    for (auto& r : *recs) {
      if (r.payload.empty()) continue;
      EXPECT_EQ(r.payload.view(), bytes(static_cast<int>(r.h.stream_id * 77 + r.h.base_offset),
                                        500 + (r.h.base_offset * 37) % 3000)
                                      .view());
    }
    records += recs->size();
  }
  EXPECT_EQ(records, 5u * 20 + 1);
}

TEST(ObjectFormat, SmallTailNeedsSecondRead) {
  ObjectWriter w(64);
  for (int64_t off = 0; off < 2000; ++off) w.add(1, 0, off, 1, bytes(1, 10));
  Buffer obj = w.finish().flatten();
  uint64_t need = 0;
  auto r = parse_object_index(obj.slice(obj.size() - 100, 100), obj.size(), &need);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::kOutOfRange);
  auto r2 = parse_object_index(obj.slice(obj.size() - need, need), obj.size(), nullptr);
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ(r2->blocks.size(), w.index().size());
}

TEST(ObjectFormat, DetectsCorruption) {
  ObjectWriter w(1024);
  for (int64_t off = 0; off < 10; ++off) w.add(1, 0, off, 1, bytes(2, 200));
  Buffer obj = w.finish().flatten();
  std::string damaged(obj.view());
  damaged[20] ^= 1;  // inside the first data block
  auto idx = parse_object_index(obj, obj.size(), nullptr);
  ASSERT_TRUE(idx.ok());
  Buffer bad = Buffer::copy(damaged);
  const auto& b = idx->blocks[0];
  EXPECT_EQ(parse_data_block(bad.slice(b.position, b.size)).error().code, Errc::kCorruption);
  std::string bad_footer(obj.view());
  bad_footer[bad_footer.size() - 1] ^= 1;
  EXPECT_FALSE(parse_object_index(Buffer::copy(bad_footer), obj.size(), nullptr).ok());
  std::string bad_index(obj.view());
  bad_index[idx->blocks.back().position + idx->blocks.back().size + 3] ^= 1;
  EXPECT_EQ(parse_object_index(Buffer::copy(bad_index), obj.size(), nullptr).error().code,
            Errc::kCorruption);
}

}  // namespace
}  // namespace shale::storage
