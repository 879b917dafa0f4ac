// ListGroups, DescribeGroups, DeleteGroups, FindCoordinator, loading and restarts.
#include <gtest/gtest.h>

#include "harness.h"

namespace shale::group::testing {
namespace {

TEST(Admin, ListGroupsWithFilters) {
  Harness h;
  TwoMembers t = stable_pair(h, "stable");
  EXPECT_EQ(h.commit("simple", "", -1, "t", 0, 1), err::kNone);
  JoinFuture p = h.join_new("preparing");
  JoinFuture p2 = h.join_new("preparing");  // parked: a second member triggered a rebalance

  auto all = h.c->list_groups({}).groups;
  ASSERT_EQ(all.size(), 3u);
  std::map<std::string, ListedGroup> by_id;
  for (auto& g : all) by_id[g.group_id] = g;
  EXPECT_EQ(by_id["stable"].group_state, "Stable");
  EXPECT_EQ(by_id["stable"].protocol_type, "consumer");
  EXPECT_EQ(by_id["stable"].group_type, "classic");
  EXPECT_EQ(by_id["simple"].group_state, "Empty");
  EXPECT_EQ(by_id["preparing"].group_state, "PreparingRebalance");

  auto stable = h.c->list_groups(ListGroupsRequest{{"stable", "EMPTY"}, {}}).groups;
  ASSERT_EQ(stable.size(), 2u);
  EXPECT_EQ(stable[0].group_id, "simple");
  EXPECT_EQ(stable[1].group_id, "stable");
  EXPECT_EQ(h.c->list_groups(ListGroupsRequest{{}, {"Classic"}}).groups.size(), 3u);
  EXPECT_TRUE(h.c->list_groups(ListGroupsRequest{{}, {"consumer"}}).groups.empty());
  EXPECT_TRUE(h.c->list_groups(ListGroupsRequest{{"Dead"}, {}}).groups.empty());
}

TEST(Admin, DescribeStableGroupShowsMetadataAndAssignments) {
  Harness h;
  TwoMembers t = stable_pair(h);
  auto d = h.c->describe_groups({"g", "missing"});
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].error_code, err::kNone);
  EXPECT_EQ(d[0].group_state, "Stable");
  EXPECT_EQ(d[0].protocol_type, "consumer");
  EXPECT_EQ(d[0].protocol_data, "range");
  ASSERT_EQ(d[0].members.size(), 2u);
  for (const auto& m : d[0].members) {
    EXPECT_EQ(m.client_id, "client");
    EXPECT_EQ(m.client_host, "/127.0.0.1");
    EXPECT_EQ(m.metadata, "md");
    EXPECT_EQ(m.assignment, m.member_id == t.a ? "assign-a" : "assign-b");
  }
  EXPECT_EQ(d[1].error_code, err::kNone);
  EXPECT_EQ(d[1].group_state, "Dead");
  EXPECT_TRUE(d[1].members.empty());
}

TEST(Admin, DescribeRebalancingGroupHidesMetadata) {
  Harness h;
  TwoMembers t = stable_pair(h);
  JoinFuture c = h.join_new("g");
  auto d = h.c->describe_groups({"g"});
  EXPECT_EQ(d[0].group_state, "PreparingRebalance");
  EXPECT_EQ(d[0].protocol_data, "");
  ASSERT_EQ(d[0].members.size(), 3u);
  for (const auto& m : d[0].members) {
    EXPECT_TRUE(m.metadata.empty());
    EXPECT_TRUE(m.assignment.empty());
  }
}

TEST(Admin, DeleteGroups) {
  Harness h;
  TwoMembers t = stable_pair(h, "busy");
  EXPECT_EQ(h.commit("idle", "", -1, "t", 0, 1), err::kNone);
  auto r = h.c->delete_groups({"busy", "idle", "missing"});
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].error_code, err::kNonEmptyGroup);
  EXPECT_EQ(r[1].error_code, err::kNone);
  EXPECT_EQ(r[2].error_code, err::kGroupIdNotFound);
  EXPECT_EQ(h.fetch("idle", "t", 0), -1);
  EXPECT_EQ(h.state("idle"), "Dead");
  h.restart();
  EXPECT_EQ(h.state("idle"), "Dead");
  EXPECT_EQ(h.fetch("idle", "t", 0), -1);
  EXPECT_EQ(h.c->delete_groups({"idle"})[0].error_code, err::kGroupIdNotFound);
}

TEST(Admin, DeleteGroupStoreFailureKeepsTheGroup) {
  Harness h;
  EXPECT_EQ(h.commit("idle", "", -1, "t", 0, 1), err::kNone);
  h.meta.fail_next_commits(1);
  EXPECT_EQ(h.c->delete_groups({"idle"})[0].error_code, err::kCoordinatorNotAvailable);
  EXPECT_EQ(h.fetch("idle", "t", 0), 1);
}

TEST(Admin, FindCoordinator) {
  Harness h([](CoordinatorConfig& c) {
    c.node_id = 3;
    c.host = "broker3";
    c.port = 19092;
  });
  auto r = h.c->find_coordinator(kKeyTypeGroup, {"a", "b"});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[1].key, "b");
  EXPECT_EQ(r[1].node_id, 3);
  EXPECT_EQ(r[1].host, "broker3");
  EXPECT_EQ(r[1].port, 19092);
  EXPECT_EQ(r[1].error_code, err::kNone);
  auto txn = h.c->find_coordinator(1, {"txn"});
  EXPECT_EQ(txn[0].error_code, err::kInvalidRequest);
}

TEST(Load, EverythingAnswersLoadInProgressBeforeLoad) {
  FakeMetaStore meta;
  MetaGroupStore store(&meta);
  Coordinator c(CoordinatorConfig{}, &store, [] { return int64_t{1000}; });
  EXPECT_FALSE(c.loaded());
  JoinFuture j;
  c.join_group(Harness::join_req("g", ""), j.callback());
  EXPECT_EQ(j.error(), err::kCoordinatorLoadInProgress);
  SyncFuture s;
  c.sync_group(SyncRequest{"g", 1, "m", {}, {}, {}, {}}, s.callback());
  EXPECT_EQ(s.error(), err::kCoordinatorLoadInProgress);
  EXPECT_EQ(c.heartbeat(HeartbeatRequest{"g", 1, "m", {}}), err::kNone);  // Kafka: blind OK
  EXPECT_EQ(c.leave_group(LeaveRequest{"g", {}}).error_code, err::kCoordinatorLoadInProgress);
  CommitRequest cr;
  cr.group_id = "g";
  cr.topics.push_back(CommitTopic{"t", {CommitPartition{}}});
  EXPECT_EQ(c.commit_offsets(cr).topics[0].partitions[0].error_code,
            err::kCoordinatorLoadInProgress);
  FetchRequest fr;
  fr.groups.push_back(FetchGroup{"g", std::nullopt});
  EXPECT_EQ(c.fetch_offsets(fr).groups[0].error_code, err::kCoordinatorLoadInProgress);
  EXPECT_EQ(c.list_groups({}).error_code, err::kCoordinatorLoadInProgress);
  EXPECT_EQ(c.describe_groups({"g"})[0].error_code, err::kCoordinatorLoadInProgress);
  EXPECT_EQ(c.delete_groups({"g"})[0].error_code, err::kCoordinatorLoadInProgress);
  EXPECT_EQ(c.delete_offsets(OffsetDeleteRequest{"g", {}}).error_code,
            err::kCoordinatorLoadInProgress);
  ASSERT_TRUE(c.load().ok());
  EXPECT_TRUE(c.loaded());
  EXPECT_EQ(c.list_groups({}).error_code, err::kNone);
}

TEST(Load, FailingStoreKeepsTheCoordinatorUnloaded) {
  FakeMetaStore meta;
  ASSERT_TRUE(meta.put("groups/g/meta", "garbage").ok());
  MetaGroupStore store(&meta);
  Coordinator c(CoordinatorConfig{}, &store, [] { return int64_t{1000}; });
  Status s = c.load();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, Errc::kCorruption);
  EXPECT_FALSE(c.loaded());
}

TEST(Load, LoadingTwiceIsRefused) {
  Harness h;
  Status s = h.c->load();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, Errc::kInvalidArgument);
}

TEST(Load, UnloadAnswersParkedRequestsAndThenNotCoordinator) {
  Harness h;
  TwoMembers t = stable_pair(h);
  EXPECT_EQ(h.commit("g", t.a, t.generation, "t", 0, 9), err::kNone);
  JoinFuture a = h.rejoin("g", t.a);  // parked: b has not re-joined
  JoinFuture b = h.rejoin("g", t.b);
  SyncFuture sb = h.sync("g", t.b, t.generation + 1);  // parked: waits for the leader
  JoinFuture c = h.join_new("g");                      // answers sb, parks c
  ASSERT_TRUE(sb.done());
  JoinFuture a2 = h.rejoin("g", t.a);
  EXPECT_FALSE(a2.done());
  h.c->unload();
  ASSERT_TRUE(a2.done() && c.done());
  EXPECT_EQ(a2.error(), err::kNotCoordinator);
  EXPECT_EQ(c.error(), err::kNotCoordinator);
  EXPECT_FALSE(h.c->loaded());
  EXPECT_EQ(h.heartbeat("g", t.a, t.generation + 1), err::kNotCoordinator);
  EXPECT_EQ(h.c->list_groups({}).error_code, err::kNotCoordinator);
  EXPECT_EQ(h.commit("g", t.a, t.generation, "t", 0, 10), err::kNotCoordinator);
  EXPECT_FALSE(h.c->next_deadline_ms().has_value());
  // Loading again serves what was stored.
  ASSERT_TRUE(h.c->load().ok());
  EXPECT_EQ(h.fetch("g", "t", 0), 9);
}

TEST(Restart, StableGroupAndOffsetsSurvive) {
  Harness h;
  TwoMembers t = stable_pair(h);
  EXPECT_EQ(h.commit("g", t.a, t.generation, "t", 0, 100), err::kNone);
  EXPECT_EQ(h.commit("g", t.b, t.generation, "t", 1, 200), err::kNone);
  h.restart();
  auto d = h.c->describe_groups({"g"})[0];
  EXPECT_EQ(d.group_state, "Stable");
  EXPECT_EQ(d.protocol_data, "range");
  ASSERT_EQ(d.members.size(), 2u);
  for (const auto& m : d.members) {
    EXPECT_EQ(m.assignment, m.member_id == t.a ? "assign-a" : "assign-b");
  }
  EXPECT_EQ(h.fetch("g", "t", 0), 100);
  EXPECT_EQ(h.fetch("g", "t", 1), 200);
  FetchRequest all;
  all.groups.push_back(FetchGroup{"g", std::nullopt});
  auto fetched = h.c->fetch_offsets(all).groups.at(0).topics.at(0).partitions.at(0);
  EXPECT_EQ(fetched.leader_epoch, 7);
  EXPECT_EQ(fetched.metadata, "m");
  // Members carry on with the same generation.
  EXPECT_EQ(h.heartbeat("g", t.a, t.generation), err::kNone);
  EXPECT_EQ(h.commit("g", t.b, t.generation, "t", 1, 201), err::kNone);
  SyncFuture s = h.sync("g", t.b, t.generation);
  EXPECT_EQ(s.get().assignment, "assign-b");
  // A rebalance after the restart continues the generation count.
  JoinFuture a = h.rejoin("g", t.a);
  JoinFuture b = h.rejoin("g", t.b);
  ASSERT_TRUE(a.done() && b.done());
  EXPECT_EQ(a.get().generation_id, t.generation + 1);
  EXPECT_EQ(a.get().leader, t.a);
}

TEST(Restart, MembersThatDoNotComeBackExpire) {
  Harness h;
  TwoMembers t = stable_pair(h);
  h.restart();
  h.advance(5000);
  EXPECT_EQ(h.heartbeat("g", t.a, t.generation), err::kNone);
  h.advance(5000);  // b's restored session (10 s) ends
  EXPECT_EQ(h.heartbeat("g", t.a, t.generation), err::kRebalanceInProgress);
  JoinFuture a = h.rejoin("g", t.a);
  ASSERT_TRUE(a.done());
  EXPECT_EQ(a.get().members.size(), 1u);
}

TEST(Restart, StaticMembersAreRestored) {
  Harness h;
  JoinRequest r = Harness::join_req("g", "");
  r.group_instance_id = "inst";
  JoinFuture a = h.join(r);
  const std::string id = a.get().member_id;
  SyncFuture s = h.sync("g", id, a.get().generation_id, {{id, "A"}});
  h.restart();
  EXPECT_EQ(h.heartbeat("g", "other", a.get().generation_id, "inst"), err::kFencedInstanceId);
  JoinFuture again = h.join(r);  // the static member restarts too: replaced, no rebalance
  ASSERT_TRUE(again.done());
  EXPECT_EQ(again.error(), err::kNone);
  EXPECT_TRUE(again.get().skip_assignment);
  EXPECT_EQ(h.state("g"), "Stable");
}

TEST(Restart, GroupMaxSizeLoweredBelowAStoredGroupRebalancesIt) {
  Harness h;
  TwoMembers t = stable_pair(h);
  h.cfg.max_size = 1;
  h.restart();
  EXPECT_EQ(h.state("g"), "PreparingRebalance");
  JoinFuture a = h.rejoin("g", t.a);
  JoinFuture b = h.rejoin("g", t.b);
  ASSERT_TRUE(b.done());
  EXPECT_EQ(b.error(), err::kGroupMaxSizeReached);
  ASSERT_TRUE(a.done());
  EXPECT_EQ(a.get().members.size(), 1u);
}

TEST(Timers, NextDeadlineTracksTheEarliestTimer) {
  Harness h;
  auto idle = h.c->next_deadline_ms();
  ASSERT_TRUE(idle.has_value());
  EXPECT_EQ(*idle, h.now + h.cfg.offsets_retention_check_interval_ms);
  TwoMembers t = stable_pair(h);
  auto d = h.c->next_deadline_ms();
  ASSERT_TRUE(d.has_value());
  EXPECT_LE(*d, h.now + 10000);  // a session timeout
}

}  // namespace
}  // namespace shale::group::testing
