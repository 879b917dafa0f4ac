// Partition ownership (broker/ownership.h): three brokers in one process on one SqliteMetaStore
// and one object store (a FaultInjectingStore over a MemoryStore), each with its own storage
// engine and WAL, lease, cluster::Member and Ownership — as three `shale serve` would be.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <mutex>
#include <random>
#include <thread>

#include <asio/co_spawn.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/use_future.hpp>

#include "broker/broker.h"
#include "broker/handlers.h"
#include "broker/ownership.h"
#include "cluster/member.h"
#include "group/coordinator.h"
#include "meta/lease_keeper.h"
#include "meta/sqlite_meta_store.h"
#include "objstore/fault_injecting_store.h"
#include "objstore/memory_store.h"
#include "protocol/record_batch.h"
#include "storage/engine.h"

namespace shale::broker {
namespace {

namespace fs = std::filesystem;
using protocol::ErrorCode;

constexpr int64_t kWaitMs = 20000;

bool eventually(const std::function<bool()>& pred, int64_t timeout_ms = kWaitMs) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return pred();
}

storage::EngineOptions engine_options(int32_t node, const std::string& wal_path) {
  storage::EngineOptions o;
  o.node_id = node;
  o.wal_path = "file://" + wal_path;
  o.wal_capacity = 16 << 20;
  o.wal_max_write = 256 << 10;
  o.log_cache_size = 8 << 20;
  o.block_cache_size = 4 << 20;
  o.upload_threshold = 1 << 20;
  o.stream_split_size = 256 << 10;
  o.object_block_size = 16 << 10;
  o.object_part_size = 1 << 20;
  o.upload_interval_ms = -1;  // data stays in the WAL until a close, a flush or a shutdown
  o.compaction_interval_ms = 0;
  o.object_delete_delay_ms = 0;
  return o;
}

// The broker's MetaStore: passes everything through, but can deliver the watch events on
// assignment records `lag` ms late (a watch stream lagging under load, as seen on a loaded
// machine with three etcd members), in order, on its own thread.
class LaggingAssignWatchStore : public meta::MetaStore {
 public:
  explicit LaggingAssignWatchStore(meta::MetaStore* inner)
      : in_(inner), thread_([this] { deliver(); }) {}
  ~LaggingAssignWatchStore() override {
    {
      std::lock_guard lk(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void set_lag_ms(int64_t ms) { lag_ms_ = ms; }

  Result<std::optional<meta::KeyValue>> get(std::string_view key) override { return in_->get(key); }
  Result<std::vector<meta::KeyValue>> range(std::string_view b, std::string_view e,
                                            size_t limit) override {
    return in_->range(b, e, limit);
  }
  Result<std::vector<meta::KeyValue>> prefix(std::string_view p, size_t limit) override {
    return in_->prefix(p, limit);
  }
  Result<int64_t> commit(const meta::Txn& t) override { return in_->commit(t); }
  Result<int64_t> revision() override { return in_->revision(); }
  Result<int64_t> grant_lease(int64_t ttl_ms) override { return in_->grant_lease(ttl_ms); }
  Status keep_alive(int64_t lease) override { return in_->keep_alive(lease); }
  Status revoke_lease(int64_t lease) override { return in_->revoke_lease(lease); }
  Result<int64_t> watch(std::string_view p, int64_t from, meta::WatchCallback cb) override {
    if (p.find("/assign/") == std::string_view::npos) return in_->watch(p, from, std::move(cb));
    auto alive = std::make_shared<bool>(true);
    auto target = std::make_shared<meta::WatchCallback>(std::move(cb));
    auto id = in_->watch(p, from, [this, alive, target](const std::vector<meta::WatchEvent>& e) {
      std::lock_guard lk(mu_);
      if (lag_ms_ == 0 && queue_.empty()) {
        if (*alive) (*target)(e);
        return;
      }
      queue_.push_back({std::chrono::steady_clock::now() + std::chrono::milliseconds(lag_ms_),
                        alive, target, e});
      cv_.notify_all();
    });
    if (id.ok()) {
      std::lock_guard lk(mu_);
      alive_[*id] = alive;
    }
    return id;
  }
  void cancel_watch(int64_t id) override {
    in_->cancel_watch(id);
    std::lock_guard lk(mu_);  // waits out a delivery in progress
    if (auto it = alive_.find(id); it != alive_.end()) {
      *it->second = false;
      alive_.erase(it);
    }
  }

 private:
  struct Pending {
    std::chrono::steady_clock::time_point due;
    std::shared_ptr<bool> alive;
    std::shared_ptr<meta::WatchCallback> cb;
    std::vector<meta::WatchEvent> events;
  };
  void deliver() {
    std::unique_lock lk(mu_);
    while (!stop_) {
      if (queue_.empty()) {
        cv_.wait(lk);
        continue;
      }
      if (std::chrono::steady_clock::now() < queue_.front().due) {
        cv_.wait_until(lk, queue_.front().due);
        continue;
      }
      Pending p = std::move(queue_.front());
      queue_.pop_front();
      if (*p.alive) (*p.cb)(p.events);
    }
  }

  meta::MetaStore* in_;
  std::atomic<int64_t> lag_ms_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::deque<Pending> queue_;
  std::map<int64_t, std::shared_ptr<bool>> alive_;
  std::thread thread_;
};

struct Node {
  int32_t id = 0;
  std::unique_ptr<LaggingAssignWatchStore> store;  // the broker's view of meta_
  std::unique_ptr<storage::Engine> engine;
  std::unique_ptr<meta::LeaseKeeper> lease;
  std::unique_ptr<cluster::Member> member;
  std::unique_ptr<Broker> broker;
  std::unique_ptr<Ownership> own;
};

class OwnershipTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("shale_ownership_test_" + std::to_string(::getpid()) + "_" +
                                        std::to_string(std::random_device{}()));
    fs::create_directories(dir_);
    auto m = meta::SqliteMetaStore::open({(dir_ / "meta.db").string()});
    ASSERT_TRUE(m.ok()) << m.error().to_string();
    meta_ = std::move(m).value();
    guard_.emplace(io_.get_executor());
    io_thread_ = std::thread([this] { io_.run(); });
    for (int32_t id = 1; id <= 3; ++id) ASSERT_NO_FATAL_FAILURE(start(id));
    ASSERT_TRUE(eventually([&] { return nodes_[1]->member->live().size() == 3; }));
  }

  void TearDown() override {
    for (auto& [id, n] : nodes_) stop(*n, true);
    nodes_.clear();
    guard_.reset();
    io_.stop();
    io_thread_.join();
    meta_.reset();
    fs::remove_all(dir_);
  }

  std::string wal_path(int32_t id) const { return (dir_ / ("wal" + std::to_string(id))).string(); }

  void start(int32_t id) {
    auto n = std::make_unique<Node>();
    n->id = id;
    auto e = storage::Engine::open(engine_options(id, wal_path(id)), &objects_, meta_.get());
    ASSERT_TRUE(e.ok()) << e.error().to_string();
    n->engine = std::move(e).value();
    auto k = meta::LeaseKeeper::start(meta_.get(), kTtlMs, {}, true);
    ASSERT_TRUE(k.ok()) << k.error().to_string();
    n->lease = std::move(k).value();
    cluster::MemberOptions mo;
    mo.ns = "shale";
    mo.self.id = id;
    mo.self.listeners["PLAINTEXT"] = "127.0.0.1:" + std::to_string(19000 + id);
    mo.self.wal_uri = "file://" + wal_path(id);
    mo.tick_ms = 20;
    mo.register_wait_ms = kTtlMs + 1000;
    auto m = cluster::Member::start(meta_.get(), n->lease.get(), mo);
    ASSERT_TRUE(m.ok()) << m.error().to_string();
    n->member = std::move(m).value();
    ASSERT_TRUE(meta_->put(n->member->keys().wal(id), mo.self.wal_uri).ok());
    BrokerConfig cfg;
    cfg.node_id = id;
    cfg.cluster_id = "ownership-test-cluster";
    cfg.worker_threads = 2;
    cfg.endpoints = {{"PLAINTEXT", "127.0.0.1", 19000 + id}};
    n->store = std::make_unique<LaggingAssignWatchStore>(meta_.get());
    n->broker = std::make_unique<Broker>(cfg, n->engine.get(), n->store.get());
    n->broker->set_ack_gate([l = n->lease.get()] { return l->valid(); });
    Ownership::Options oo;
    oo.tick_ms = 20;
    oo.recover_wal = [this](int32_t node, const std::string& uri) -> Status {
      ++recoveries_;
      auto o = engine_options(node, uri.substr(std::string("file://").size()));
      auto e = storage::Engine::open(o, &objects_, meta_.get());
      if (!e.ok()) return std::move(e).error();
      (*e)->shutdown();
      return ok_status();
    };
    oo.group_shards = kShards;
    auto o = Ownership::start(n->broker.get(), n->member.get(), oo);
    ASSERT_TRUE(o.ok()) << o.error().to_string();
    n->own = std::move(o).value();
    n->own->set_group_shard_hooks(
        [this, id](int32_t shard) {
          std::lock_guard lk(shards_mu_);
          shards_[id].insert(shard);
          return ok_status();
        },
        [this, id](int32_t shard) {
          std::lock_guard lk(shards_mu_);
          shards_[id].erase(shard);
        });
    n->broker->set_ownership(n->own.get());
    ASSERT_TRUE(n->broker->start().ok());
    n->own->kick();
    nodes_[id] = std::move(n);
  }

  // clean: revoke the lease (a SIGTERM); else let it lapse (a crash as far as the others can
  // tell — the engine still shuts down in-process).
  void stop(Node& n, bool clean) {
    if (n.own) n.own->stop();
    {
      std::lock_guard lk(shards_mu_);
      shards_.erase(n.id);  // whatever it coordinated is gone with it
    }
    if (n.broker) {
      n.broker->stop();
      n.broker->set_ownership(nullptr);
    }
    n.own.reset();
    n.broker.reset();
    n.store.reset();
    if (n.engine) n.engine->shutdown();
    n.engine.reset();
    n.member.reset();
    if (n.lease && clean) (void)n.lease->revoke();
    n.lease.reset();
  }

  template <typename T>
  T run(asio::awaitable<T> aw) {
    return asio::co_spawn(io_, std::move(aw), asio::use_future).get();
  }

  // Which nodes serve partition p of `topic`.
  std::vector<int32_t> servers(const std::string& topic, int32_t p) {
    std::vector<int32_t> out;
    for (auto& [id, n] : nodes_) {
      if (!n->broker) continue;
      auto part = n->broker->topics().partition(topic, p);
      if (part && part->serving()) out.push_back(id);
    }
    return out;
  }

  int16_t produce(Node& n, const std::string& topic, int32_t p, int records, int64_t* base) {
    protocol::RecordBatchBuilder b;
    for (int i = 0; i < records; ++i) b.add(1000 + i, std::nullopt, "v" + std::to_string(i));
    protocol::ProduceRequest req;
    req.acks = -1;
    req.timeout_ms = 30000;
    auto& td = req.topic_data.emplace_back();
    td.name = topic;
    td.partition_data.push_back({p, b.build()});
    auto resp = run(handle_produce(*n.broker, 9, std::move(req)));
    const auto& pr = resp.responses.at(0).partition_responses.at(0);
    if (base != nullptr) *base = pr.base_offset;
    return pr.error_code;
  }

  // Which nodes have group coordinator shard `shard` loaded.
  std::vector<int32_t> shard_servers(int32_t shard) {
    std::lock_guard lk(shards_mu_);
    std::vector<int32_t> out;
    for (const auto& [id, set] : shards_)
      if (set.contains(shard)) out.push_back(id);
    return out;
  }
  bool every_shard_served_once(int32_t not_by = -1) {
    for (int32_t g = 0; g < kShards; ++g) {
      auto s = shard_servers(g);
      if (s.size() != 1 || s.front() == not_by) return false;
    }
    return true;
  }

  // A Fetch v16 (topic ids, KIP-951 hints) of one partition from offset 0.
  protocol::FetchResponse fetch(Node& n, const protocol::Uuid& topic_id, int32_t p) {
    protocol::FetchRequest req;
    req.max_wait_ms = 0;
    req.min_bytes = 0;
    req.max_bytes = 1 << 20;
    auto& ft = req.topics.emplace_back();
    ft.topic_id = topic_id;
    auto& fp = ft.partitions.emplace_back();
    fp.partition = p;
    fp.fetch_offset = 0;
    fp.partition_max_bytes = 1 << 20;
    return run(handle_fetch(*n.broker, 16, std::move(req)));
  }

  static constexpr int64_t kTtlMs = 1500;
  static constexpr int32_t kShards = 6;
  std::mutex shards_mu_;
  std::map<int32_t, std::set<int32_t>> shards_;
  fs::path dir_;
  std::unique_ptr<meta::SqliteMetaStore> meta_;
  objstore::MemoryStore mem_;
  objstore::FaultInjectingStore objects_{mem_};
  std::map<int32_t, std::unique_ptr<Node>> nodes_;
  std::atomic<int> recoveries_{0};
  asio::io_context io_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> guard_;
  std::thread io_thread_;
};

TEST_F(OwnershipTest, NewPartitionsAreSpreadAndServedByExactlyTheirOwner) {
  ASSERT_TRUE(nodes_[2]->broker->topics().create("t", 6, {}).ok());
  for (int32_t p = 0; p < 6; ++p) {
    ASSERT_TRUE(eventually([&] { return servers("t", p).size() == 1; })) << "partition " << p;
  }
  std::map<int32_t, int> per_node;
  for (int32_t p = 0; p < 6; ++p) {
    const int32_t owner = servers("t", p).front();
    ++per_node[owner];
    TopicPtr t = nodes_[1]->broker->topics().find("t");
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(nodes_[1]->own->leader(t->id, p).id, owner);
    // The owner acknowledges; the others answer NOT_LEADER_OR_FOLLOWER.
    for (auto& [id, n] : nodes_) {
      int64_t base = -1;
      const int16_t err = produce(*n, "t", p, 3, &base);
      if (id == owner) {
        EXPECT_EQ(err, 0) << "owner " << id << " partition " << p;
      } else {
        EXPECT_EQ(err, static_cast<int16_t>(ErrorCode::kNotLeaderOrFollower)) << id;
        // Fetch names the owner and its endpoint (KIP-951).
        auto f = fetch(*n, t->id, p);
        const auto& pd = f.responses.at(0).partitions.at(0);
        EXPECT_EQ(pd.error_code, static_cast<int16_t>(ErrorCode::kNotLeaderOrFollower));
        EXPECT_EQ(pd.current_leader.leader_id, owner);
        EXPECT_EQ(pd.current_leader.leader_epoch, 0);
        ASSERT_EQ(f.node_endpoints.size(), 1u);
        EXPECT_EQ(f.node_endpoints[0].node_id, owner);
        EXPECT_EQ(f.node_endpoints[0].port, 19000 + owner);
      }
    }
  }
  EXPECT_EQ(per_node, (std::map<int32_t, int>{{1, 2}, {2, 2}, {3, 2}}));
}

TEST_F(OwnershipTest, MoveKeepsEveryAcknowledgedRecordAndRaisesTheLeaderEpoch) {
  ASSERT_TRUE(nodes_[1]->broker->topics().create("m", 1, {}).ok());
  ASSERT_TRUE(eventually([&] { return servers("m", 0).size() == 1; }));
  int32_t owner = servers("m", 0).front();
  int64_t acked = 0;
  for (int round = 0; round < 4; ++round) {
    int64_t base = -1;
    ASSERT_EQ(produce(*nodes_[owner], "m", 0, 5, &base), 0);
    EXPECT_EQ(base, acked);
    acked += 5;
    const int32_t target = owner % 3 + 1;
    TopicPtr t = nodes_[owner]->broker->topics().find("m");
    auto r = nodes_[target]->own->reassign(t->id, 0, target);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    ASSERT_TRUE(eventually([&] {
      auto s = servers("m", 0);
      return s.size() == 1 && s.front() == target;
    })) << "round "
        << round;
    auto part = nodes_[target]->broker->topics().partition("m", 0);
    EXPECT_EQ(part->leader_epoch(), round + 1);
    EXPECT_EQ(part->high_watermark(), acked);
    // The epoch history: the old epoch ends where the new one starts.
    EXPECT_EQ(part->end_offset_for(round).second, acked);
    EXPECT_EQ(part->end_offset_for(round + 1).second, acked);
    EXPECT_EQ(produce(*nodes_[owner], "m", 0, 1, nullptr),
              static_cast<int16_t>(ErrorCode::kNotLeaderOrFollower));
    owner = target;
  }
  EXPECT_TRUE(nodes_[1]->own->ongoing().empty());
}

// reassign_under_load on a loaded machine: the target's view of the assignment records lagged,
// so after its take-over it saw the record still RELEASED(→ it) and took the partition over a
// second time: a second stream open, fencing the first partition object after it had
// acknowledged appends (librdkafka then saw a sequence desynchronization). Likewise a broker
// that had just released a partition reopened it from the stale MOVING record.
TEST_F(OwnershipTest, ATakeOverIsNotRepeatedWhileTheViewLags) {
  ASSERT_TRUE(nodes_[1]->broker->topics().create("lag", 1, {}).ok());
  ASSERT_TRUE(eventually([&] { return servers("lag", 0).size() == 1; }));
  const int32_t owner = servers("lag", 0).front();
  const int32_t target = owner % 3 + 1;
  ASSERT_EQ(produce(*nodes_[owner], "lag", 0, 3, nullptr), 0);
  nodes_[owner]->store->set_lag_ms(400);
  nodes_[target]->store->set_lag_ms(400);
  TopicPtr t = nodes_[owner]->broker->topics().find("lag");
  ASSERT_TRUE(nodes_[target]->own->reassign(t->id, 0, target).ok());
  std::shared_ptr<Partition> first;
  ASSERT_TRUE(eventually([&] {
    auto p = nodes_[target]->broker->topics().partition("lag", 0);
    if (!p->serving()) return false;
    first = p;
    return true;
  }));
  int64_t base = -1;
  ASSERT_EQ(produce(*nodes_[target], "lag", 0, 2, &base), 0);
  EXPECT_EQ(base, 3);
  // Both drivers reconcile every partition again while their views still show the old records.
  for (int i = 0; i < 10; ++i) {
    nodes_[owner]->own->kick();
    nodes_[target]->own->kick();
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
  }
  EXPECT_EQ(nodes_[target]->broker->topics().partition("lag", 0).get(), first.get())
      << "opened twice";
  EXPECT_TRUE(first->serving());
  EXPECT_EQ(servers("lag", 0), std::vector<int32_t>{target});
  ASSERT_EQ(produce(*nodes_[target], "lag", 0, 1, &base), 0);
  EXPECT_EQ(base, 5);
  EXPECT_EQ(nodes_[target]->broker->topics().partition("lag", 0)->high_watermark(), 6);
  nodes_[owner]->store->set_lag_ms(0);
  nodes_[target]->store->set_lag_ms(0);
}

TEST_F(OwnershipTest, InvalidMovesChangeNothing) {
  ASSERT_TRUE(nodes_[1]->broker->topics().create("x", 1, {}).ok());
  ASSERT_TRUE(eventually([&] { return servers("x", 0).size() == 1; }));
  TopicPtr t = nodes_[1]->broker->topics().find("x");
  auto dead = nodes_[1]->own->reassign(t->id, 0, 42);
  ASSERT_FALSE(dead.ok());
  EXPECT_EQ(dead.error().code, Errc::kInvalidArgument);
  auto unknown = nodes_[1]->own->reassign(t->id, 7, 2);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code, Errc::kNotFound);
  EXPECT_TRUE(nodes_[1]->own->ongoing().empty());
  EXPECT_EQ(servers("x", 0).size(), 1u);
}

TEST_F(OwnershipTest, DeadBrokersPartitionsMoveToLiveOnesAfterItsWalIsReplayed) {
  ASSERT_TRUE(nodes_[1]->broker->topics().create("f", 6, {}).ok());
  for (int32_t p = 0; p < 6; ++p)
    ASSERT_TRUE(eventually([&] { return servers("f", p).size() == 1; }));
  std::map<int32_t, int64_t> ends;
  for (int32_t p = 0; p < 6; ++p) {
    const int32_t owner = servers("f", p).front();
    ASSERT_EQ(produce(*nodes_[owner], "f", p, 4 + p, nullptr), 0);
    ends[p] = 4 + p;
  }
  // Broker 3 "dies": its lease lapses (the object store refuses its uploads meanwhile, so its
  // acknowledged records are only in its WAL until another broker replays it).
  Node& dead = *nodes_[3];
  dead.own->stop();
  objects_.fail_randomly(objstore::Op::kPut, 1.0, 7);
  objects_.fail_randomly(objstore::Op::kCreateMultipart, 1.0, 7);
  stop(dead, false);
  objects_.fail_randomly(objstore::Op::kPut, 0.0, 7);
  objects_.fail_randomly(objstore::Op::kCreateMultipart, 0.0, 7);
  nodes_.erase(3);
  for (int32_t p = 0; p < 6; ++p) {
    ASSERT_TRUE(eventually([&] {
      auto s = servers("f", p);
      return s.size() == 1 && s.front() != 3;
    })) << "partition "
        << p;
    auto part = nodes_[servers("f", p).front()]->broker->topics().partition("f", p);
    EXPECT_EQ(part->high_watermark(), ends[p]) << "partition " << p;
  }
  EXPECT_GE(recoveries_.load(), 1);
  // The failover record is gone, and broker 3 comes back owning nothing.
  ASSERT_TRUE(eventually([&] {
    auto kv = meta_->get(nodes_[1]->member->keys().failover(3));
    return kv.ok() && !kv->has_value();
  }));
  ASSERT_NO_FATAL_FAILURE(start(3));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  for (int32_t p = 0; p < 6; ++p) EXPECT_NE(servers("f", p), std::vector<int32_t>{3});
}

TEST_F(OwnershipTest, GroupShardsAreSpreadLoadedOnceAndFailOverAndRebalanceLikePartitions) {
  auto spread = [&] {
    std::map<int32_t, int> per_node;
    for (int32_t g = 0; g < kShards; ++g) {
      auto s = shard_servers(g);
      if (s.size() != 1) return std::map<int32_t, int>{};
      ++per_node[s.front()];
    }
    return per_node;
  };
  auto agree = [&] {
    const int32_t shard = group::Coordinator::shard_of("my-group", kShards);
    auto s = shard_servers(shard);
    if (s.size() != 1) return false;
    for (auto& [id, n] : nodes_)
      if (n->own->group_coordinator("my-group").id != s.front()) return false;
    return true;
  };
  // The brokers started one after another (the first placed every shard on itself): the
  // controller spreads them, each loaded on exactly one broker, which every broker names as
  // the coordinator of the shard's groups.
  const std::map<int32_t, int> even{{1, 2}, {2, 2}, {3, 2}};
  ASSERT_TRUE(eventually([&] { return spread() == even; })) << ::testing::PrintToString(spread());
  EXPECT_TRUE(eventually(agree));

  // Broker 3 dies: its shards go to the live brokers (after its WAL is replayed).
  Node& dead = *nodes_[3];
  stop(dead, false);
  nodes_.erase(3);
  const std::map<int32_t, int> two{{1, 3}, {2, 3}};
  ASSERT_TRUE(eventually([&] { return spread() == two; })) << ::testing::PrintToString(spread());
  EXPECT_TRUE(eventually(agree));

  // It comes back and takes its share again.
  ASSERT_TRUE(eventually([&] {
    auto kv = meta_->get(nodes_[1]->member->keys().failover(3));
    return kv.ok() && !kv->has_value();
  }));
  ASSERT_NO_FATAL_FAILURE(start(3));
  ASSERT_TRUE(eventually([&] { return spread() == even; })) << ::testing::PrintToString(spread());
  EXPECT_TRUE(eventually(agree));
}

}  // namespace
}  // namespace shale::broker
