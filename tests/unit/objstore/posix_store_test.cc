#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <thread>

#include <sys/wait.h>
#include <unistd.h>

#include "objstore/posix_store.h"
#include "test_util.h"

namespace shale::objstore {
namespace {

using testing_util::chain;
using testing_util::TempDir;

std::unique_ptr<PosixStore> open_store(const std::string& dir, PosixStoreOptions o = {}) {
  auto s = PosixStore::open(dir, o);
  EXPECT_TRUE(s.ok()) << s.error().to_string();
  return std::move(s).value();
}

std::string pattern(size_t n, char seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(seed + i * 7);
  return s;
}

TEST(PosixStore, PutGetAndRangedReads) {
  TempDir dir;
  auto s = open_store(dir.path());
  std::string data = pattern(10000, 'a');
  ASSERT_TRUE(put_sync(*s, "a2000000/_kafka_c/42", chain(data)).ok());
  auto all = get_sync(*s, "a2000000/_kafka_c/42");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->view(), data);
  auto mid = get_sync(*s, "a2000000/_kafka_c/42", {100, 50});
  ASSERT_TRUE(mid.ok());
  EXPECT_EQ(mid->view(), data.substr(100, 50));
  auto tail = get_sync(*s, "a2000000/_kafka_c/42", {9990, Range::kToEnd});
  EXPECT_EQ(tail->view(), data.substr(9990));
  auto clamped = get_sync(*s, "a2000000/_kafka_c/42", {9990, 1000});
  EXPECT_EQ(clamped->view(), data.substr(9990));
  auto past = get_sync(*s, "a2000000/_kafka_c/42", {20000, 10});
  ASSERT_TRUE(past.ok());
  EXPECT_TRUE(past->empty());
  auto zero = get_sync(*s, "a2000000/_kafka_c/42", {5, 0});
  ASSERT_TRUE(zero.ok());
  EXPECT_TRUE(zero->empty());
  // Multi-buffer chains are written in order.
  BufferChain c;
  c.push_back(Buffer::copy("hello "));
  c.push_back(Buffer::copy("world"));
  ASSERT_TRUE(put_sync(*s, "k", std::move(c)).ok());
  EXPECT_EQ(get_sync(*s, "k")->view(), "hello world");
  // Empty objects exist.
  ASSERT_TRUE(put_sync(*s, "empty", BufferChain()).ok());
  EXPECT_TRUE(get_sync(*s, "empty")->empty());
}

TEST(PosixStore, MissingKeyIsNotFound) {
  TempDir dir;
  auto s = open_store(dir.path());
  auto r = get_sync(*s, "no/such/key");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::kNotFound);
  ASSERT_TRUE(put_sync(*s, "dir/obj", chain("x")).ok());
  EXPECT_EQ(get_sync(*s, "dir").error().code, Errc::kNotFound);  // a directory is no object
  EXPECT_EQ(get_sync(*s, "dir/obj/sub").error().code, Errc::kNotFound);
}

TEST(PosixStore, OverwriteReplacesWholeObject) {
  TempDir dir;
  auto s = open_store(dir.path());
  ASSERT_TRUE(put_sync(*s, "k", chain("long first version")).ok());
  ASSERT_TRUE(put_sync(*s, "k", chain("v2")).ok());
  EXPECT_EQ(get_sync(*s, "k")->view(), "v2");
}

TEST(PosixStore, ListsByPrefixInKeyOrder) {
  TempDir dir;
  auto s = open_store(dir.path());
  for (const char* k : {"b/x", "a/b/2", "a/b/1", "a/bc/3", "a/c", "ab", "z"}) {
    ASSERT_TRUE(put_sync(*s, k, chain(k)).ok()) << k;
  }
  auto keys = [&](const std::string& prefix) {
    std::vector<std::string> out;
    auto r = list_sync(*s, prefix);
    EXPECT_TRUE(r.ok());
    if (r.ok()) {
      for (auto& o : *r) out.push_back(o.key);
    }
    return out;
  };
  EXPECT_EQ(keys(""),
            (std::vector<std::string>{"a/b/1", "a/b/2", "a/bc/3", "a/c", "ab", "b/x", "z"}));
  EXPECT_EQ(keys("a/b"), (std::vector<std::string>{"a/b/1", "a/b/2", "a/bc/3"}));
  EXPECT_EQ(keys("a/b/"), (std::vector<std::string>{"a/b/1", "a/b/2"}));
  EXPECT_EQ(keys("a"), (std::vector<std::string>{"a/b/1", "a/b/2", "a/bc/3", "a/c", "ab"}));
  EXPECT_TRUE(keys("q").empty());
  EXPECT_TRUE(keys("nothing/here/").empty());
  auto r = list_sync(*s, "a/c");
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].size, 3u);
  EXPECT_GT((*r)[0].mtime_ms, 0);
}

TEST(PosixStore, RejectsInvalidKeys) {
  TempDir dir;
  auto s = open_store(dir.path());
  for (const char* k : {"", "/abs", "trail/", "a//b", "a/../b", "./a", ".shale-tmp/x"}) {
    Status st = put_sync(*s, k, chain("x"));
    ASSERT_FALSE(st.ok()) << k;
    EXPECT_EQ(st.error().code, Errc::kInvalidArgument) << k;
  }
  EXPECT_TRUE(put_sync(*s, "x/.shale-tmp", chain("x")).ok());  // reserved only at the top
}

TEST(PosixStore, KeyClashingWithDirectoryIsRefused) {
  TempDir dir;
  auto s = open_store(dir.path());
  ASSERT_TRUE(put_sync(*s, "a/b", chain("x")).ok());
  Status st = put_sync(*s, "a", chain("y"));
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, Errc::kAlreadyExists);
  EXPECT_EQ(get_sync(*s, "a/b")->view(), "x");
}

TEST(PosixStore, RemoveDeletesBatchAndPrunesEmptyDirectories) {
  TempDir dir;
  auto s = open_store(dir.path());
  ASSERT_TRUE(put_sync(*s, "p/q/1", chain("1")).ok());
  ASSERT_TRUE(put_sync(*s, "p/q/2", chain("2")).ok());
  ASSERT_TRUE(put_sync(*s, "p/r", chain("3")).ok());
  ASSERT_TRUE(remove_sync(*s, {"p/q/1", "p/q/2", "missing/key"}).ok());
  EXPECT_EQ(get_sync(*s, "p/q/1").error().code, Errc::kNotFound);
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/p/q"));
  EXPECT_TRUE(std::filesystem::exists(dir.path() + "/p/r"));
  ASSERT_TRUE(remove_sync(*s, {"p/r"}).ok());
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/p"));
  EXPECT_TRUE(std::filesystem::exists(dir.path()));
  EXPECT_EQ(list_sync(*s, "")->size(), 0u);
}

TEST(PosixStore, CallbacksRunOnPoolThreads) {
  TempDir dir;
  auto s = open_store(dir.path());
  std::promise<std::thread::id> p;
  s->put("k", chain("v"), [&p](Status) { p.set_value(std::this_thread::get_id()); });
  EXPECT_NE(p.get_future().get(), std::this_thread::get_id());
}

TEST(PosixStore, ConcurrentPutsFromTwoStoresOnOneDirectory) {
  // Two "brokers" share the directory (as on NFS): unique temp names keep them apart.
  TempDir dir;
  auto s1 = open_store(dir.path());
  auto s2 = open_store(dir.path());
  constexpr int kThreads = 8, kPer = 40;
  std::vector<std::thread> ts;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([&, t] {
      ObjectStore& s = t % 2 ? *s1 : *s2;
      for (int i = 0; i < kPer; ++i) {
        std::string key = "obj/" + std::to_string(t) + "/" + std::to_string(i);
        if (!put_sync(s, key, chain(pattern(1000 + i, static_cast<char>(t)))).ok()) ++failures;
        // Everyone also overwrites one shared key: the winner's bytes must be whole.
        if (!put_sync(s, "shared", chain(pattern(4096, static_cast<char>(t)))).ok()) ++failures;
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(failures.load(), 0);
  auto l = list_sync(*s1, "obj/");
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->size(), static_cast<size_t>(kThreads * kPer));
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kPer; i += 13) {
      auto r = get_sync(*s2, "obj/" + std::to_string(t) + "/" + std::to_string(i));
      ASSERT_TRUE(r.ok());
      EXPECT_EQ(r->view(), pattern(1000 + i, static_cast<char>(t)));
    }
  }
  auto shared = get_sync(*s1, "shared");
  ASSERT_TRUE(shared.ok());
  bool matches_one = false;
  for (int t = 0; t < kThreads; ++t) {
    matches_one |= shared->view() == pattern(4096, static_cast<char>(t));
  }
  EXPECT_TRUE(matches_one);
  // No temp files are left behind.
  EXPECT_TRUE(std::filesystem::is_empty(dir.path() + "/.shale-tmp"));
}

TEST(PosixStore, NoPartialObjectIsEverVisible) {
  TempDir dir;
  auto s = open_store(dir.path());
  constexpr size_t kSize = 256 * 1024;
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (int i = 0; i < 60; ++i) {
      ASSERT_TRUE(put_sync(*s, "atom/" + std::to_string(i), chain(pattern(kSize, 'q'))).ok());
    }
    stop = true;
  });
  int checked = 0;
  while (!stop || checked == 0) {
    auto l = list_sync(*s, "atom/");
    ASSERT_TRUE(l.ok());
    for (const auto& o : *l) {
      ASSERT_EQ(o.size, kSize) << o.key;  // listed means complete
      auto r = get_sync(*s, o.key);
      ASSERT_TRUE(r.ok());
      ASSERT_EQ(r->size(), kSize);
      ++checked;
    }
  }
  writer.join();
  EXPECT_GT(checked, 0);
}

TEST(PosixStore, MultipartConcatenatesPartsInOrder) {
  TempDir dir;
  auto s = open_store(dir.path());
  auto up = testing_util::create_multipart_sync(*s, "big/object");
  ASSERT_TRUE(up.ok()) << up.error().to_string();
  ASSERT_TRUE(testing_util::part_sync(**up, 2, chain("BBBB")).ok());
  ASSERT_TRUE(testing_util::part_sync(**up, 1, chain("AAAA")).ok());
  ASSERT_TRUE(testing_util::part_sync(**up, 3, chain("CC")).ok());
  EXPECT_EQ(get_sync(*s, "big/object").error().code, Errc::kNotFound);  // not yet visible
  EXPECT_EQ(list_sync(*s, "")->size(), 0u);
  ASSERT_TRUE(testing_util::complete_sync(**up).ok());
  EXPECT_EQ(get_sync(*s, "big/object")->view(), "AAAABBBBCC");
  EXPECT_TRUE(std::filesystem::is_empty(dir.path() + "/.shale-tmp"));

  auto up2 = testing_util::create_multipart_sync(*s, "gone");
  ASSERT_TRUE(up2.ok());
  ASSERT_TRUE(testing_util::part_sync(**up2, 1, chain("x")).ok());
  ASSERT_TRUE(testing_util::abort_sync(**up2).ok());
  EXPECT_EQ(get_sync(*s, "gone").error().code, Errc::kNotFound);
  EXPECT_TRUE(std::filesystem::is_empty(dir.path() + "/.shale-tmp"));
  EXPECT_FALSE(testing_util::part_sync(**up2, 2, chain("y")).ok());
  EXPECT_FALSE(testing_util::part_sync(**up2, 0, chain("y")).ok());

  auto empty = testing_util::create_multipart_sync(*s, "noparts");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(testing_util::complete_sync(**empty).error().code, Errc::kInvalidArgument);
}

// A file layer that runs out of space after a budget of bytes, or fails fsync with EIO.
class FailingFs : public PosixFs {
 public:
  std::atomic<int64_t> write_budget{1 << 30};
  std::atomic<bool> fsync_eio{false};
  ssize_t pwrite(int fd, const void* buf, size_t n, off_t off) override {
    int64_t left = write_budget.load();
    if (left <= 0) return -ENOSPC;
    size_t k = std::min<size_t>(n, static_cast<size_t>(left));
    write_budget -= static_cast<int64_t>(k);
    return PosixFs::pwrite(fd, buf, k, off);  // a short write, like a nearly full disk
  }
  int fsync(int fd) override {
    if (fsync_eio) return -EIO;
    return PosixFs::fsync(fd);
  }
};

TEST(PosixStore, DiskFullIsRetryableNoSpaceAndLeavesNothing) {
  TempDir dir;
  FailingFs fs;
  PosixStoreOptions o;
  o.fs = &fs;
  auto s = open_store(dir.path(), o);
  fs.write_budget = 1000;
  Status st = put_sync(*s, "k", chain(pattern(5000, 'z')));
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, Errc::kNoSpace);
  EXPECT_TRUE(st.error().retryable);
  // Issue #19: the message says what the write needed and what the file system has free.
  EXPECT_NE(st.error().message.find("the object needs 5000 bytes"), std::string::npos)
      << st.error().message;
  EXPECT_NE(st.error().message.find("bytes free in " + dir.path()), std::string::npos)
      << st.error().message;
  EXPECT_TRUE(s->prefers_single_put());  // the engine never multiparts into it
  EXPECT_EQ(get_sync(*s, "k").error().code, Errc::kNotFound);
  EXPECT_TRUE(std::filesystem::is_empty(dir.path() + "/.shale-tmp"));
  // Space comes back: the same put succeeds.
  fs.write_budget = 1 << 30;
  ASSERT_TRUE(put_sync(*s, "k", chain(pattern(5000, 'z'))).ok());
  EXPECT_EQ(s->stats().errors, 2u);  // the failed put and the get of the missing key
  EXPECT_EQ(s->stats().puts, 2u);
  EXPECT_EQ(s->stats().put_bytes, 5000u);
}

TEST(PosixStore, FsyncEioIsIoError) {
  TempDir dir;
  FailingFs fs;
  PosixStoreOptions o;
  o.fs = &fs;
  auto s = open_store(dir.path(), o);
  fs.fsync_eio = true;
  Status st = put_sync(*s, "k", chain("data"));
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, Errc::kIoError);
  EXPECT_FALSE(st.error().retryable);
  EXPECT_EQ(get_sync(*s, "k").error().code, Errc::kNotFound);
}

TEST(PosixStore, CountsOperations) {
  TempDir dir;
  auto s = open_store(dir.path());
  ASSERT_TRUE(put_sync(*s, "a", chain("12345")).ok());
  ASSERT_TRUE(get_sync(*s, "a", {1, 2}).ok());
  ASSERT_FALSE(get_sync(*s, "b").ok());
  ASSERT_TRUE(list_sync(*s, "").ok());
  ASSERT_TRUE(remove_sync(*s, {"a", "b"}).ok());
  StoreStats st = s->stats();
  EXPECT_EQ(st.puts, 1u);
  EXPECT_EQ(st.put_bytes, 5u);
  EXPECT_EQ(st.gets, 2u);
  EXPECT_EQ(st.get_bytes, 2u);
  EXPECT_EQ(st.errors, 1u);
  EXPECT_EQ(st.lists, 1u);
  EXPECT_EQ(st.deletes, 2u);
}

TEST(PosixStore, OpenRefusesRelativeRootAndFiles) {
  EXPECT_FALSE(PosixStore::open("relative/dir").ok());
  TempDir dir;
  std::string file = dir.path() + "/f";
  { std::ofstream(file) << "x"; }
  EXPECT_FALSE(PosixStore::open(file).ok());
}

// A killed writer leaves its temp file in .shale-tmp; the next open removes it when the writer
// was a process on this host that is gone, or once it is older than stale_temp_age_s.
TEST(PosixStore, OpenSweepsStaleTempFiles) {
  TempDir dir;
  { auto s = open_store(dir.path()); }
  char host[256] = {0};
  ASSERT_EQ(gethostname(host, sizeof(host) - 1), 0);
  for (char* p = host; *p; ++p) {
    if (*p == '/' || *p == '.') *p = '_';
  }
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(0);
  ASSERT_EQ(waitpid(child, nullptr, 0), child);
  const std::string tmp = dir.path() + "/.shale-tmp/";
  auto touch = [&](const std::string& name) { std::ofstream(tmp + name) << "partial"; };
  const std::string dead = "put-" + std::string(host) + "." + std::to_string(child) + ".1.ab";
  const std::string mine = "put-" + std::string(host) + "." + std::to_string(getpid()) + ".1.ab";
  touch(dead);
  const std::string dead_mpu = "mpu-" + std::string(host) + "." + std::to_string(child) + ".2.ab";
  std::filesystem::create_directory(tmp + dead_mpu);
  touch(dead_mpu + "/1");
  touch(mine);
  touch("put-otherhost.123.1.ab");
  touch("put-otherhost.456.1.ab");
  auto old = std::filesystem::file_time_type::clock::now() - std::chrono::hours(2);
  std::filesystem::last_write_time(tmp + "put-otherhost.456.1.ab", old);

  auto s = open_store(dir.path());
  EXPECT_FALSE(std::filesystem::exists(tmp + dead));
  EXPECT_FALSE(std::filesystem::exists(tmp + dead_mpu));
  EXPECT_TRUE(std::filesystem::exists(tmp + mine));
  EXPECT_TRUE(std::filesystem::exists(tmp + "put-otherhost.123.1.ab"));
  EXPECT_FALSE(std::filesystem::exists(tmp + "put-otherhost.456.1.ab"));
  // The sweep never touches published objects.
  ASSERT_TRUE(put_sync(*s, "k/1", chain("v")).ok());
  auto s2 = open_store(dir.path());
  EXPECT_TRUE(get_sync(*s2, "k/1").ok());
}

}  // namespace
}  // namespace shale::objstore
