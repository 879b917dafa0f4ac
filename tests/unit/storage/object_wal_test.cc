#include "storage/object_wal.h"

#include <gtest/gtest.h>

#include <future>

#include "objstore/memory_store.h"
#include "test_util.h"

namespace shale::storage {
namespace {

using testing::fail_writes;

ObjectWalOptions opts(int64_t epoch) {
  ObjectWalOptions o;
  o.prefix = "wal";
  o.node_id = 3;
  o.node_epoch = epoch;
  o.batch_interval_ms = 5;
  o.batch_bytes = 64 << 10;
  return o;
}

std::vector<Result<uint64_t>> append_all(ObjectWal& w, int from, int n) {
  std::vector<std::promise<Result<uint64_t>>> ps(n);
  for (int i = 0; i < n; ++i) {
    Status st =
        w.append(Buffer::copy("h"), Buffer::copy(std::string(1000 + i, 'a' + (from + i) % 26)),
                 [&ps, i](Result<uint64_t> r) { ps[i].set_value(r); });
    if (!st.ok()) ps[i].set_value(st.error());
  }
  std::vector<Result<uint64_t>> out;
  for (auto& p : ps) out.push_back(p.get_future().get());
  return out;
}

TEST(ObjectWal, BatchesRecoverInOrder) {
  objstore::MemoryStore mem;
  objstore::FaultInjectingStore store{mem};
  {
    auto w = std::move(ObjectWal::open(opts(1), &store)).value();
    ASSERT_TRUE(w->recover()->empty());
    ASSERT_TRUE(w->reset().ok());
    auto r = append_all(*w, 0, 200);
    for (size_t i = 1; i < r.size(); ++i) {
      ASSERT_TRUE(r[i].ok());
      EXPECT_GT(*r[i], *r[i - 1]);
    }
    EXPECT_GT(w->stats().writes, 1u);    // several objects (64 KiB batches)
    EXPECT_LT(w->stats().writes, 200u);  // but batched
  }
  auto w = std::move(ObjectWal::open(opts(2), &store)).value();
  auto recs = w->recover();
  ASSERT_TRUE(recs.ok());
  ASSERT_EQ(recs->size(), 200u);
  EXPECT_EQ((*recs)[199].body.view(), "h" + std::string(1199, 'a' + 199 % 26));
  ASSERT_TRUE(w->reset().ok());  // recovered objects are deleted
  auto left = objstore::list_sync(store, "wal/3/");
  EXPECT_EQ(left->size(), 1u);  // only the reservation
}

TEST(ObjectWal, NewOwnerFencesTheOldWriter) {
  objstore::MemoryStore mem;
  objstore::FaultInjectingStore store{mem};
  auto old = std::move(ObjectWal::open(opts(1), &store)).value();
  (void)old->recover();
  ASSERT_TRUE(old->reset().ok());
  ASSERT_TRUE(append_all(*old, 0, 3)[2].ok());
  auto taker = std::move(ObjectWal::open(opts(2), &store)).value();  // rewrites the reservation
  auto r = append_all(*old, 3, 3);
  for (auto& x : r) {
    ASSERT_FALSE(x.ok());
    EXPECT_EQ(x.error().code, Errc::kFenced);
  }
  // The new owner's recovery sees the acknowledged records (and possibly the fenced batch,
  // which was never acknowledged).
  auto recs = taker->recover();
  ASSERT_TRUE(recs.ok());
  EXPECT_GE(recs->size(), 3u);
}

TEST(ObjectWal, TrimDeletesCoveredObjects) {
  objstore::MemoryStore mem;
  objstore::FaultInjectingStore store{mem};
  auto w = std::move(ObjectWal::open(opts(1), &store)).value();
  (void)w->recover();
  ASSERT_TRUE(w->reset().ok());
  auto r = append_all(*w, 0, 100);
  size_t before = mem.object_count();
  w->trim(*r.back());
  for (int i = 0; i < 2000 && mem.object_count() > 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_GT(before, 1u);
  EXPECT_EQ(mem.object_count(), 1u);  // the reservation
}

TEST(ObjectWal, FailedPutFailsTheWal) {
  objstore::MemoryStore mem;
  objstore::FaultInjectingStore store{mem};
  auto w = std::move(ObjectWal::open(opts(1), &store)).value();
  (void)w->recover();
  ASSERT_TRUE(w->reset().ok());
  fail_writes(store, true);
  auto r = append_all(*w, 0, 2);
  EXPECT_FALSE(r[0].ok());
  fail_writes(store, false);
  EXPECT_FALSE(append_all(*w, 2, 1)[0].ok());
}

}  // namespace
}  // namespace shale::storage
