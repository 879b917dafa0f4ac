#include "storage/block_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "base/clock.h"

namespace shale::storage {
namespace {

Buffer bytes(size_t n) { return Buffer::copy(std::string(n, 'b')); }

TEST(BlockCache, ConcurrentReadersShareOneLoad) {
  BlockCache c(1 << 20, 1000);
  std::atomic<int> loads{0};
  std::vector<std::thread> ts;
  for (int i = 0; i < 8; ++i) {
    ts.emplace_back([&] {
      auto r = c.get({1, 0}, {7, 0, 10}, [&]() -> Result<Buffer> {
        ++loads;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        return bytes(100);
      });
      EXPECT_TRUE(r.ok());
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(loads.load(), 1);
}

TEST(BlockCache, EvictsBlocksNoReaderIsApproachingFirst) {
  BlockCache c(300, 1000);
  auto load = [] { return Result<Buffer>(bytes(100)); };
  // A reader of stream 7 sits at offset 20: block [20,30) is ahead of it, [0,10) behind.
  c.move_reader(7, -1, 20, clock::mono_ms());
  ASSERT_TRUE(c.get({1, 0}, {7, 20, 30}, load).ok());  // wanted, oldest
  ASSERT_TRUE(c.get({1, 1}, {7, 0, 10}, load).ok());   // passed
  ASSERT_TRUE(c.get({1, 2}, {7, 30, 40}, load).ok());  // wanted
  ASSERT_TRUE(c.get({1, 3}, {7, 40, 50}, load).ok());  // needs room
  EXPECT_TRUE(c.contains({1, 0}));                     // kept although least recently used
  EXPECT_FALSE(c.contains({1, 1}));                    // evicted: every reader has passed it
  EXPECT_LE(c.bytes(), 300u);
}

TEST(BlockCache, WhenEveryBlockIsWantedEvictsTheFarthestFromItsReader) {
  // Two staggered readers of stream 7 at offsets 0 and 100; the cache holds three blocks.
  BlockCache c(300, 1000);
  auto load = [] { return Result<Buffer>(bytes(100)); };
  c.move_reader(7, -1, 0, clock::mono_ms());
  c.move_reader(7, -1, 100, clock::mono_ms());
  ASSERT_TRUE(c.get({1, 0}, {7, 10, 20}, load).ok());    // 10 ahead of the trailing reader
  ASSERT_TRUE(c.get({1, 1}, {7, 150, 160}, load).ok());  // 50 ahead of the leading reader
  ASSERT_TRUE(c.get({1, 2}, {7, 110, 120}, load).ok());  // 10 ahead of the leading reader
  // A reader's own fetch must be cached: the farthest block ([150,160)) makes room, although
  // the block at [10,20) is the least recently used.
  ASSERT_TRUE(c.get({1, 3}, {7, 100, 110}, load).ok());
  EXPECT_TRUE(c.contains({1, 0}));
  EXPECT_FALSE(c.contains({1, 1}));
  EXPECT_TRUE(c.contains({1, 2}));
  EXPECT_TRUE(c.contains({1, 3}));
  // Read-ahead far beyond everything cached is not worth displacing nearer blocks for.
  c.insert({1, 4}, {7, 300, 310}, bytes(100));
  EXPECT_FALSE(c.contains({1, 4}));
  EXPECT_EQ(c.bytes(), 300u);
  // Read-ahead nearer than a cached block displaces the farthest one (ties: least recently
  // used first, here [10,20)).
  c.insert({1, 5}, {7, 5, 10}, bytes(100));
  EXPECT_TRUE(c.contains({1, 5}));
  EXPECT_FALSE(c.contains({1, 0}));
  EXPECT_TRUE(c.contains({1, 2}));
  EXPECT_TRUE(c.contains({1, 3}));
  EXPECT_LE(c.bytes(), 300u);
}

TEST(BlockCache, ReadersWaitForClaimedReadAheadBlocks) {
  BlockCache c(300, 1000);
  c.move_reader(7, -1, 0, clock::mono_ms());
  ASSERT_EQ(c.try_claim({1, 0}, {7, 0, 10}, 100), BlockCache::Claim::kClaimed);
  EXPECT_EQ(c.try_claim({1, 0}, {7, 0, 10}, 100), BlockCache::Claim::kPresent);
  std::atomic<int> loads{0};
  std::thread reader([&] {
    auto r = c.get({1, 0}, {7, 0, 10}, [&]() -> Result<Buffer> {
      ++loads;
      return bytes(100);
    });
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->size(), 42u);  // the read-ahead's bytes, not its own load
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  c.finish_load({1, 0}, {7, 0, 10}, bytes(42));
  reader.join();
  EXPECT_EQ(loads.load(), 0);
  EXPECT_TRUE(c.contains({1, 0}));
  // A failed read-ahead GET: the waiting reader loads the block itself.
  ASSERT_EQ(c.try_claim({1, 1}, {7, 10, 20}, 100), BlockCache::Claim::kClaimed);
  std::thread reader2([&] {
    auto r = c.get({1, 1}, {7, 10, 20}, [&]() -> Result<Buffer> {
      ++loads;
      return bytes(100);
    });
    EXPECT_TRUE(r.ok());
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  c.finish_load({1, 1}, {7, 10, 20}, Error::make(Errc::kUnavailable, "503", true));
  reader2.join();
  EXPECT_EQ(loads.load(), 1);  // waited and retried, or came after the failure: one load
  EXPECT_TRUE(c.contains({1, 1}));
}

TEST(BlockCache, ReadAheadIsNotClaimedWhenEveryCachedBlockIsNeededSooner) {
  BlockCache c(200, 1000);
  auto load = [] { return Result<Buffer>(bytes(100)); };
  c.move_reader(7, -1, 0, clock::mono_ms());
  ASSERT_TRUE(c.get({1, 0}, {7, 0, 10}, load).ok());
  ASSERT_TRUE(c.get({1, 1}, {7, 10, 20}, load).ok());
  EXPECT_EQ(c.try_claim({1, 9}, {7, 90, 100}, 100), BlockCache::Claim::kNoRoom);
  // Once the reader has passed [0,10), that block may go, so the claim succeeds.
  c.move_reader(7, 0, 10, clock::mono_ms());
  EXPECT_EQ(c.try_claim({1, 9}, {7, 90, 100}, 100), BlockCache::Claim::kClaimed);
  c.finish_load({1, 9}, {7, 90, 100}, bytes(100));
  EXPECT_TRUE(c.contains({1, 9}));
  EXPECT_FALSE(c.contains({1, 0}));
}

TEST(BlockCache, FailedLoadIsNotCached) {
  BlockCache c(1000, 1000);
  auto r =
      c.get({2, 0}, {1, 0, 1}, [] { return Result<Buffer>(Error::make(Errc::kIoError, "x")); });
  EXPECT_FALSE(r.ok());
  EXPECT_FALSE(c.contains({2, 0}));
}

}  // namespace
}  // namespace shale::storage
