#include "storage/log_cache.h"

#include <gtest/gtest.h>

namespace shale::storage {
namespace {

StreamRecord rec(int64_t base, uint32_t count, size_t n) {
  return StreamRecord{base, count, Buffer::copy(std::string(n, 'x'))};
}

TEST(LogCache, SealsAtThresholdAndServesContiguousRuns) {
  LogCache c(1 << 20, 1000);
  EXPECT_FALSE(c.insert(1, 0, rec(0, 2, 400), 10));
  EXPECT_FALSE(c.insert(2, 0, rec(0, 1, 100), 20));
  EXPECT_TRUE(c.insert(1, 0, rec(2, 2, 400), 30));  // block reached 1000 charged bytes
  c.insert(1, 0, rec(4, 1, 10), 40);
  auto b = c.next_to_upload();
  ASSERT_TRUE(b);
  EXPECT_EQ(b->wal_end, 30u);
  auto hit = c.get(1, 3, 100, 1 << 20);
  ASSERT_EQ(hit.records.size(), 2u);  // [2,4) then [4,5), across blocks
  EXPECT_EQ(hit.first_base, 2);
  EXPECT_EQ(hit.records[1].base_offset, 4);
  auto limited = c.get(1, 0, 100, 1);
  EXPECT_EQ(limited.records.size(), 1u);
  EXPECT_TRUE(c.get(3, 0, 10, 100).records.empty());
}

TEST(LogCache, EvictsOnlyUploadedBlocksFromTheHead) {
  LogCache c(1800, 500);
  c.insert(1, 0, rec(0, 1, 500), 1);
  c.insert(1, 0, rec(1, 1, 500), 2);
  c.insert(1, 0, rec(2, 1, 500), 3);
  EXPECT_GT(c.bytes(), 1600u);
  c.evict();
  EXPECT_EQ(c.get(1, 0, 3, 1 << 20).records.size(), 3u);  // nothing uploaded: nothing evicted
  auto b = c.next_to_upload();
  c.mark_uploaded(b->id);
  EXPECT_EQ(c.unuploaded_bytes(), c.bytes() - b->bytes);
  c.evict();
  auto hit = c.get(1, 0, 3, 1 << 20);
  EXPECT_EQ(hit.first_base, 1);  // the caller reads [0, 1) from objects ("right intersect")
}

}  // namespace
}  // namespace shale::storage
