// EtcdMetaStore against real etcd members: what only a network store has — watches across an
// etcd restart, compaction and a leader change, lease expiry and keep-alive, etcd's limits,
// endpoint fail-over, parsing of metadata.store URIs. The shared MetaStore suite is in
// meta_store_test.cc.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

#include "base/clock.h"
#include "etcd_server.h"
#include "meta/etcd_meta_store.h"
#include "meta/lease_keeper.h"
#include "meta/open_store.h"
#include "meta/sqlite_meta_store.h"

namespace shale::meta {
namespace {

using testing::EtcdServer;

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
  bool wait_for(size_t n, int seconds = 20) {
    std::unique_lock lk(mu);
    return cv.wait_for(lk, std::chrono::seconds(seconds), [&] { return events.size() >= n; });
  }
  std::vector<WatchEvent> snapshot() {
    std::lock_guard lk(mu);
    return events;
  }
};

class EtcdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(testing::find_etcd().empty()) << testing::kEtcdMissing;
    root_ = testing::test_root();
  }
  void TearDown() override {
    servers_.clear();
    std::filesystem::remove_all(root_);
  }
  EtcdServer& start_one() {
    servers_.push_back(std::make_unique<EtcdServer>());
    auto& s = *servers_.back();
    s.init("m" + std::to_string(servers_.size()), root_);
    EXPECT_TRUE(s.start());
    EXPECT_TRUE(s.wait_healthy());
    return s;
  }
  std::unique_ptr<EtcdMetaStore> open(std::vector<std::string> eps, EtcdOptions o = {}) {
    o.endpoints = std::move(eps);
    o.prefix = "ns/";
    auto r = EtcdMetaStore::open(o);
    EXPECT_TRUE(r.ok()) << r.error().to_string();
    return r.ok() ? std::move(r).value() : nullptr;
  }
  // Puts until etcd is back (after a restart): the first writes may fail.
  static int64_t put_retrying(MetaStore& s, const std::string& k, const std::string& v) {
    for (int i = 0; i < 400; ++i) {
      auto r = s.put(k, v);
      if (r.ok()) return *r;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ADD_FAILURE() << "put " << k << " kept failing";
    return 0;
  }

  std::filesystem::path root_;
  std::vector<std::unique_ptr<EtcdServer>> servers_;
};

TEST(EtcdUri, Parses) {
  auto o = parse_etcd_uri("etcd://a:1,b:2/shale/prod");
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->endpoints, (std::vector<std::string>{"a:1", "b:2"}));
  EXPECT_EQ(o->prefix, "shale/prod");
  EXPECT_EQ(parse_etcd_uri("etcd://h:2379")->prefix, "");
  EXPECT_FALSE(parse_etcd_uri("etcd://h").ok());
  EXPECT_FALSE(parse_etcd_uri("etcd://h:x").ok());
  EXPECT_FALSE(parse_etcd_uri("http://h:1").ok());
  EXPECT_EQ(validate_store_uri("sqlite"), "");
  EXPECT_NE(validate_store_uri("mysql://x"), "");
}

TEST(LeaseKeeperTest, KeepsSqliteLeaseAliveAndReportsRevocation) {
  auto s = std::move(SqliteMetaStore::open({":memory:", 10000, 10})).value();
  auto k = LeaseKeeper::start(s.get(), 150);
  ASSERT_TRUE(k.ok());
  Txn t;
  t.ops.push_back(Op::put("eph", "v", (*k)->lease()));
  ASSERT_TRUE(s->commit(t).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  EXPECT_TRUE(s->get("eph")->has_value());
  EXPECT_TRUE((*k)->valid());
  EXPECT_LE((*k)->valid_until_ms(), clock::mono_ms() + 150);
  ASSERT_TRUE((*k)->revoke().ok());
  EXPECT_FALSE((*k)->valid());
  EXPECT_FALSE(s->get("eph")->has_value());
}

TEST(LeaseKeeperTest, RegrantsALostLease) {
  auto s = std::move(SqliteMetaStore::open({":memory:", 10000, 10})).value();
  std::atomic<int> lapses{0};
  auto k = LeaseKeeper::start(
      s.get(), 90, [&] { ++lapses; }, true);
  ASSERT_TRUE(k.ok());
  int64_t first = (*k)->lease();
  ASSERT_TRUE(s->revoke_lease(first).ok());
  for (int i = 0; i < 200 && (*k)->lease() == first; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_NE((*k)->lease(), first);
  EXPECT_GE(lapses.load(), 1);
  EXPECT_FALSE((*k)->expired());
  for (int i = 0; i < 200 && !(*k)->valid(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE((*k)->valid());
  EXPECT_TRUE(s->keep_alive((*k)->lease()).ok());
}

TEST_F(EtcdTest, LeaseExpiresWithoutKeepAliveAndKeeperKeepsItsKeys) {
  auto& e = start_one();
  auto s = open({e.endpoint()});
  ASSERT_TRUE(s);
  auto kept = LeaseKeeper::start(s.get(), 2000);
  ASSERT_TRUE(kept.ok());
  int64_t lone = *s->grant_lease(2000);
  Txn t;
  t.ops.push_back(Op::put("kept", "v", (*kept)->lease()));
  t.ops.push_back(Op::put("lone", "v", lone));
  ASSERT_TRUE(s->commit(t).ok());
  EXPECT_EQ((*s->get("lone"))->lease, lone);
  for (int i = 0; i < 100 && s->get("lone")->has_value(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_FALSE(s->get("lone")->has_value());
  EXPECT_EQ(s->keep_alive(lone).error().code, Errc::kNotFound);
  EXPECT_TRUE(s->get("kept")->has_value());
  EXPECT_TRUE((*kept)->valid());
  EXPECT_GT((*kept)->valid_until_ms(), clock::mono_ms());
}

TEST_F(EtcdTest, TooManyOpsFailsNamingTheFlag) {
  auto& e = start_one();
  auto s = open({e.endpoint()});
  ASSERT_TRUE(s);
  Txn t;
  for (int i = 0; i < 129; ++i) t.ops.push_back(Op::put("k" + std::to_string(i), "v"));
  auto r = s->commit(t);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::kInvalidArgument);
  EXPECT_NE(r.error().message.find("--max-txn-ops"), std::string::npos) << r.error().message;
  Txn big;
  big.ops.push_back(Op::put("big", std::string(2 << 20, 'x')));
  auto b = s->commit(big);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.error().message.find("--max-request-bytes"), std::string::npos);
  // Configured above what the server accepts: open() says which etcd flag to raise.
  EtcdOptions o;
  o.endpoints = {e.endpoint()};
  o.max_txn_ops = 500;
  auto bad = EtcdMetaStore::open(o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("--max-txn-ops"), std::string::npos) << bad.error().message;
}

TEST_F(EtcdTest, FirstEndpointDeadFailsOver) {
  auto& e = start_one();
  std::string dead = "127.0.0.1:" + std::to_string(testing::free_port());
  auto s = open({dead, e.endpoint()});
  ASSERT_TRUE(s);
  Collector c;
  ASSERT_TRUE(s->watch("w/", 0, c.cb()).ok());
  ASSERT_TRUE(s->put("w/a", "1").ok());
  EXPECT_EQ((*s->get("w/a"))->value, "1");
  EXPECT_TRUE(c.wait_for(1));
}

TEST_F(EtcdTest, WatchResumesAcrossEtcdRestartWithoutLoss) {
  auto& e = start_one();
  EtcdOptions o;
  o.request_timeout_ms = 1000;
  auto s = open({e.endpoint()}, o);
  ASSERT_TRUE(s);
  Collector c;
  ASSERT_TRUE(s->watch("r/", 0, c.cb()).ok());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(s->put("r/" + std::to_string(i), "v").ok());
  ASSERT_TRUE(c.wait_for(3));
  e.kill();
  EXPECT_FALSE(s->put("r/down", "v").ok());  // unreachable: an error, not a hang
  ASSERT_TRUE(e.start());
  ASSERT_TRUE(e.wait_healthy());
  for (int i = 3; i < 6; ++i) put_retrying(*s, "r/" + std::to_string(i), "v");
  ASSERT_TRUE(c.wait_for(6));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  auto evs = c.snapshot();
  ASSERT_EQ(evs.size(), 6u);
  for (size_t i = 0; i < evs.size(); ++i) {
    EXPECT_EQ(evs[i].kv.key, "r/" + std::to_string(i));
    if (i > 0) {
      EXPECT_LT(evs[i - 1].kv.mod_revision, evs[i].kv.mod_revision);
    }
  }
}

TEST_F(EtcdTest, WatchReloadsAfterCompaction) {
  auto& e = start_one();
  // The watcher reaches etcd through a proxy that the test cuts (a partition) while a second
  // client writes and compacts etcd's history past what the watcher saw.
  testing::TcpProxy proxy(std::stoi(e.endpoint().substr(e.endpoint().rfind(':') + 1)));
  auto s = open({proxy.endpoint()});
  auto writer = open({e.endpoint()});
  ASSERT_TRUE(s && writer);
  ASSERT_TRUE(writer->put("c/old", "1").ok());
  ASSERT_TRUE(writer->put("c/keep", "1").ok());
  Collector c;
  ASSERT_TRUE(s->watch("c/", 0, c.cb()).ok());
  ASSERT_TRUE(writer->put("c/seen", "1").ok());
  ASSERT_TRUE(c.wait_for(1));
  proxy.set_up(false);
  ASSERT_TRUE(writer->put("c/new", "2").ok());
  ASSERT_TRUE(writer->del("c/old").ok());
  ASSERT_TRUE(writer->put("c/new", "3").ok());
  int64_t rev = *writer->revision();
  std::string body = "{\"revision\":\"" + std::to_string(rev) + "\",\"physical\":true}";
  ASSERT_NE(testing::http(e.client_url() + "/v3/kv/compaction", body), "");
  proxy.set_up(true);
  ASSERT_TRUE(c.wait_for(3, 30));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  auto evs = c.snapshot();
  ASSERT_EQ(evs.size(), 3u);
  EXPECT_EQ(evs[0].kv.key, "c/seen");
  // Synthesized: c/old deleted, c/new put with its latest value; c/keep untouched.
  std::set<std::string> got;
  for (size_t i = 1; i < evs.size(); ++i) {
    got.insert(evs[i].kv.key +
               (evs[i].type == WatchEvent::Type::kPut ? "=" + evs[i].kv.value : " deleted"));
    EXPECT_LE(evs[i].kv.mod_revision, rev);
    EXPECT_GE(evs[i].kv.mod_revision, evs[i - 1].kv.mod_revision);
  }
  EXPECT_EQ(got, (std::set<std::string>{"c/new=3", "c/old deleted"}));
  // And it keeps watching.
  ASSERT_TRUE(writer->put("c/after", "x").ok());
  ASSERT_TRUE(c.wait_for(4));
  EXPECT_EQ(c.snapshot()[3].kv.key, "c/after");
}

// Cut off from etcd (not etcd down: a partition), the keeper's lease lapses and calls
// report errors, not hangs; when the link returns the keeper is valid again (the lease renewed,
// or, if etcd expired it meanwhile, granted anew).
TEST_F(EtcdTest, PartitionedClientLapsesAndRecovers) {
  auto& e = start_one();
  testing::TcpProxy proxy(std::stoi(e.endpoint().substr(e.endpoint().rfind(':') + 1)));
  EtcdOptions o;
  o.request_timeout_ms = 300;
  auto s = open({proxy.endpoint()}, o);
  ASSERT_TRUE(s);
  std::atomic<int> lapses{0};
  auto k = LeaseKeeper::start(
      s.get(), 2000, [&] { ++lapses; }, true);
  ASSERT_TRUE(k.ok());
  EXPECT_TRUE((*k)->valid());
  proxy.set_up(false);
  EXPECT_FALSE(s->put("p/x", "1").ok());
  int64_t until = (*k)->valid_until_ms();
  for (int i = 0; i < 200 && (*k)->valid(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_FALSE((*k)->valid());
  EXPECT_GE(clock::mono_ms(), until);
  EXPECT_GE(lapses.load(), 1);
  proxy.set_up(true);
  for (int i = 0; i < 200 && !(*k)->valid(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE((*k)->valid());
  EXPECT_TRUE(s->keep_alive((*k)->lease()).ok());
  EXPECT_TRUE(s->put("p/x", "1").ok());
}

TEST_F(EtcdTest, EmptyNamespaceReadsAndDeletesEverything) {
  auto& e = start_one();
  EtcdOptions o;
  o.endpoints = {e.endpoint()};
  auto s = std::move(EtcdMetaStore::open(o)).value();  // no prefix: etcd's whole key space
  ASSERT_TRUE(s->put("a", "1").ok());
  ASSERT_TRUE(s->put("b", "2").ok());
  EXPECT_EQ(s->prefix("")->size(), 2u);
  EXPECT_EQ(s->range("", std::string(1, '\0'))->size(), 2u);
  Txn t;
  t.ops.push_back(Op::del_prefix(""));
  ASSERT_TRUE(s->commit(t).ok());
  EXPECT_TRUE(s->prefix("")->empty());
}

// A server that answers every request with one fixed HTTP body, for malformed answers.
class FakeEtcd {
 public:
  explicit FakeEtcd(std::string body) : body_(std::move(body)) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    listen(fd_, 8);
    thread_ = std::thread([this] { serve(); });
  }
  ~FakeEtcd() {
    shutdown(fd_, SHUT_RDWR);
    close(fd_);
    thread_.join();
  }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(port_); }
  void set_body(std::string b) {
    std::lock_guard lk(mu_);
    body_ = std::move(b);
  }

 private:
  void serve() {
    for (;;) {
      int c = accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      std::string req;
      char buf[65536];
      size_t need = std::string::npos;
      while (need == std::string::npos || req.size() < need) {
        ssize_t n = read(c, buf, sizeof buf);
        if (n <= 0) break;
        req.append(buf, static_cast<size_t>(n));
        auto hdr_end = req.find("\r\n\r\n");
        if (need == std::string::npos && hdr_end != std::string::npos) {
          auto cl = req.find("Content-Length: ");
          size_t body = cl == std::string::npos ? 0 : std::stoul(req.substr(cl + 16));
          need = hdr_end + 4 + body;
        }
      }
      std::string b;
      {
        std::lock_guard lk(mu_);
        b = body_;
      }
      std::string resp = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                         std::to_string(b.size()) + "\r\nConnection: close\r\n\r\n" + b;
      (void)!write(c, resp.data(), resp.size());
      close(c);
    }
  }
  std::mutex mu_;
  std::string body_;
  int fd_ = -1;
  int port_ = 0;
  std::thread thread_;
};

TEST(EtcdMalformed, AnswersAreErrorsNotCrashes) {
  FakeEtcd fake("not json");
  EtcdOptions o;
  o.endpoints = {fake.endpoint()};
  o.request_timeout_ms = 500;
  EXPECT_FALSE(EtcdMetaStore::open(o).ok());
  fake.set_body("{}");  // passes the start-up probe
  auto s = std::move(EtcdMetaStore::open(o)).value();
  for (const char* body :
       {R"({"kvs":[{"key":"!!!"}]})", R"({"kvs":"x"})",
        R"({"kvs":[{"key":"YQ==","mod_revision":"z"}]})", R"({"header":{"revision":[1]}})",
        R"({"kvs":[5]})", R"([1,2])", R"({"succeeded":"yes"})",
        R"({"code":14,"message":"etcdserver: no leader"})"}) {
    fake.set_body(body);
    auto g = s->get("a");
    auto r = s->revision();
    auto c = s->commit(Txn{{}, {Op::put("a", "b")}});
    auto l = s->grant_lease(1000);
    if (std::string(body).find("kvs") != std::string::npos) {
      EXPECT_FALSE(g.ok()) << body;
    }
    (void)r;
    (void)c;
    (void)l;
  }
  fake.set_body(R"({"result":{"header":{},"events":[{"kv":{"key":"%%"}}]}})"
                "\n");
  Collector col;
  // Whether or not the watch starts, a malformed event must not crash the reader (it
  // reconnects, and keeps failing on this server).
  auto w = s->watch("w/", 1, col.cb());
  (void)w;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_TRUE(col.snapshot().empty());
}

// Three members; the leader is killed while commits go on and a watch follows them.
TEST_F(EtcdTest, ThreeMembersSurviveLeaderLoss) {
  for (int i = 0; i < 3; ++i) {
    servers_.push_back(std::make_unique<EtcdServer>());
    servers_.back()->init("m" + std::to_string(i), root_);
  }
  std::string cluster;
  for (auto& m : servers_)
    cluster += (cluster.empty() ? "" : ",") + m->name() + "=" + m->peer_url();
  for (auto& m : servers_) ASSERT_TRUE(m->start(cluster));
  for (auto& m : servers_) ASSERT_TRUE(m->wait_healthy());
  std::vector<std::string> eps;
  for (auto& m : servers_) eps.push_back(m->endpoint());
  auto s = open(eps);
  ASSERT_TRUE(s);
  Collector c;
  ASSERT_TRUE(s->watch("x/", 0, c.cb()).ok());
  // Which member leads? Its status says leader == its own member id.
  size_t leader = 0;
  for (size_t i = 0; i < servers_.size(); ++i) {
    std::string st = testing::http(servers_[i]->client_url() + "/v3/maintenance/status", "{}");
    auto id_at = st.find("\"member_id\":\"");
    auto ld_at = st.find("\"leader\":\"");
    if (id_at == std::string::npos || ld_at == std::string::npos) continue;
    std::string id = st.substr(id_at + 13, st.find('"', id_at + 13) - id_at - 13);
    std::string ld = st.substr(ld_at + 10, st.find('"', ld_at + 10) - ld_at - 10);
    if (id == ld) leader = i;
  }
  std::set<std::string> committed;
  for (int i = 0; i < 60; ++i) {
    if (i == 20) servers_[leader]->kill();
    std::string k = "x/" + std::to_string(100 + i);
    for (int attempt = 0; attempt < 100; ++attempt) {
      Txn t;
      t.compares.push_back({k, 0});
      t.ops.push_back(Op::put(k, "v"));
      auto r = s->commit(t);
      if (r.ok() || r.error().code == Errc::kConflict) break;  // conflict: an earlier try landed
      ASSERT_TRUE(r.error().retryable) << r.error().to_string();
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    committed.insert(k);
  }
  ASSERT_TRUE(c.wait_for(60, 30));
  auto evs = c.snapshot();
  std::set<std::string> seen;
  for (size_t i = 0; i < evs.size(); ++i) {
    seen.insert(evs[i].kv.key);
    if (i > 0) {
      EXPECT_LT(evs[i - 1].kv.mod_revision, evs[i].kv.mod_revision);
    }
  }
  EXPECT_EQ(seen, committed);
  EXPECT_EQ(evs.size(), 60u);
}

}  // namespace
}  // namespace shale::meta
