#include <gtest/gtest.h>

#include "objstore/fault_injecting_store.h"
#include "objstore/memory_store.h"
#include "test_util.h"

namespace shale::objstore {
namespace {

using testing_util::chain;

TEST(FaultInjectingStore, FailsTheNextNCallsThenPasses) {
  MemoryStore mem;
  FaultInjectingStore fs(mem);
  fs.fail_next(Op::kPut, 2);
  for (int i = 0; i < 2; ++i) {
    Status s = put_sync(fs, "k", chain("v"));
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().code, Errc::kUnavailable);
    EXPECT_TRUE(s.error().retryable);
  }
  EXPECT_EQ(mem.object_count(), 0u);  // failed calls never reached the store
  ASSERT_TRUE(put_sync(fs, "k", chain("v")).ok());
  EXPECT_EQ(fs.calls(Op::kPut), 3u);
  EXPECT_EQ(fs.injected(), 2u);

  fs.fail_next(Op::kGet, 1, Error::make(Errc::kIoError, "boom"));
  EXPECT_EQ(get_sync(fs, "k").error().message, "boom");
  EXPECT_EQ(get_sync(fs, "k")->view(), "v");
}

TEST(FaultInjectingStore, LostResponseAppliesTheWrite) {
  MemoryStore mem;
  FaultInjectingStore fs(mem);
  fs.lose_response_next(Op::kPut, 1);
  Status s = put_sync(fs, "k", chain("v"));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, Errc::kTimeout);
  EXPECT_EQ(get_sync(mem, "k")->view(), "v");

  fs.lose_response_next(Op::kRemove, 1);
  EXPECT_FALSE(remove_sync(fs, {"k"}).ok());
  EXPECT_EQ(mem.object_count(), 0u);
}

TEST(FaultInjectingStore, TornPutAndGet) {
  MemoryStore mem;
  FaultInjectingStore fs(mem);
  fs.tear_next(Op::kPut, 1);
  EXPECT_FALSE(put_sync(fs, "k", chain("12345678")).ok());
  EXPECT_EQ(get_sync(mem, "k")->view(), "1234");  // half an object, as a crash would leave
  ASSERT_TRUE(put_sync(fs, "k", chain("12345678")).ok());
  fs.tear_next(Op::kGet, 1);
  auto r = get_sync(fs, "k");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->view(), "1234");
  EXPECT_EQ(get_sync(fs, "k")->view(), "12345678");
}

TEST(FaultInjectingStore, RandomFailuresAreSeededAndRoughlyAtRate) {
  MemoryStore mem;
  ASSERT_TRUE(put_sync(mem, "k", chain("v")).ok());
  auto run = [&](uint64_t seed) {
    FaultInjectingStore fs(mem);
    fs.fail_randomly(Op::kGet, 0.25, seed);
    std::string pattern;
    for (int i = 0; i < 400; ++i) pattern += get_sync(fs, "k").ok() ? '.' : 'x';
    return pattern;
  };
  std::string a = run(42), b = run(42);
  EXPECT_EQ(a, b);  // reproducible
  auto fails = std::count(a.begin(), a.end(), 'x');
  EXPECT_GT(fails, 40);
  EXPECT_LT(fails, 160);
}

TEST(FaultInjectingStore, DelayedCallsCompleteOnTimerThread) {
  MemoryStore mem;
  FaultInjectingStore fs(mem);
  fs.set_delay(Op::kPut, std::chrono::milliseconds(20));
  std::promise<std::thread::id> p;
  fs.put("k", chain("v"), [&p](Status s) {
    EXPECT_TRUE(s.ok());
    p.set_value(std::this_thread::get_id());
  });
  EXPECT_NE(p.get_future().get(), std::this_thread::get_id());
  EXPECT_EQ(mem.object_count(), 1u);
  fs.clear();
  ASSERT_TRUE(put_sync(fs, "k2", chain("v")).ok());
}

TEST(FaultInjectingStore, PendingDelayedCallsRunAtDestruction) {
  MemoryStore mem;
  std::atomic<int> done{0};
  {
    FaultInjectingStore fs(mem);
    fs.set_delay(Op::kList, std::chrono::milliseconds(60000));
    for (int i = 0; i < 3; ++i) fs.list("", [&](auto) { ++done; });
  }
  EXPECT_EQ(done.load(), 3);
}

TEST(FaultInjectingStore, MultipartOperationsCanFail) {
  MemoryStore mem;
  FaultInjectingStore fs(mem);
  fs.fail_next(Op::kCreateMultipart, 1);
  EXPECT_FALSE(testing_util::create_multipart_sync(fs, "m").ok());
  auto up = testing_util::create_multipart_sync(fs, "m");
  ASSERT_TRUE(up.ok());
  fs.fail_next(Op::kUploadPart, 1);
  EXPECT_FALSE(testing_util::part_sync(**up, 1, chain("ab")).ok());
  ASSERT_TRUE(testing_util::part_sync(**up, 1, chain("ab")).ok());
  fs.fail_next(Op::kComplete, 1);
  EXPECT_FALSE(testing_util::complete_sync(**up).ok());
  EXPECT_EQ(mem.object_count(), 0u);
  ASSERT_TRUE(testing_util::complete_sync(**up).ok());
  EXPECT_EQ(get_sync(fs, "m")->view(), "ab");
  EXPECT_EQ(fs.calls(Op::kUploadPart), 2u);
  EXPECT_EQ(fs.stats().puts, mem.stats().puts);
}

}  // namespace
}  // namespace shale::objstore
