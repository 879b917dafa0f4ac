// The MetaStore suite, run against every implementation: the embedded SQLite store and
// EtcdMetaStore on a real etcd started by the fixture (etcd_server.h). Revisions are compared
// relative to the store's revision at the start of a test, since etcd's do not start at 0.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <thread>

#include "etcd_server.h"
#include "meta/etcd_meta_store.h"
#include "meta/sqlite_meta_store.h"

namespace shale::meta {
namespace {

using testing::EtcdServer;

// One etcd per test process, started on first use, killed at exit.
EtcdServer* shared_etcd() {
  static std::unique_ptr<EtcdServer> server;
  static bool tried = false;
  if (!tried) {
    tried = true;
    auto s = std::make_unique<EtcdServer>();
    s->init("default", testing::test_root());
    if (s->start() && s->wait_healthy()) server = std::move(s);
  }
  return server.get();
}

class MetaStoreTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "etcd") {
      ASSERT_FALSE(testing::find_etcd().empty()) << testing::kEtcdMissing;
      ASSERT_NE(shared_etcd(), nullptr) << "etcd did not start (see its log under /dev/shm)";
    }
  }
  void TearDown() override {
    if (!sqlite_dir_.empty()) std::filesystem::remove_all(sqlite_dir_);
  }

  // A fresh, empty store.
  std::unique_ptr<MetaStore> open_mem() {
    if (GetParam() == "sqlite") {
      auto r = SqliteMetaStore::open({":memory:", 10000, 10});
      EXPECT_TRUE(r.ok());
      return std::move(r).value();
    }
    static int n = 0;
    ns_ = "t" + std::to_string(getpid()) + "-" + std::to_string(++n) + "/";
    return open_etcd();
  }
  // A store that reopen_persistent() opens again with the same contents.
  std::unique_ptr<MetaStore> open_persistent() {
    if (GetParam() == "sqlite") {
      sqlite_dir_ =
          std::filesystem::temp_directory_path() / ("shale_meta_" + std::to_string(getpid()));
      std::filesystem::create_directories(sqlite_dir_);
      return std::move(SqliteMetaStore::open({(sqlite_dir_ / "meta.db").string()})).value();
    }
    return open_mem();
  }
  std::unique_ptr<MetaStore> reopen_persistent() {
    if (GetParam() == "sqlite") {
      return std::move(SqliteMetaStore::open({(sqlite_dir_ / "meta.db").string()})).value();
    }
    return open_etcd();
  }

 private:
  std::unique_ptr<MetaStore> open_etcd() {
    EtcdOptions o;
    o.endpoints = {shared_etcd()->endpoint()};
    o.prefix = ns_;
    auto r = EtcdMetaStore::open(o);
    EXPECT_TRUE(r.ok()) << r.error().to_string();
    return std::move(r).value();
  }
  std::string ns_;
  std::filesystem::path sqlite_dir_;
};

INSTANTIATE_TEST_SUITE_P(Backends, MetaStoreTest, ::testing::Values("sqlite", "etcd"),
                         [](const auto& info) { return info.param; });

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

TEST_P(MetaStoreTest, PutGetRevisions) {
  auto s = open_mem();
  const int64_t base = *s->revision();
  EXPECT_EQ(*s->put("a", "1"), base + 1);
  EXPECT_EQ(*s->put("a", "2"), base + 2);
  auto kv = s->get("a");
  ASSERT_TRUE(kv.ok() && kv->has_value());
  EXPECT_EQ((*kv)->value, "2");
  EXPECT_EQ((*kv)->create_revision, base + 1);
  EXPECT_EQ((*kv)->mod_revision, base + 2);
  EXPECT_FALSE(s->get("b")->has_value());
  EXPECT_EQ(*s->del("a"), base + 3);
  EXPECT_FALSE(s->get("a")->has_value());
}

TEST_P(MetaStoreTest, CompareAndPut) {
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

TEST_P(MetaStoreTest, FailedTxnChangesNothing) {
  auto s = open_mem();
  ASSERT_TRUE(s->put("a", "1").ok());
  const int64_t rev = *s->revision();
  Txn t;
  t.compares.push_back({"a", 999});
  t.ops.push_back(Op::put("b", "2"));
  EXPECT_FALSE(s->commit(t).ok());
  EXPECT_FALSE(s->get("b")->has_value());
  EXPECT_EQ(*s->revision(), rev);
}

TEST_P(MetaStoreTest, RangeAndPrefixAreOrderedAndBinarySafe) {
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

TEST_P(MetaStoreTest, DeletePrefix) {
  auto s = open_mem();
  for (auto k : {"x/1", "x/2", "y/1"}) ASSERT_TRUE(s->put(k, "v").ok());
  Txn t;
  t.ops.push_back(Op::del_prefix("x/"));
  ASSERT_TRUE(s->commit(t).ok());
  EXPECT_TRUE(s->prefix("x/")->empty());
  EXPECT_EQ(s->prefix("y/")->size(), 1u);
}

TEST_P(MetaStoreTest, LeaseRevokeDeletesKeys) {
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

TEST_P(MetaStoreTest, LeaseExpiresWithoutKeepAlive) {
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

TEST_P(MetaStoreTest, WatchDeliversInRevisionOrder) {
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

TEST_P(MetaStoreTest, WatchFromRevisionReplaysHistoryOnce) {
  auto s = open_mem();
  const int64_t r1 = *s->put("h/1", "a");
  ASSERT_TRUE(s->put("h/2", "b").ok());
  ASSERT_TRUE(s->put("h/3", "c").ok());
  Collector c;
  ASSERT_TRUE(s->watch("h/", r1, c.cb()).ok());  // events after h/1's revision
  ASSERT_TRUE(s->put("h/4", "d").ok());
  ASSERT_TRUE(c.wait_for(3));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::lock_guard lk(c.mu);
  ASSERT_EQ(c.events.size(), 3u);
  EXPECT_EQ(c.events[0].kv.key, "h/2");
  EXPECT_EQ(c.events[2].kv.key, "h/4");
}

TEST_P(MetaStoreTest, WatchSeesLeaseExpiry) {
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

TEST_P(MetaStoreTest, PersistsAcrossReopen) {
  int64_t rev = 0;
  {
    auto s = open_persistent();
    ASSERT_TRUE(s->put("k", "v").ok());
    rev = *s->put("k2", "v2");
  }
  {
    auto s = reopen_persistent();
    EXPECT_EQ(*s->revision(), rev);
    EXPECT_EQ((*s->get("k2"))->value, "v2");
    EXPECT_EQ(*s->put("k3", "v3"), rev + 1);
  }
}

TEST_P(MetaStoreTest, ConcurrentCompareAndPutCountsExactly) {
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
