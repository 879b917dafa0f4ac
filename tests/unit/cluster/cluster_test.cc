// Cluster membership, controller election, fencing and placement: three members in one process
// on one MetaStore, each with its own lease (LeaseKeeper), as three brokers would be. The
// fixture runs on the embedded SqliteMetaStore and on a real etcd (tests/unit/meta/etcd_server.h;
// a missing etcd fails the etcd half with a pointer to scripts/setup).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <thread>

#include "../meta/etcd_server.h"
#include "cluster/assignments.h"
#include "cluster/identity.h"
#include "cluster/member.h"
#include "cluster/moves.h"
#include "cluster/placement.h"
#include "meta/etcd_meta_store.h"
#include "meta/sqlite_meta_store.h"

namespace shale::cluster {
namespace {

constexpr int64_t kWait = 10000;

// One etcd per test process, started on first use, killed at exit.
meta::testing::EtcdServer* shared_etcd() {
  static std::unique_ptr<meta::testing::EtcdServer> server;
  static bool tried = false;
  if (!tried) {
    tried = true;
    auto s = std::make_unique<meta::testing::EtcdServer>();
    s->init("default", meta::testing::test_root());
    if (s->start() && s->wait_healthy()) server = std::move(s);
  }
  return server.get();
}

struct Node {
  std::unique_ptr<meta::LeaseKeeper> lease;
  std::unique_ptr<Member> member;
};

class ClusterTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "sqlite") {
      auto s = meta::SqliteMetaStore::open({":memory:", 10000, 10});
      ASSERT_TRUE(s.ok());
      store_ = std::move(s).value();
      return;
    }
    ASSERT_FALSE(meta::testing::find_etcd().empty()) << meta::testing::kEtcdMissing;
    ASSERT_NE(shared_etcd(), nullptr) << "etcd did not start (see its log under /dev/shm)";
    static int n = 0;
    meta::EtcdOptions o;
    o.endpoints = {shared_etcd()->endpoint()};
    o.prefix = "cl" + std::to_string(getpid()) + "-" + std::to_string(++n) + "/";
    auto s = meta::EtcdMetaStore::open(o);
    ASSERT_TRUE(s.ok()) << s.error().to_string();
    store_ = std::move(s).value();
  }
  void TearDown() override {
    nodes_.clear();
    store_.reset();
  }

  BrokerInfo info(int32_t id) {
    BrokerInfo b;
    b.id = id;
    b.listeners["PLAINTEXT"] = "127.0.0.1:" + std::to_string(9092 + id);
    b.listeners["INTERNAL"] = "10.0.0." + std::to_string(id) + ":9094";
    b.rack = "rack" + std::to_string(id % 2);
    b.wal_uri = "file:///wal/" + std::to_string(id);
    return b;
  }

  // Starts broker `id` with a lease of ttl_ms.
  Result<Node> start(int32_t id, int64_t ttl_ms = 3000, bool regrant = false) {
    Node n;
    auto k = meta::LeaseKeeper::start(store_.get(), ttl_ms, {}, regrant);
    if (!k.ok()) return std::move(k).error();
    n.lease = std::move(k).value();
    MemberOptions o;
    o.ns = "c1";
    o.self = info(id);
    o.tick_ms = 20;
    auto m = Member::start(store_.get(), n.lease.get(), o);
    if (!m.ok()) return std::move(m).error();
    n.member = std::move(m).value();
    return n;
  }

  void start3() {
    for (int32_t id : {1, 2, 3}) {
      auto n = start(id);
      ASSERT_TRUE(n.ok()) << n.error().to_string();
      nodes_.push_back(std::move(n).value());
    }
    for (auto& n : nodes_)
      ASSERT_TRUE(n.member->wait_until([&] { return n.member->live().size() == 3; }, kWait));
  }

  int controllers() {
    int c = 0;
    for (auto& n : nodes_)
      if (n.member && n.member->is_controller()) ++c;
    return c;
  }

  std::unique_ptr<meta::MetaStore> store_;
  std::vector<Node> nodes_;
};

INSTANTIATE_TEST_SUITE_P(Backends, ClusterTest, ::testing::Values("sqlite", "etcd"),
                         [](const auto& info) { return info.param; });

TEST(ClusterModel, JsonRoundTripsAndRejectsGarbage) {
  BrokerInfo b;
  b.id = 7;
  b.listeners = {{"PLAINTEXT", "h:1"}, {"SSL", "h:2"}};
  b.rack = "r";
  b.wal_uri = "file:///w";
  b.node_epoch = 3;
  b.start_time_ms = 42;
  auto b2 = broker_from_json(to_json(b));
  ASSERT_TRUE(b2.ok());
  EXPECT_EQ(*b2, b);
  Assignment a;
  a.owner = 2;
  a.leader_epoch = 5;
  a.state = Assignment::State::kMoving;
  a.target = 3;
  a.since_ms = 9;
  auto a2 = assignment_from_json(to_json(a));
  ASSERT_TRUE(a2.ok());
  EXPECT_EQ(*a2, a);
  for (const char* bad : {"", "[]", "{", "{\"id\":\"x\"}", "{\"id\":1}"}) {
    auto r = broker_from_json(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code, Errc::kCorruption);
  }
  auto bad_state = assignment_from_json(R"({"owner":1,"leader_epoch":0,"state":"LOST"})");
  ASSERT_FALSE(bad_state.ok());
  EXPECT_EQ(bad_state.error().code, Errc::kCorruption);
  EXPECT_FALSE(assignment_from_json(R"({"owner":1,"leader_epoch":0,"state":"MOVING"})").ok());
  a.state = Assignment::State::kReleased;
  auto a3 = assignment_from_json(to_json(a));
  ASSERT_TRUE(a3.ok());
  EXPECT_EQ(*a3, a);
}

TEST(ClusterModel, KeysParse) {
  Keys k("ns");
  EXPECT_EQ(k.assign("abc", 12), "ns/assign/abc/12");
  auto p = k.parse_assign("ns/assign/abc/12");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->first, "abc");
  EXPECT_EQ(p->second, 12);
  EXPECT_FALSE(k.parse_assign("ns/assign/abc/x"));
  EXPECT_FALSE(k.parse_assign("ns/assign/12"));
  EXPECT_FALSE(k.parse_assign("ns/assign/abc/-1"));
  EXPECT_FALSE(k.parse_assign("other/assign/abc/1"));
  EXPECT_EQ(k.parse_broker("ns/brokers/3"), 3);
  EXPECT_FALSE(k.parse_broker("ns/brokers/3x"));
}

TEST(ClusterPlacement, LeastLoadedFirstLowestIdBreaksTies) {
  auto r = place({{1, 0}, {2, 0}, {3, 0}}, 6);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, (std::vector<int32_t>{1, 2, 3, 1, 2, 3}));
  r = place({{1, 5}, {2, 0}, {3, 1}}, 4);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, (std::vector<int32_t>{2, 2, 3, 2}));
  r = place({}, 1);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::kUnavailable);
  EXPECT_FALSE(place({{1, 0}}, -1).ok());
}

TEST_P(ClusterTest, ThreeBrokersRegisterAndSeeEachOther) {
  start3();
  for (auto& n : nodes_) {
    auto live = n.member->live();
    ASSERT_EQ(live.size(), 3u);
    for (int32_t id : {1, 2, 3}) {
      BrokerInfo want = info(id);
      const BrokerInfo& got = live.at(id);
      EXPECT_EQ(got.listeners, want.listeners);
      EXPECT_EQ(got.rack, want.rack);
      EXPECT_EQ(got.wal_uri, want.wal_uri);
      EXPECT_EQ(got.node_epoch, 1);
      EXPECT_GT(got.start_time_ms, 0);
    }
  }
  // The record is attached to the broker's lease.
  auto kv = store_->get("c1/brokers/2");
  ASSERT_TRUE(kv.ok() && kv->has_value());
  EXPECT_EQ((*kv)->lease, nodes_[1].lease->lease());
}

TEST_P(ClusterTest, ListenersPublishedAfterBindingKeepLeaseAndEpoch) {
  start3();
  Member* m2 = nodes_[1].member.get();
  ASSERT_TRUE(m2->set_listeners({{"PLAINTEXT", "127.0.0.1:40002"}}).ok());
  Member* m1 = nodes_[0].member.get();
  ASSERT_TRUE(m1->wait_until(
      [&] { return m1->live().at(2).listeners.at("PLAINTEXT") == "127.0.0.1:40002"; }, kWait));
  EXPECT_EQ(m1->live().at(2).node_epoch, 1);
  auto kv = store_->get("c1/brokers/2");
  ASSERT_TRUE(kv.ok() && kv->has_value());
  EXPECT_EQ((*kv)->lease, nodes_[1].lease->lease());
}

TEST_P(ClusterTest, SameIdWhileTheFirstLivesIsRefused) {
  start3();
  auto dup = start(2);
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.error().code, Errc::kAlreadyExists);
  // The live broker's record is untouched.
  EXPECT_EQ(nodes_[0].member->live().at(2).node_epoch, 1);
}

TEST_P(ClusterTest, LeaveOnRevokeAndOnExpiryRejoinWithHigherEpoch) {
  start3();
  Member* m1 = nodes_[0].member.get();
  // Clean leave: revoke.
  ASSERT_TRUE(nodes_[1].lease->revoke().ok());
  nodes_[1].member.reset();
  ASSERT_TRUE(m1->wait_until([&] { return !m1->live().contains(2); }, kWait));
  // Crash: the lease is no longer renewed and expires.
  nodes_[2].member.reset();
  nodes_[2].lease.reset();
  ASSERT_TRUE(m1->wait_until([&] { return m1->live().size() == 1; }, kWait));
  // Broker 3 comes back: a new node epoch.
  auto back = start(3);
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(back->member->self().node_epoch, 2);
  ASSERT_TRUE(m1->wait_until(
      [&] { return m1->live().contains(3) && m1->live().at(3).node_epoch == 2; }, kWait));
  nodes_[2] = std::move(back).value();
}

TEST_P(ClusterTest, ExactlyOneControllerAndAllAgree) {
  start3();
  for (auto& n : nodes_)
    ASSERT_TRUE(n.member->wait_until([&] { return n.member->controller().has_value(); }, kWait));
  EXPECT_EQ(controllers(), 1);
  std::set<int32_t> seen;
  for (auto& n : nodes_) seen.insert(*n.member->controller());
  EXPECT_EQ(seen.size(), 1u);
  // The first to start won (the others found the key present).
  EXPECT_EQ(*seen.begin(), 1);
  EXPECT_TRUE(nodes_[0].member->is_controller());
  EXPECT_GT(nodes_[0].member->controller_token(), 0);
  EXPECT_EQ(nodes_[1].member->controller_token(), 0);
}

TEST_P(ClusterTest, ControllerFailoverAndStaleControllerWritesAreFenced) {
  start3();
  Member* old_ctl = nodes_[0].member.get();
  ASSERT_TRUE(old_ctl->wait_until([&] { return old_ctl->is_controller(); }, kWait));
  const int64_t old_token = old_ctl->controller_token();
  auto w = old_ctl->controller_commit(meta::Txn{{}, {meta::Op::put("c1/probe", "from-1")}});
  ASSERT_TRUE(w.ok()) << w.error().to_string();

  // The controller's lease goes (revoked in the store behind its keeper's back, as an expiry
  // the broker has not noticed yet would).
  ASSERT_TRUE(store_->revoke_lease(nodes_[0].lease->lease()).ok());
  Member* m2 = nodes_[1].member.get();
  ASSERT_TRUE(m2->wait_until(
      [&] { return nodes_[1].member->is_controller() || nodes_[2].member->is_controller(); },
      kWait));
  int32_t new_id = nodes_[1].member->is_controller() ? 2 : 3;
  Member* new_ctl = nodes_[new_id - 1].member.get();
  EXPECT_GT(new_ctl->controller_token(), old_token);
  for (int i : {1, 2})
    ASSERT_TRUE(nodes_[i].member->wait_until(
        [&] { return nodes_[i].member->controller() == new_id; }, kWait));

  // A write fenced by the old token fails in the store, whatever the writer believes.
  meta::Txn stale;
  stale.compares.push_back({"c1/controller", old_token});
  stale.ops.push_back(meta::Op::put("c1/probe", "stale"));
  auto r = store_->commit(stale);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::kConflict);
  auto r1 = old_ctl->controller_commit(meta::Txn{{}, {meta::Op::put("c1/probe", "stale")}});
  ASSERT_FALSE(r1.ok());
  EXPECT_EQ(r1.error().code, Errc::kFenced);
  auto r2 = new_ctl->controller_commit(meta::Txn{{}, {meta::Op::put("c1/probe", "new")}});
  ASSERT_TRUE(r2.ok()) << r2.error().to_string();
  auto probe = store_->get("c1/probe");
  ASSERT_TRUE(probe.ok() && probe->has_value());
  EXPECT_EQ((*probe)->value, "new");
  EXPECT_EQ(controllers(), 1);
}

TEST_P(ClusterTest, CallersCompareFailureIsConflictNotFenced) {
  start3();
  Member* c = nodes_[0].member.get();
  ASSERT_TRUE(c->wait_until([&] { return c->is_controller(); }, kWait));
  meta::Txn t;
  t.compares.push_back({"c1/absent-or-not", 12345});
  t.ops.push_back(meta::Op::put("c1/x", "y"));
  auto r = c->controller_commit(t);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::kConflict);
}

TEST_P(ClusterTest, ReGrantedLeaseReRegistersWithHigherEpoch) {
  auto n = start(1, 600, /*regrant=*/true);
  ASSERT_TRUE(n.ok());
  nodes_.push_back(std::move(n).value());
  Member* m = nodes_[0].member.get();
  const int64_t first_lease = nodes_[0].lease->lease();
  ASSERT_TRUE(store_->revoke_lease(first_lease).ok());
  ASSERT_TRUE(m->wait_until(
      [&] {
        auto live = m->live();
        return live.contains(1) && live.at(1).node_epoch == 2;
      },
      kWait));
  EXPECT_NE(nodes_[0].lease->lease(), first_lease);
  auto kv = store_->get("c1/brokers/1");
  ASSERT_TRUE(kv.ok() && kv->has_value());
  EXPECT_EQ((*kv)->lease, nodes_[0].lease->lease());
  // And it takes the controller key again under the new lease.
  ASSERT_TRUE(m->wait_until([&] { return m->is_controller(); }, kWait));
}

TEST_P(ClusterTest, CreatedPartitionsSpreadOverLiveBrokersAndRaceSafely) {
  start3();
  std::mutex mu;
  std::vector<PartitionKey> heard;
  auto table = AssignmentTable::start(store_.get(), Keys("c1"),
                                      [&](const PartitionKey& k, const std::optional<Assignment>&) {
                                        std::lock_guard lk(mu);
                                        heard.push_back(k);
                                      });
  ASSERT_TRUE(table.ok());
  auto ids = [&] {
    std::vector<int32_t> v;
    for (auto& [id, b] : nodes_[0].member->live()) v.push_back(id);
    return v;
  };
  auto c =
      create_assignments(store_.get(), Keys("c1"), "topicA", 0, 6, (*table)->owned_counts(ids()));
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  ASSERT_TRUE((*table)->wait_for(c->revision, kWait));
  auto counts = (*table)->owned_counts(ids());
  EXPECT_EQ(counts, (std::map<int32_t, int64_t>{{1, 2}, {2, 2}, {3, 2}}));
  for (int p = 0; p < 6; ++p) {
    auto a = (*table)->get("topicA", p);
    ASSERT_TRUE(a);
    EXPECT_EQ(a->leader_epoch, 0);
    EXPECT_EQ(a->state, Assignment::State::kOwned);
  }
  {
    std::lock_guard lk(mu);
    EXPECT_EQ(heard.size(), 6u);
  }
  // A second creator of the same partitions loses, and nothing changes.
  auto again =
      create_assignments(store_.get(), Keys("c1"), "topicA", 4, 3, (*table)->owned_counts(ids()));
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code, Errc::kConflict);
  EXPECT_FALSE(store_->get("c1/assign/topicA/6")->has_value());

  // Broker 3 dies: new partitions go only to live brokers, least loaded first.
  nodes_[2].member.reset();
  ASSERT_TRUE(nodes_[2].lease->revoke().ok());
  ASSERT_TRUE(nodes_[0].member->wait_until([&] { return ids().size() == 2; }, kWait));
  auto more =
      create_assignments(store_.get(), Keys("c1"), "topicB", 0, 3, (*table)->owned_counts(ids()));
  ASSERT_TRUE(more.ok());
  std::vector<int32_t> owners;
  for (auto& a : more->assignments) owners.push_back(a.owner);
  EXPECT_EQ(owners, (std::vector<int32_t>{1, 2, 1}));

  // A second view started later sees the same table.
  auto table2 = AssignmentTable::start(store_.get(), Keys("c1"));
  ASSERT_TRUE(table2.ok());
  ASSERT_TRUE((*table)->wait_for(more->revision, kWait));
  EXPECT_EQ((*table2)->all(), (*table)->all());
  EXPECT_EQ((*table2)->all().size(), 9u);
}

TEST_P(ClusterTest, IdentityIsRecordedOnceAndMismatchesAreRefused) {
  Keys k("c1");
  ASSERT_TRUE(check_identity(store_.get(), k, "idA", "0@file:///objs").ok());
  ASSERT_TRUE(check_identity(store_.get(), k, "idA", "0@file:///objs").ok());
  auto other_id = check_identity(store_.get(), k, "idB", "0@file:///objs");
  ASSERT_FALSE(other_id.ok());
  EXPECT_EQ(other_id.error().code, Errc::kInvalidArgument);
  EXPECT_NE(other_id.error().message.find("'idB'"), std::string::npos);
  EXPECT_NE(other_id.error().message.find("'idA'"), std::string::npos);
  auto other_store = check_identity(store_.get(), k, "idA", "0@file:///elsewhere");
  ASSERT_FALSE(other_store.ok());
  EXPECT_NE(other_store.error().message.find("s3.data.buckets"), std::string::npos);
  // The record is unchanged by the refused brokers; another namespace is another cluster.
  auto kv = store_->get("c1/identity");
  ASSERT_TRUE(kv.ok() && kv->has_value());
  EXPECT_NE((*kv)->value.find("idA"), std::string::npos);
  EXPECT_TRUE(check_identity(store_.get(), Keys("c2"), "idB", "0@file:///elsewhere").ok());
  ASSERT_TRUE(store_->put("c3/identity", "garbage").ok());
  auto bad = check_identity(store_.get(), Keys("c3"), "idA", "x");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, Errc::kCorruption);
  // The number of group coordinator shards is recorded and must match too.
  ASSERT_TRUE(check_identity(store_.get(), Keys("c4"), "idA", "x", 50).ok());
  ASSERT_TRUE(check_identity(store_.get(), Keys("c4"), "idA", "x", 50).ok());
  auto shards = check_identity(store_.get(), Keys("c4"), "idA", "x", 8);
  ASSERT_FALSE(shards.ok());
  EXPECT_EQ(shards.error().code, Errc::kInvalidArgument);
  EXPECT_NE(shards.error().message.find("offsets.topic.num.partitions (8)"), std::string::npos);
  EXPECT_NE(shards.error().message.find("(50)"), std::string::npos);
}

// The whole move A → B at the metadata level, with every refusal on the way.
TEST_P(ClusterTest, MoveProtocolRaisesTheLeaderEpochAndNeverHasTwoServers) {
  Keys k("c1");
  auto c = create_assignments(store_.get(), k, "t", 0, 2, {{1, 0}, {2, 0}});
  ASSERT_TRUE(c.ok());
  const std::set<int32_t> live{1, 2, 3};
  auto serving = [&](int32_t p) {
    std::set<int32_t> s;
    auto kv = store_->get(k.assign("t", p));
    auto a = assignment_from_json((*kv)->value);
    for (int32_t b : live)
      if (may_serve(*a, b)) s.insert(b);
    return s;
  };
  // Bad input: unknown partition, dead or unknown target; nothing changes.
  auto unknown = request_move(store_.get(), k, "t", 9, 2, live);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code, Errc::kNotFound);
  auto dead = request_move(store_.get(), k, "t", 0, 4, live);
  ASSERT_FALSE(dead.ok());
  EXPECT_EQ(dead.error().code, Errc::kInvalidArgument);
  EXPECT_EQ(serving(0), (std::set<int32_t>{1}));
  // Moving to the owner is a no-op.
  auto same = request_move(store_.get(), k, "t", 0, 1, live);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->state, Assignment::State::kOwned);

  auto m = request_move(store_.get(), k, "t", 0, 3, live);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->state, Assignment::State::kMoving);
  EXPECT_EQ(serving(0), (std::set<int32_t>{1}));  // A serves until it releases
  // B may not take it before A released it; nobody but A may release it.
  auto early = take_over(store_.get(), k, "t", 0, 3);
  ASSERT_FALSE(early.ok());
  EXPECT_EQ(early.error().code, Errc::kConflict);
  auto not_owner = release(store_.get(), k, "t", 0, 2);
  ASSERT_FALSE(not_owner.ok());
  EXPECT_EQ(not_owner.error().code, Errc::kFenced);
  // Re-target while MOVING, then A releases.
  ASSERT_TRUE(request_move(store_.get(), k, "t", 0, 2, live).ok());
  auto rel = release(store_.get(), k, "t", 0, 1);
  ASSERT_TRUE(rel.ok());
  EXPECT_EQ(rel->state, Assignment::State::kReleased);
  EXPECT_EQ(serving(0), (std::set<int32_t>{}));  // nobody serves in between
  auto late_cancel = cancel_move(store_.get(), k, "t", 0);
  ASSERT_FALSE(late_cancel.ok());
  EXPECT_EQ(late_cancel.error().code, Errc::kConflict);
  auto wrong_target = take_over(store_.get(), k, "t", 0, 3);
  ASSERT_FALSE(wrong_target.ok());
  EXPECT_EQ(wrong_target.error().code, Errc::kFenced);
  // B takes over with its own op in the same transaction; a failing compare of B's keeps all.
  meta::Txn bad;
  bad.compares.push_back({"c1/stream-epoch", 777});
  auto refused = take_over(store_.get(), k, "t", 0, 2, bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(serving(0), (std::set<int32_t>{}));
  meta::Txn open;
  open.ops.push_back(meta::Op::put("c1/stream-epoch", "1"));
  auto own = take_over(store_.get(), k, "t", 0, 2, open);
  ASSERT_TRUE(own.ok()) << own.error().to_string();
  EXPECT_EQ(own->owner, 2);
  EXPECT_EQ(own->leader_epoch, 1);
  EXPECT_EQ(own->state, Assignment::State::kOwned);
  EXPECT_EQ(serving(0), (std::set<int32_t>{2}));
  EXPECT_TRUE(store_->get("c1/stream-epoch")->has_value());
  // Taking over again is idempotent; the epoch rises once per change of owner.
  auto again = take_over(store_.get(), k, "t", 0, 2);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->leader_epoch, 1);
  ASSERT_TRUE(request_move(store_.get(), k, "t", 0, 1, live).ok());
  ASSERT_TRUE(release(store_.get(), k, "t", 0, 2).ok());
  auto back = take_over(store_.get(), k, "t", 0, 1);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->leader_epoch, 2);

  // Cancel before release: the owner keeps it, same epoch. Asking for the owner cancels too.
  ASSERT_TRUE(request_move(store_.get(), k, "t", 1, 3, live).ok());
  auto cancelled = cancel_move(store_.get(), k, "t", 1);
  ASSERT_TRUE(cancelled.ok());
  EXPECT_EQ(cancelled->state, Assignment::State::kOwned);
  EXPECT_EQ(cancelled->owner, 2);
  EXPECT_EQ(cancelled->leader_epoch, 0);
  ASSERT_TRUE(request_move(store_.get(), k, "t", 1, 3, live).ok());
  auto to_owner = request_move(store_.get(), k, "t", 1, 2, live);
  ASSERT_TRUE(to_owner.ok());
  EXPECT_EQ(to_owner->state, Assignment::State::kOwned);
}

// Two brokers asking for different moves of one partition at once: each transition compares
// the record's revision, so the final record is one of the two requests, never a mix.
TEST_P(ClusterTest, ConcurrentMoveRequestsRaceSafely) {
  Keys k("c1");
  ASSERT_TRUE(create_assignments(store_.get(), k, "t", 0, 1, {{1, 0}}).ok());
  const std::set<int32_t> live{1, 2, 3};
  std::atomic<int> ok{0}, conflict{0};
  std::vector<std::thread> ts;
  for (int32_t target : {2, 3, 2, 3}) {
    ts.emplace_back([&, target] {
      auto r = request_move(store_.get(), k, "t", 0, target, live);
      if (r.ok())
        ++ok;
      else if (r.error().code == Errc::kConflict)
        ++conflict;
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(ok + conflict, 4);
  EXPECT_GE(ok.load(), 1);
  auto kv = store_->get(k.assign("t", 0));
  auto a = assignment_from_json((*kv)->value);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->owner, 1);
  EXPECT_EQ(a->state, Assignment::State::kMoving);
  EXPECT_TRUE(a->target == 2 || a->target == 3);
}

// A MetaStore whose watches on the controller key never report anything: a watch stream that
// lags under load, the case where a broker would not know the controller it had just become.
class SilentControllerWatchStore : public meta::MetaStore {
 public:
  explicit SilentControllerWatchStore(meta::MetaStore* inner) : in_(inner) {}
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
    if (p.ends_with("/controller")) cb = [](const std::vector<meta::WatchEvent>&) {};
    return in_->watch(p, from, std::move(cb));
  }
  void cancel_watch(int64_t id) override { in_->cancel_watch(id); }

 private:
  meta::MetaStore* in_;
};

// The broker that wins the campaign knows at once that it is the controller, without waiting
// for the watch (a client asking it then was told "no controller" and librdkafka's CreateTopics
// timed out waiting for one).
TEST(ClusterController, WinnerKnowsItselfWithoutTheWatch) {
  auto s = meta::SqliteMetaStore::open({":memory:", 10000, 10});
  ASSERT_TRUE(s.ok());
  SilentControllerWatchStore store(s->get());
  auto k = meta::LeaseKeeper::start(&store, 3000, {}, false);
  ASSERT_TRUE(k.ok());
  MemberOptions o;
  o.ns = "c1";
  o.self.id = 7;
  o.self.listeners["PLAINTEXT"] = "127.0.0.1:9099";
  o.tick_ms = 20;
  auto m = Member::start(&store, k->get(), o);
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  EXPECT_TRUE((*m)->is_controller());
  ASSERT_TRUE((*m)->controller().has_value());
  EXPECT_EQ(*(*m)->controller(), 7);
}

}  // namespace
}  // namespace shale::cluster
