#include "storage/file_wal.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "fault_fs.h"
#include "test_util.h"

namespace shale::storage {
namespace {

using testing::FaultFs;
using testing::TempDir;

FileWalOptions opts(const std::string& path, uint64_t capacity = 1 << 20,
                    FileSystem* fs = nullptr) {
  FileWalOptions o;
  o.path = path;
  o.capacity = capacity;
  o.max_write = 16 << 10;
  o.fs = fs;
  return o;
}

Buffer payload(int i, size_t n) {
  std::string s(n, '\0');
  for (size_t k = 0; k < n; ++k) s[k] = static_cast<char>('a' + (i * 7 + k) % 26);
  return Buffer::copy(s);
}

// Appends records and waits for all callbacks; returns the results in callback order.
struct Appender {
  std::mutex mu;
  std::vector<Result<uint64_t>> results;
  std::vector<int> order;
  std::condition_variable cv;
  size_t issued = 0;
  Status append(Wal& w, int i, size_t n) {
    Status st = w.append(Buffer::copy("h"), payload(i, n), [this, i](Result<uint64_t> r) {
      std::lock_guard lk(mu);
      results.push_back(std::move(r));
      order.push_back(i);
      cv.notify_all();
    });
    if (st.ok()) ++issued;
    return st;
  }
  void wait() {
    std::unique_lock lk(mu);
    cv.wait(lk, [&] { return results.size() == issued; });
  }
};

std::unique_ptr<FileWal> open_ready(const FileWalOptions& o) {
  auto w = FileWal::open(o);
  EXPECT_TRUE(w.ok()) << (w.ok() ? "" : w.error().to_string());
  auto r = (*w)->recover();
  EXPECT_TRUE(r.ok());
  EXPECT_TRUE((*w)->reset().ok());
  return std::move(w).value();
}

TEST(FileWal, AppendsCompleteInOrderAndRecover) {
  TempDir d;
  std::vector<uint64_t> ends;
  {
    auto w = open_ready(opts(d.file("wal")));
    Appender a;
    for (int i = 0; i < 200; ++i) ASSERT_TRUE(a.append(*w, i, 100 + i * 13).ok());
    a.wait();
    for (size_t i = 0; i < a.order.size(); ++i) {
      EXPECT_EQ(a.order[i], static_cast<int>(i));
      if (!a.results[i].ok()) {
        ADD_FAILURE() << "append failed";
        break;
      }
      if (i > 0) {
        EXPECT_GT(*a.results[i], *a.results[i - 1]);
      }
      ends.push_back(*a.results[i]);
    }
    EXPECT_GE(w->stats().writes, 1u);
  }
  auto w = FileWal::open(opts(d.file("wal")));
  ASSERT_TRUE(w.ok());
  auto recs = (*w)->recover();
  ASSERT_TRUE(recs.ok());
  ASSERT_EQ(recs->size(), 200u);
  ASSERT_EQ(ends.size(), 200u);
  for (int i = 0; i < 200; ++i) {
    Buffer want = payload(i, 100 + i * 13);
    EXPECT_EQ((*recs)[i].end, ends[i]);
    EXPECT_EQ((*recs)[i].body.view(), "h" + std::string(want.view()));
  }
}

TEST(FileWal, DirectIoAppendsRecover) {
  TempDir d;
  auto o = opts(d.file("wal"));
  o.direct_io = true;  // falls back to buffered where the file system refuses O_DIRECT
  {
    auto w = open_ready(o);
    Appender a;
    for (int i = 0; i < 30; ++i) ASSERT_TRUE(a.append(*w, i, 777 * (i % 5) + 1).ok());
    a.wait();
    for (auto& r : a.results) ASSERT_TRUE(r.ok());
  }
  auto w = FileWal::open(o);
  auto recs = (*w)->recover();
  ASSERT_TRUE(recs.ok());
  ASSERT_EQ(recs->size(), 30u);
  EXPECT_EQ((*recs)[29].body.view().substr(1), payload(29, 777 * 4 + 1).view());
}

TEST(FileWal, TrimIsDurableAndRecoveryStartsThere) {
  TempDir d;
  {
    auto w = open_ready(opts(d.file("wal")));
    Appender a;
    for (int i = 0; i < 50; ++i) ASSERT_TRUE(a.append(*w, i, 500).ok());
    a.wait();
    w->trim(*a.results[29]);
    w->shutdown();
  }
  auto w = FileWal::open(opts(d.file("wal")));
  auto recs = (*w)->recover();
  ASSERT_TRUE(recs.ok());
  ASSERT_EQ(recs->size(), 20u);
  EXPECT_EQ((*recs)[0].body.view().substr(1), payload(30, 500).view());
}

TEST(FileWal, WrapsAroundTheRingManyTimes) {
  TempDir d;
  auto o = opts(d.file("wal"), 128 << 10);
  o.max_write = 8 << 10;
  uint64_t last_trim = 0;
  int next = 0;
  {
    auto w = open_ready(o);
    for (int round = 0; round < 60; ++round) {
      Appender a;
      for (int i = 0; i < 10; ++i) {
        Status st;
        // A trim becomes usable space once the WAL thread made it durable: retry until then.
        for (int k = 0; k < 1000; ++k) {
          st = a.append(*w, next + i, 1000 + (round * 131 + i * 17) % 3000);
          if (st.ok() || st.error().code != Errc::kUnavailable) break;
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        ASSERT_TRUE(st.ok()) << st.error().to_string();
      }
      a.wait();
      // Keep the last 4 records of each round untrimmed.
      last_trim = *a.results[5];
      w->trim(last_trim);
      next += 10;
    }
    w->shutdown();
  }
  auto w = FileWal::open(o);
  auto recs = (*w)->recover();
  ASSERT_TRUE(recs.ok());
  ASSERT_EQ(recs->size(), 4u);
  int first = next - 4;
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ((*recs)[i].body.view().substr(1),
              payload(first + i, 1000 + (59 * 131 + (6 + i) * 17) % 3000).view());
  }
}

TEST(FileWal, RefusesWhenFullUntilTrimmed) {
  TempDir d;
  auto o = opts(d.file("wal"), 128 << 10);
  o.max_write = 8 << 10;
  auto w = open_ready(o);
  Appender a;
  Status st;
  int n = 0;
  while ((st = a.append(*w, n, 4000)).ok()) ++n;
  EXPECT_EQ(st.error().code, Errc::kUnavailable);
  EXPECT_TRUE(st.error().retryable);
  a.wait();
  EXPECT_GT(n, 5);
  w->trim(*a.results.back());
  // The trim is applied by the WAL thread; appends are admitted once it is durable.
  Status again;
  for (int i = 0; i < 1000 && !(again = a.append(*w, n, 4000)).ok(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_TRUE(again.ok());
  a.wait();
}

TEST(FileWal, TornWriteFailsTheWalAndRecoveryKeepsAcknowledgedRecords) {
  TempDir d;
  FaultFs fs;
  size_t acked = 0;
  {
    auto o = opts(d.file("wal"), 1 << 20, &fs);
    auto w = open_ready(o);
    Appender a;
    for (int i = 0; i < 20; ++i) ASSERT_TRUE(a.append(*w, i, 3000).ok());
    a.wait();
    acked = a.results.size();
    fs.faults.torn_write_after = fs.faults.writes.load();
    fs.faults.torn_bytes = 5000;
    // Appends after the failed write are refused at once; count only the accepted ones.
    for (int i = 20; i < 30; ++i) (void)a.append(*w, i, 3000);
    a.wait();
    size_t failed = 0;
    for (size_t i = acked; i < a.results.size(); ++i) failed += !a.results[i].ok();
    EXPECT_GT(failed, 0u);
    for (size_t i = acked; i < a.results.size(); ++i) {
      if (a.results[i].ok()) ++acked;
    }
    Status later = a.append(*w, 99, 10);
    EXPECT_FALSE(later.ok());
    EXPECT_EQ(later.error().code, Errc::kIoError);
  }
  auto w = FileWal::open(opts(d.file("wal")));
  auto recs = (*w)->recover();
  ASSERT_TRUE(recs.ok());
  // Every acknowledged record is there; the torn block may have left a valid prefix of
  // unacknowledged records, which is allowed (they were never confirmed), but nothing corrupt.
  ASSERT_GE(recs->size(), acked);
  for (size_t i = 0; i < recs->size(); ++i) {
    EXPECT_EQ((*recs)[i].body.view().substr(1), payload(static_cast<int>(i), 3000).view());
  }
}

TEST(FileWal, FsyncFailureFailsAppends) {
  TempDir d;
  FaultFs fs;
  auto w = open_ready(opts(d.file("wal"), 1 << 20, &fs));
  fs.faults.fail_sync_after = fs.faults.syncs.load();
  Appender a;
  ASSERT_TRUE(a.append(*w, 0, 100).ok());
  a.wait();
  ASSERT_FALSE(a.results[0].ok());
  EXPECT_EQ(a.results[0].error().code, Errc::kIoError);
  EXPECT_FALSE(a.append(*w, 1, 100).ok());
}

TEST(FileWal, NoSpaceOnWriteFailsAppends) {
  TempDir d;
  FaultFs fs;
  auto w = open_ready(opts(d.file("wal"), 1 << 20, &fs));
  fs.faults.fail_write_after = fs.faults.writes.load();
  Appender a;
  ASSERT_TRUE(a.append(*w, 0, 100).ok());
  a.wait();
  EXPECT_FALSE(a.results[0].ok());
}

TEST(FileWal, RecoveryStopsAtCorruptRecord) {
  TempDir d;
  uint64_t corrupt_at = 0;
  {
    auto w = open_ready(opts(d.file("wal")));
    Appender a;
    for (int i = 0; i < 10; ++i) {
      ASSERT_TRUE(a.append(*w, i, 200).ok());
      a.wait();  // one record per block, so record 6 starts its own 4 KiB block
    }
    corrupt_at = *a.results[5];  // logical end of record 5 = start of record 6's block region
  }
  // Flip a byte inside record 6's body. Logical offsets started at 2 rings (reset), so compute
  // the file position from the ring size.
  uint64_t ring = (1 << 20) - 8192;
  uint64_t block6 = (corrupt_at + 4095) / 4096 * 4096;
  uint64_t pos = 8192 + block6 % ring + 24 + 10;
  {
    std::fstream f(d.file("wal"), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(pos));
    char c = 0x7f;
    f.write(&c, 1);
  }
  auto w = FileWal::open(opts(d.file("wal")));
  auto recs = (*w)->recover();
  ASSERT_TRUE(recs.ok());
  EXPECT_EQ(recs->size(), 6u);
}

TEST(FileWal, ResetHidesRecoveredRecords) {
  TempDir d;
  {
    auto w = open_ready(opts(d.file("wal")));
    Appender a;
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(a.append(*w, i, 100).ok());
    a.wait();
  }
  {
    auto w = FileWal::open(opts(d.file("wal")));
    EXPECT_EQ((*w)->recover()->size(), 5u);
    ASSERT_TRUE((*w)->reset().ok());
    Appender a;
    ASSERT_TRUE(a.append(**w, 42, 100).ok());
    a.wait();
  }
  auto w = FileWal::open(opts(d.file("wal")));
  auto recs = (*w)->recover();
  ASSERT_EQ(recs->size(), 1u);
  EXPECT_EQ((*recs)[0].body.view().substr(1), payload(42, 100).view());
}

// Holds chosen writes (by FaultFs write index) until the test releases them, so writes can be
// made to complete out of order. A held write may also be failed on release.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  std::set<int> held;
  std::set<int> entered;
  std::set<int> fail;  // released with an injected EIO (nothing reaches the file)
  Status pass(int k) {
    std::unique_lock lk(mu);
    entered.insert(k);
    cv.notify_all();
    cv.wait(lk, [&] { return held.count(k) == 0; });
    if (fail.count(k)) return Error::make(Errc::kIoError, "injected EIO");
    return ok_status();
  }
  void hold(int k) {
    std::lock_guard lk(mu);
    held.insert(k);
  }
  void release(int k, bool with_error = false) {
    std::lock_guard lk(mu);
    if (with_error) fail.insert(k);
    held.erase(k);
    cv.notify_all();
  }
  void wait_entered(int k) {
    std::unique_lock lk(mu);
    cv.wait(lk, [&] { return entered.count(k) > 0; });
  }
};

// Waits for a condition that the code under test makes true eventually (no timing assertion:
// the generous bound only turns a hang into a failure).
template <typename F>
bool eventually(F f) {
  for (int i = 0; i < 30000; ++i) {
    if (f()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

// A direct-I/O WAL with several writes in flight on a FaultFs, ready for appends.
std::unique_ptr<FileWal> open_inflight(const std::string& path, FaultFs* fs,
                                       uint64_t capacity = 1 << 20) {
  auto o = opts(path, capacity, fs);
  o.direct_io = true;
  o.max_inflight = 4;
  return open_ready(o);
}

#define SKIP_WITHOUT_DIRECT_IO(w)                              \
  if ((w)->max_inflight() < 4)                                 \
  GTEST_SKIP() << "the temp dir refuses O_DIRECT, so the WAL " \
                  "keeps one write in flight"

TEST(FileWal, OutOfOrderCompletionsAreAcknowledgedInOrder) {
  TempDir d;
  FaultFs fs;
  auto w = open_inflight(d.file("wal"), &fs);
  SKIP_WITHOUT_DIRECT_IO(w);
  int base = fs.faults.writes.load();
  int done_base = fs.faults.writes_done.load();
  Gate g;
  g.hold(base);  // the first block stays in flight while the next three complete
  fs.faults.before_write = [&](int k, uint64_t, size_t) { return g.pass(k); };
  Appender a;
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(a.append(*w, i, 5000).ok());
    // Each append goes out as its own block before the next is queued.
    ASSERT_TRUE(eventually([&] { return fs.faults.writes.load() == base + i + 1; }));
  }
  ASSERT_TRUE(eventually([&] { return fs.faults.writes_done.load() == done_base + 3; }));
  {
    std::lock_guard lk(a.mu);
    EXPECT_TRUE(a.results.empty()) << "acknowledged before an earlier write was durable";
  }
  g.release(base);
  a.wait();
  ASSERT_EQ(a.order, (std::vector<int>{0, 1, 2, 3}));
  uint64_t prev = 0;
  for (auto& r : a.results) {
    ASSERT_TRUE(r.ok());
    EXPECT_GT(*r, prev);
    prev = *r;
  }
  EXPECT_EQ(w->stats().writes, 4u);
  w->shutdown();
  w.reset();
  auto again = FileWal::open(opts(d.file("wal")));
  auto recs = (*again)->recover();
  ASSERT_TRUE(recs.ok());
  ASSERT_EQ(recs->size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ((*recs)[i].body.view().substr(1), payload(i, 5000).view());
    EXPECT_EQ((*recs)[i].end, *a.results[i]);
  }
}

// Block 0 is held, block 1 fails, block 2 completes (and is on disk) before block 0 finishes:
// record 0 is acknowledged, records 1 and 2 fail, and recovery stops at the gap left by block 1
// instead of returning the durable block 2.
TEST(FileWal, FailedWriteAmongSeveralInFlightFailsLaterRecordsAndRecoveryStopsAtTheGap) {
  TempDir d;
  FaultFs fs;
  auto w = open_inflight(d.file("wal"), &fs);
  SKIP_WITHOUT_DIRECT_IO(w);
  int base = fs.faults.writes.load();
  int done_base = fs.faults.writes_done.load();
  Gate g;
  g.hold(base);
  g.hold(base + 1);
  fs.faults.before_write = [&](int k, uint64_t, size_t) { return g.pass(k); };
  Appender a;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(a.append(*w, i, 3000).ok());
    ASSERT_TRUE(eventually([&] { return fs.faults.writes.load() == base + i + 1; }));
  }
  ASSERT_TRUE(eventually([&] { return fs.faults.writes_done.load() == done_base + 1; }));
  g.release(base + 1, /*with_error=*/true);
  ASSERT_TRUE(eventually([&] { return fs.faults.writes_done.load() == done_base + 2; }));
  {
    std::lock_guard lk(a.mu);
    EXPECT_TRUE(a.results.empty());
  }
  g.release(base);
  a.wait();
  ASSERT_EQ(a.order, (std::vector<int>{0, 1, 2}));
  EXPECT_TRUE(a.results[0].ok());
  ASSERT_FALSE(a.results[1].ok());
  EXPECT_EQ(a.results[1].error().code, Errc::kIoError);
  ASSERT_FALSE(a.results[2].ok()) << "acknowledged a record after a failed write";
  EXPECT_EQ(a.results[2].error().code, Errc::kIoError);
  Status later = a.append(*w, 3, 10);
  ASSERT_FALSE(later.ok());
  EXPECT_EQ(later.error().code, Errc::kIoError);
  w.reset();
  auto again = FileWal::open(opts(d.file("wal")));
  auto recs = (*again)->recover();
  ASSERT_TRUE(recs.ok());
  ASSERT_EQ(recs->size(), 1u);
  EXPECT_EQ((*recs)[0].body.view().substr(1), payload(0, 3000).view());
}

// A torn block (only its first 4 KiB page reached the disk) in the middle of four in flight.
TEST(FileWal, TornWriteAmongSeveralInFlight) {
  TempDir d;
  FaultFs fs;
  auto w = open_inflight(d.file("wal"), &fs);
  SKIP_WITHOUT_DIRECT_IO(w);
  int base = fs.faults.writes.load();
  int done_base = fs.faults.writes_done.load();
  Gate g;
  g.hold(base + 1);
  fs.faults.torn_write_after = base + 1;
  fs.faults.torn_bytes = 4096;
  fs.faults.before_write = [&](int k, uint64_t, size_t) { return g.pass(k); };
  Appender a;
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(a.append(*w, i, 6000).ok());  // 8 KiB blocks
    ASSERT_TRUE(eventually([&] { return fs.faults.writes.load() == base + i + 1; }));
  }
  ASSERT_TRUE(eventually([&] { return fs.faults.writes_done.load() == done_base + 3; }));
  ASSERT_TRUE(eventually([&] {
    std::lock_guard lk(a.mu);
    return a.results.size() == 1;
  }));
  g.release(base + 1);
  a.wait();
  ASSERT_EQ(a.order, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_TRUE(a.results[0].ok());
  for (int i = 1; i < 4; ++i) EXPECT_FALSE(a.results[i].ok()) << i;
  w.reset();
  auto again = FileWal::open(opts(d.file("wal")));
  auto recs = (*again)->recover();
  ASSERT_TRUE(recs.ok());
  ASSERT_EQ(recs->size(), 1u);
  EXPECT_EQ((*recs)[0].body.view().substr(1), payload(0, 6000).view());
}

// The block before a ring wrap is lost while the block after it (at the start of the next ring
// cycle) is durable: recovery must notice that the wrapped block does not follow the last valid
// one and stop there.
TEST(FileWal, RecoveryStopsAtAGapBeforeAWrappedBlock) {
  TempDir d;
  FaultFs fs;
  const uint64_t cap = 128 << 10;  // ring of 120 KiB = 30 pages
  auto o = opts(d.file("wal"), cap, &fs);
  o.direct_io = true;
  o.max_inflight = 4;
  auto w = open_ready(o);
  SKIP_WITHOUT_DIRECT_IO(w);
  Appender a;
  for (int i = 0; i < 26; ++i) {  // 26 one-page blocks: pages 0..25 of the ring
    Status st;
    for (int k = 0; k < 5000; ++k) {  // a trim frees space once its header write is durable
      st = a.append(*w, i, 3000);
      if (st.ok() || st.error().code != Errc::kUnavailable) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_TRUE(st.ok()) << st.error().to_string();
    a.wait();
    if (i >= 6) w->trim(*a.results[i - 6]);
  }
  // The last trim (end of record 19) is durable once only pages 20..25 count as used.
  ASSERT_TRUE(eventually([&] { return w->stats().used_bytes == 6 * 4096; }));
  int hdr_base = fs.faults.writes_done.load();
  int base = fs.faults.writes.load();
  Gate g;
  g.hold(base);
  std::atomic<uint64_t> b_off{0};
  fs.faults.before_write = [&](int k, uint64_t off, size_t) {
    if (k == base + 1) b_off = off;
    return g.pass(k);
  };
  ASSERT_TRUE(a.append(*w, 26, 6000).ok());  // A: pages 26..27
  ASSERT_TRUE(eventually([&] { return fs.faults.writes.load() == base + 1; }));
  ASSERT_TRUE(a.append(*w, 27, 12000).ok());  // B: 3 pages, do not fit in 28..29: wraps
  ASSERT_TRUE(eventually([&] { return fs.faults.writes_done.load() == hdr_base + 1; }));
  EXPECT_EQ(b_off.load(), FileWal::kHeaderArea) << "B did not wrap to the ring start";
  g.release(base, /*with_error=*/true);  // A never reaches the disk
  a.wait();
  EXPECT_FALSE(a.results[26].ok());
  EXPECT_FALSE(a.results[27].ok());
  w.reset();
  auto again = FileWal::open(opts(d.file("wal"), cap));
  auto recs = (*again)->recover();
  ASSERT_TRUE(recs.ok());
  ASSERT_EQ(recs->size(), 6u);  // records 20..25; not B
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ((*recs)[i].body.view().substr(1), payload(20 + i, 3000).view());
  }
}

// Many appends outstanding against a small ring with four writes in flight: the ring fills
// (appends are refused with a retryable kUnavailable until a trim), acknowledgements stay in
// order, and recovery returns exactly the untrimmed tail.
TEST(FileWal, FullRingBackPressureWithSeveralWritesInFlight) {
  TempDir d;
  FaultFs fs;
  const uint64_t cap = 256 << 10;
  auto o = opts(d.file("wal"), cap, &fs);
  o.direct_io = true;
  o.max_inflight = 4;
  std::vector<size_t> sizes;
  std::vector<uint64_t> ends;
  int refused = 0;
  const int n = 1500;
  // Hold every third write back a little, so completions often arrive out of order.
  fs.faults.before_write = [](int k, uint64_t, size_t) {
    if (k % 3 == 0) std::this_thread::sleep_for(std::chrono::microseconds(500));
    return ok_status();
  };
  {
    auto w = open_ready(o);
    SKIP_WITHOUT_DIRECT_IO(w);
    std::mt19937 rng(7);
    std::mutex mu;
    std::condition_variable cv;
    std::vector<int> order;
    bool in_order = true;
    int failed = 0;
    for (int i = 0; i < n; ++i) {
      size_t sz = 200 + rng() % 9000;
      sizes.push_back(sz);
      while (true) {
        Status st = w->append(Buffer::copy("h"), payload(i, sz), [&, i](Result<uint64_t> r) {
          std::lock_guard lk(mu);
          if (!r.ok()) ++failed;
          if (!order.empty() && order.back() != i - 1) in_order = false;
          if (r.ok() && !ends.empty() && *r <= ends.back()) in_order = false;
          order.push_back(i);
          ends.push_back(r.ok() ? *r : 0);
          cv.notify_all();
        });
        if (st.ok()) break;
        ASSERT_EQ(st.error().code, Errc::kUnavailable);
        ++refused;
        // Trim everything acknowledged so far, as an upload would.
        std::unique_lock lk(mu);
        if (!ends.empty()) w->trim(ends.back());
        cv.wait_for(lk, std::chrono::milliseconds(1));
      }
    }
    {
      std::unique_lock lk(mu);
      cv.wait(lk, [&] { return order.size() == static_cast<size_t>(n); });
      EXPECT_TRUE(in_order);
      EXPECT_EQ(failed, 0);
      w->trim(ends[n - 6]);
    }
    w->shutdown();
  }
  EXPECT_GT(refused, 0);
  auto w = FileWal::open(opts(d.file("wal"), cap));
  auto recs = (*w)->recover();
  ASSERT_TRUE(recs.ok());
  ASSERT_EQ(recs->size(), 5u);
  for (int i = 0; i < 5; ++i) {
    int k = n - 5 + i;
    EXPECT_EQ((*recs)[i].body.view().substr(1), payload(k, sizes[k]).view());
    EXPECT_EQ((*recs)[i].end, ends[k]);
  }
}

TEST(FileWal, BufferedModeKeepsOneWriteInFlight) {
  // fdatasync reports a writeback error to one caller only, so overlapping write+sync pairs
  // could acknowledge a block whose pages were dropped.
  TempDir d;
  auto o = opts(d.file("wal"));
  o.direct_io = false;
  o.max_inflight = 4;
  auto w = open_ready(o);
  EXPECT_EQ(w->max_inflight(), 1u);
}

TEST(FileWal, CapacityMismatchIsAnError) {
  TempDir d;
  { auto w = open_ready(opts(d.file("wal"), 1 << 20)); }
  auto w = FileWal::open(opts(d.file("wal"), 2 << 20));
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.error().code, Errc::kInvalidArgument);
}

TEST(FileWal, ConcurrentAppendersAllComplete) {
  TempDir d;
  auto w = open_ready(opts(d.file("wal"), 8 << 20));
  std::atomic<int> ok{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t) {
    ts.emplace_back([&, t] {
      std::vector<std::promise<void>> ps(100);
      for (int i = 0; i < 100; ++i) {
        ASSERT_TRUE(
            w->append(Buffer::copy("x"), payload(t * 100 + i, 700), [&, i](Result<uint64_t> r) {
               if (r.ok()) ++ok;
               ps[i].set_value();
             }).ok());
      }
      for (auto& p : ps) p.get_future().wait();
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(ok.load(), 400);
  EXPECT_LT(w->stats().writes, 400u);  // group commit batched some of them
}

// Issue #19: a WAL file whose preallocation fails (the disk is full) must not stay behind half
// allocated: the next start would take it for a WAL of the wrong size and refuse to open.
// RLIMIT_FSIZE makes posix_fallocate fail (EFBIG) like a full disk would (ENOSPC).
TEST(FileWalDiskFull, FailedPreallocationLeavesNoFile) {
  TempDir dir;
  const std::string path = dir.file("wal");
  struct rlimit old {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  auto old_handler = ::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = old;
  small.rlim_cur = 1 << 20;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  Status st = posix_fs()->preallocate(path, 16 << 20);
  ::setrlimit(RLIMIT_FSIZE, &old);
  ::signal(SIGXFSZ, old_handler);
  EXPECT_FALSE(st.ok());
  EXPECT_FALSE(posix_fs()->exists(path));
  // With room again, the WAL is created as if nothing happened.
  FileWalOptions o;
  o.path = path;
  o.capacity = 16 << 20;
  o.max_write = 256 << 10;
  EXPECT_TRUE(FileWal::open(o).ok());
}

}  // namespace
}  // namespace shale::storage
