#include "meta/sqlite_meta_store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <thread>

namespace shale::meta {
namespace {

std::unique_ptr<SqliteMetaStore> open_mem() {
  auto r = SqliteMetaStore::open({":memory:", 10000, 10});
  EXPECT_TRUE(r.ok());
  return std::move(r).value();
}

// Collects watch events and lets the test wait for a count without timing assertions.
struct Collector {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<WatchEvent> events;
  WatchCallback cb() {
    return [this](const std::vector<WatchEvent>& evs) {
      std::lock_guard lk(mu);
      for (auto& e : evs) events.push_back(e);
      cv.notify_all();
    };
  }
  bool wait_for(size_t n) {
    std::unique_lock lk(mu);
    return cv.wait_for(lk, std::chrono::seconds(20), [&] { return events.size() >= n; });
  }
};

TEST(PrefixEnd, IncrementsLastByte) {
  EXPECT_EQ(prefix_end("abc"), "abd");
  EXPECT_EQ(prefix_end(std::string("a\xff", 2)), "b");
  EXPECT_EQ(prefix_end(std::string("\xff\xff", 2)), std::string(1, '\0'));
  EXPECT_EQ(prefix_end(""), std::string(1, '\0'));
}

TEST(SqliteMetaStore, PutGetRevisions) {
  auto s = open_mem();
  EXPECT_EQ(*s->revision(), 0);
  EXPECT_EQ(*s->put("a", "1"), 1);
  EXPECT_EQ(*s->put("a", "2"), 2);
  auto kv = s->get("a");
  ASSERT_TRUE(kv.ok() && kv->has_value());
  EXPECT_EQ((*kv)->value, "2");
  EXPECT_EQ((*kv)->create_revision, 1);
  EXPECT_EQ((*kv)->mod_revision, 2);
  EXPECT_FALSE(s->get("b")->has_value());
  EXPECT_EQ(*s->del("a"), 3);
  EXPECT_FALSE(s->get("a")->has_value());
}

TEST(SqliteMetaStore, CompareAndPut) {
  auto s = open_mem();
  Txn create;
  create.compares.push_back({"k", 0});
  create.ops.push_back(Op::put("k", "v1"));
  EXPECT_TRUE(s->commit(create).ok());
  auto again = s->commit(create);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code, Errc::kConflict);
  int64_t mod = (*s->get("k"))->mod_revision;
  Txn update;
  update.compares.push_back({"k", mod});
  update.ops.push_back(Op::put("k", "v2"));
  update.ops.push_back(Op::put("other", "x"));
  EXPECT_TRUE(s->commit(update).ok());
  EXPECT_FALSE(s->commit(update).ok());  // stale mod_revision
  EXPECT_EQ((*s->get("k"))->value, "v2");
  EXPECT_EQ((*s->get("other"))->mod_revision, (*s->get("k"))->mod_revision);
}

TEST(SqliteMetaStore, FailedTxnChangesNothing) {
  auto s = open_mem();
  ASSERT_TRUE(s->put("a", "1").ok());
  Txn t;
  t.compares.push_back({"a", 999});
  t.ops.push_back(Op::put("b", "2"));
  EXPECT_FALSE(s->commit(t).ok());
  EXPECT_FALSE(s->get("b")->has_value());
  EXPECT_EQ(*s->revision(), 1);
}

TEST(SqliteMetaStore, RangeAndPrefixAreOrderedAndBinarySafe) {
  auto s = open_mem();
  std::string bin("p/\x00\xff", 4);
  for (auto k : {"p/b", "p/a", "p/c", "q/a", "p"}) ASSERT_TRUE(s->put(k, k).ok());
  ASSERT_TRUE(s->put(bin, "bin").ok());
  auto all = *s->prefix("p/");
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[0].key, bin);
  EXPECT_EQ(all[1].key, "p/a");
  EXPECT_EQ(all[3].key, "p/c");
  auto lim = *s->prefix("p/", 2);
  EXPECT_EQ(lim.size(), 2u);
  auto r = *s->range("p/a", "p/c");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[1].key, "p/b");
  auto everything = *s->range("", std::string(1, '\0'));
  EXPECT_EQ(everything.size(), 6u);
}

TEST(SqliteMetaStore, DeletePrefix) {
  auto s = open_mem();
  for (auto k : {"x/1", "x/2", "y/1"}) ASSERT_TRUE(s->put(k, "v").ok());
  Txn t;
  t.ops.push_back(Op::del_prefix("x/"));
  ASSERT_TRUE(s->commit(t).ok());
  EXPECT_TRUE(s->prefix("x/")->empty());
  EXPECT_EQ(s->prefix("y/")->size(), 1u);
}

TEST(SqliteMetaStore, LeaseRevokeDeletesKeys) {
  auto s = open_mem();
  int64_t l = *s->grant_lease(60000);
  Txn t;
  t.ops.push_back(Op::put("owned", "v", l));
  ASSERT_TRUE(s->commit(t).ok());
  EXPECT_EQ((*s->get("owned"))->lease, l);
  ASSERT_TRUE(s->revoke_lease(l).ok());
  EXPECT_FALSE(s->get("owned")->has_value());
  EXPECT_FALSE(s->keep_alive(l).ok());
  Txn bad;
  bad.ops.push_back(Op::put("k", "v", 12345));
  EXPECT_FALSE(s->commit(bad).ok());
}

TEST(SqliteMetaStore, LeaseExpiresWithoutKeepAlive) {
  auto s = open_mem();
  int64_t l = *s->grant_lease(1);
  Txn t;
  t.ops.push_back(Op::put("eph", "v", l));
  // The lease may already have expired: then the put fails with kNotFound, which is also expiry.
  bool put_ok = s->commit(t).ok();
  for (int i = 0; i < 2000 && s->get("eph")->has_value(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_FALSE(s->get("eph")->has_value());
  EXPECT_FALSE(s->keep_alive(l).ok());
  (void)put_ok;
}

TEST(SqliteMetaStore, WatchDeliversInRevisionOrder) {
  auto s = open_mem();
  Collector c;
  int64_t w = *s->watch("w/", 0, c.cb());
  ASSERT_TRUE(s->put("w/a", "1").ok());
  ASSERT_TRUE(s->put("other", "x").ok());
  ASSERT_TRUE(s->put("w/b", "2").ok());
  ASSERT_TRUE(s->del("w/a").ok());
  ASSERT_TRUE(c.wait_for(3));
  s->cancel_watch(w);
  std::lock_guard lk(c.mu);
  ASSERT_EQ(c.events.size(), 3u);
  EXPECT_EQ(c.events[0].kv.key, "w/a");
  EXPECT_EQ(c.events[1].kv.key, "w/b");
  EXPECT_EQ(c.events[2].type, WatchEvent::Type::kDelete);
  EXPECT_LT(c.events[0].kv.mod_revision, c.events[1].kv.mod_revision);
}

TEST(SqliteMetaStore, WatchFromRevisionReplaysHistoryOnce) {
  auto s = open_mem();
  ASSERT_TRUE(s->put("h/1", "a").ok());  // rev 1
  ASSERT_TRUE(s->put("h/2", "b").ok());  // rev 2
  ASSERT_TRUE(s->put("h/3", "c").ok());  // rev 3
  Collector c;
  ASSERT_TRUE(s->watch("h/", 1, c.cb()).ok());  // events after revision 1
  ASSERT_TRUE(s->put("h/4", "d").ok());
  ASSERT_TRUE(c.wait_for(3));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::lock_guard lk(c.mu);
  ASSERT_EQ(c.events.size(), 3u);
  EXPECT_EQ(c.events[0].kv.key, "h/2");
  EXPECT_EQ(c.events[2].kv.key, "h/4");
}

TEST(SqliteMetaStore, WatchSeesLeaseExpiry) {
  auto s = open_mem();
  Collector c;
  ASSERT_TRUE(s->watch("l/", 0, c.cb()).ok());
  int64_t l = *s->grant_lease(60000);
  Txn t;
  t.ops.push_back(Op::put("l/x", "v", l));
  ASSERT_TRUE(s->commit(t).ok());
  ASSERT_TRUE(s->revoke_lease(l).ok());
  ASSERT_TRUE(c.wait_for(2));
  std::lock_guard lk(c.mu);
  EXPECT_EQ(c.events[1].type, WatchEvent::Type::kDelete);
}

TEST(SqliteMetaStore, PersistsAcrossReopen) {
  auto dir = std::filesystem::temp_directory_path() / ("shale_meta_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::string path = (dir / "meta.db").string();
  {
    auto s = std::move(SqliteMetaStore::open({path})).value();
    ASSERT_TRUE(s->put("k", "v").ok());
    ASSERT_TRUE(s->put("k2", "v2").ok());
  }
  {
    auto s = std::move(SqliteMetaStore::open({path})).value();
    EXPECT_EQ(*s->revision(), 2);
    EXPECT_EQ((*s->get("k2"))->value, "v2");
    EXPECT_EQ(*s->put("k3", "v3"), 3);
  }
  std::filesystem::remove_all(dir);
}

TEST(SqliteMetaStore, ConcurrentCompareAndPutCountsExactly) {
  auto s = open_mem();
  ASSERT_TRUE(s->put("ctr", "0").ok());
  auto worker = [&] {
    for (int i = 0; i < 100;) {
      auto kv = *s->get("ctr");
      Txn t;
      t.compares.push_back({"ctr", kv->mod_revision});
      t.ops.push_back(Op::put("ctr", std::to_string(std::stoi(kv->value) + 1)));
      if (s->commit(t).ok()) ++i;
    }
  };
  std::thread a(worker), b(worker);
  a.join();
  b.join();
  EXPECT_EQ((*s->get("ctr"))->value, "200");
}

}  // namespace
}  // namespace shale::meta
