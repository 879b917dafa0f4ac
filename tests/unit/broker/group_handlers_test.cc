// FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup, ListGroups, DescribeGroups and
// DeleteGroups handlers over decoded requests, across their version ranges.
#include <gtest/gtest.h>

#include "group_harness.h"

namespace shale::broker::testing {
namespace {

using FindReq = protocol::FindCoordinatorRequest;

TEST(GroupClientHost, KafkaForm) {
  EXPECT_EQ(kafka_client_host("127.0.0.1:5555"), "/127.0.0.1");
  EXPECT_EQ(kafka_client_host("[::1]:5555"), "/::1");
  EXPECT_EQ(kafka_client_host("localhost"), "/localhost");
}

class FindCoordinatorTest : public GroupApiTest {};

TEST_F(FindCoordinatorTest, SingleKeyVersionsAnswerThisBroker) {
  start();
  for (int16_t v = 0; v <= 3; ++v) {
    FindReq r;
    r.key = "g";
    r.key_type = 0;
    auto resp = await(h().find_coordinator(info(v), r));
    EXPECT_EQ(resp.error_code, 0) << v;
    EXPECT_EQ(resp.node_id, 7);
    EXPECT_EQ(resp.host, "broker7.local");
    EXPECT_EQ(resp.port, 19092);
    EXPECT_TRUE(resp.coordinators.empty());
    expect_encodes(resp, v);
  }
}

// The transaction coordinator (broker/txn_coordinator.h) is on this broker too.
TEST_F(FindCoordinatorTest, V0IgnoresKeyTypeAndV1TransactionIsThisBroker) {
  start();
  FindReq r;
  r.key = "txn";
  r.key_type = 1;
  EXPECT_EQ(await(h().find_coordinator(info(0), r)).error_code, 0);
  auto resp = await(h().find_coordinator(info(1), r));
  EXPECT_EQ(resp.error_code, 0);
  EXPECT_EQ(resp.node_id, 7);
  EXPECT_EQ(resp.host, "broker7.local");
  EXPECT_EQ(resp.port, 19092);
  expect_encodes(resp, 1);
}

TEST_F(FindCoordinatorTest, BatchedKeys) {
  start();
  for (int16_t v = 4; v <= 6; ++v) {
    FindReq r;
    r.key_type = 0;
    r.coordinator_keys = {"a", "b", "c"};
    auto resp = await(h().find_coordinator(info(v), r));
    ASSERT_EQ(resp.coordinators.size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(resp.coordinators[i].key, r.coordinator_keys[i]);
      EXPECT_EQ(resp.coordinators[i].error_code, 0);
      EXPECT_EQ(resp.coordinators[i].node_id, 7);
      EXPECT_EQ(resp.coordinators[i].host, "broker7.local");
      EXPECT_EQ(resp.coordinators[i].port, 19092);
    }
    expect_encodes(resp, v);
  }
}

TEST_F(FindCoordinatorTest, BatchedTransactionAndUnknownKeyTypes) {
  start();
  FindReq r;
  r.key_type = 1;
  r.coordinator_keys = {"t1", "t2"};
  auto resp = await(h().find_coordinator(info(4), r));
  ASSERT_EQ(resp.coordinators.size(), 2u);
  EXPECT_EQ(resp.coordinators[0].error_code, 0);
  EXPECT_EQ(resp.coordinators[1].error_code, 0);
  EXPECT_EQ(resp.coordinators[1].key, "t2");
  EXPECT_EQ(resp.coordinators[1].node_id, 7);
  r.key_type = 9;
  resp = await(h().find_coordinator(info(6), r));
  ASSERT_EQ(resp.coordinators.size(), 2u);
  EXPECT_EQ(resp.coordinators[0].error_code, 42);  // INVALID_REQUEST
  expect_encodes(resp, 6);
}

TEST_F(FindCoordinatorTest, NotLoadedIsNotAvailable) {
  start(/*load=*/false);
  FindReq r;
  r.key = "g";
  EXPECT_EQ(await(h().find_coordinator(info(2), r)).error_code, 15);
  r.coordinator_keys = {"g"};
  EXPECT_EQ(await(h().find_coordinator(info(4), r)).coordinators.at(0).error_code, 15);
}

class JoinSyncTest : public GroupApiTest {};

TEST_F(JoinSyncTest, OldVersionsJoinWithoutMemberIdRoundTrip) {
  start();
  for (int16_t v = 0; v <= 3; ++v) {
    const std::string g = "old" + std::to_string(v);
    auto j = join_new(g, v);
    EXPECT_EQ(j.error_code, 0) << v;
    EXPECT_EQ(j.generation_id, 1);
    EXPECT_EQ(j.leader, j.member_id);
    EXPECT_FALSE(j.member_id.empty());
    ASSERT_EQ(j.members.size(), 1u);
    EXPECT_EQ(j.members[0].metadata.view(), subscription({"t1"}));
    EXPECT_EQ(j.protocol_name, "range");
    expect_encodes(j, v);
    auto s = sync(g, j.member_id, j.generation_id, "my-assignment", std::min<int16_t>(v, 2));
    EXPECT_EQ(s.error_code, 0);
    EXPECT_EQ(s.assignment.view(), "my-assignment");
  }
}

TEST_F(JoinSyncTest, NewVersionsRequireMemberId) {
  start();
  for (int16_t v = 4; v <= 9; ++v) {
    const std::string g = "new" + std::to_string(v);
    auto first = await(h().join_group(info(v), join_req(g, "")));
    EXPECT_EQ(first.error_code, 79) << v;  // MEMBER_ID_REQUIRED
    EXPECT_FALSE(first.member_id.empty());
    expect_encodes(first, v);
    auto j = join_new(g, v);
    EXPECT_EQ(j.error_code, 0) << v;
    EXPECT_EQ(j.generation_id, 1);
    EXPECT_EQ(j.protocol_name, "range");
    if (v >= 7) {
      EXPECT_EQ(j.protocol_type, "consumer");
    }
    expect_encodes(j, v);
  }
}

TEST_F(JoinSyncTest, ProtocolNameOfAFailedJoinIsEmptyBeforeV7AndNullAfter) {
  start();
  auto old = await(h().join_group(info(6), join_req("", "")));
  EXPECT_EQ(old.error_code, 24);  // INVALID_GROUP_ID
  EXPECT_EQ(old.protocol_name, std::optional<std::string>(""));
  expect_encodes(old, 6);
  auto neu = await(h().join_group(info(7), join_req("", "")));
  EXPECT_EQ(neu.error_code, 24);
  EXPECT_EQ(neu.protocol_name, std::nullopt);
  expect_encodes(neu, 7);
}

TEST_F(JoinSyncTest, RebalanceWithTwoMembersCompletesParkedRequests) {
  start();
  auto [m1, gen1] = stable_group("g");
  // A second member joins: its JoinGroup parks until m1 rejoins.
  auto r2 = join_req("g", "");
  auto first = await(h().join_group(info(5), r2));
  r2.member_id = first.member_id;
  auto pending2 = spawn(h().join_group(info(5), r2));
  drive([&] { return heartbeat("g", m1, gen1) == 27; });  // REBALANCE_IN_PROGRESS
  EXPECT_FALSE(pending2->has_value());
  auto pending1 = spawn(h().join_group(info(5), join_req("g", m1)));
  drive([&] { return pending1->has_value() && pending2->has_value(); });
  ASSERT_TRUE(pending1->has_value() && pending2->has_value());
  const auto& j1 = **pending1;
  const auto& j2 = **pending2;
  EXPECT_EQ(j1.error_code, 0);
  EXPECT_EQ(j2.error_code, 0);
  EXPECT_EQ(j1.generation_id, gen1 + 1);
  EXPECT_EQ(j2.generation_id, gen1 + 1);
  // Exactly one leader, who alone gets the member list.
  EXPECT_EQ(j1.leader, j2.leader);
  const auto& leader = j1.leader == m1 ? j1 : j2;
  const auto& follower = j1.leader == m1 ? j2 : j1;
  EXPECT_EQ(leader.members.size(), 2u);
  EXPECT_TRUE(follower.members.empty());

  // The follower's SyncGroup parks until the leader sends the assignment.
  protocol::SyncGroupRequest fs;
  fs.group_id = "g";
  fs.member_id = follower.member_id;
  fs.generation_id = follower.generation_id;
  auto fpending = spawn(h().sync_group(info(5), fs));
  protocol::SyncGroupRequest ls;
  ls.group_id = "g";
  ls.member_id = leader.member_id;
  ls.generation_id = leader.generation_id;
  ls.protocol_type = "consumer";
  ls.protocol_name = "range";
  ls.assignments.push_back({leader.member_id, Buffer::copy("L")});
  ls.assignments.push_back({follower.member_id, Buffer::copy("F")});
  auto lresp = await(h().sync_group(info(5), ls));
  drive([&] { return fpending->has_value(); });
  ASSERT_TRUE(fpending->has_value());
  EXPECT_EQ(lresp.error_code, 0);
  EXPECT_EQ(lresp.assignment.view(), "L");
  EXPECT_EQ(lresp.protocol_name, "range");
  EXPECT_EQ(lresp.protocol_type, "consumer");
  expect_encodes(lresp, 5);
  EXPECT_EQ((*fpending)->error_code, 0);
  EXPECT_EQ((*fpending)->assignment.view(), "F");
}

TEST_F(JoinSyncTest, SyncErrors) {
  start();
  auto [m, gen] = stable_group("g");
  EXPECT_EQ(sync("g", "nobody", gen).error_code, 25);  // UNKNOWN_MEMBER_ID
  EXPECT_EQ(sync("g", m, gen + 5).error_code, 22);     // ILLEGAL_GENERATION
  EXPECT_EQ(sync("", m, gen).error_code, 24);          // INVALID_GROUP_ID
  auto s = sync("g", m, gen, "", 0);
  EXPECT_EQ(s.error_code, 0);
  expect_encodes(s, 0);
}

class HeartbeatTest : public GroupApiTest {};

TEST_F(HeartbeatTest, ErrorCodesAcrossVersions) {
  start();
  auto [m, gen] = stable_group("g");
  for (int16_t v = 0; v <= 4; ++v) {
    EXPECT_EQ(heartbeat("g", m, gen, std::nullopt, v), 0) << v;
    EXPECT_EQ(heartbeat("g", m, gen + 1, std::nullopt, v), 22) << v;  // ILLEGAL_GENERATION
    EXPECT_EQ(heartbeat("g", "ghost", gen, std::nullopt, v), 25) << v;
    EXPECT_EQ(heartbeat("", m, gen, std::nullopt, v), 24) << v;
  }
}

TEST_F(HeartbeatTest, StaticMemberReplacedIsFenced) {
  start();
  auto r = join_req("s", "");
  r.group_instance_id = "instance-1";
  auto j1 = await(h().join_group(info(5), r));  // static members get an id at once
  ASSERT_EQ(j1.error_code, 0);
  ASSERT_EQ(sync("s", j1.member_id, j1.generation_id, "a").error_code, 0);
  // The same instance id joins again (a restarted client): the old member id is fenced.
  auto j2 = await(h().join_group(info(5), r));
  ASSERT_EQ(j2.error_code, 0);
  EXPECT_NE(j2.member_id, j1.member_id);
  EXPECT_EQ(heartbeat("s", j1.member_id, j1.generation_id, "instance-1"), 82);  // FENCED
}

class LeaveTest : public GroupApiTest {};

TEST_F(LeaveTest, SingleMemberVersionsReportTopLevel) {
  start();
  for (int16_t v = 0; v <= 2; ++v) {
    const std::string g = "l" + std::to_string(v);
    auto [m, gen] = stable_group(g);
    protocol::LeaveGroupRequest r;
    r.group_id = g;
    r.member_id = "ghost";
    auto bad = await(h().leave_group(info(v), r));
    EXPECT_EQ(bad.error_code, 25) << v;
    EXPECT_TRUE(bad.members.empty());
    expect_encodes(bad, v);
    r.member_id = m;
    EXPECT_EQ(await(h().leave_group(info(v), r)).error_code, 0);
    EXPECT_EQ(heartbeat(g, m, gen), 25);
  }
}

TEST_F(LeaveTest, BatchedMembers) {
  start();
  for (int16_t v = 3; v <= 5; ++v) {
    const std::string g = "b" + std::to_string(v);
    auto [m, gen] = stable_group(g);
    protocol::LeaveGroupRequest r;
    r.group_id = g;
    r.members.push_back({m, std::nullopt, "bye"});
    r.members.push_back({"ghost", std::nullopt, std::nullopt});
    auto resp = await(h().leave_group(info(v), r));
    EXPECT_EQ(resp.error_code, 0) << v;
    ASSERT_EQ(resp.members.size(), 2u);
    EXPECT_EQ(resp.members[0].member_id, m);
    EXPECT_EQ(resp.members[0].error_code, 0);
    EXPECT_EQ(resp.members[1].error_code, 25);
    expect_encodes(resp, v);
    protocol::DescribeGroupsRequest d;
    d.groups = {g};
    EXPECT_EQ(await(h().describe_groups(info(0), d)).groups.at(0).group_state, "Empty");
  }
}

class AdminTest : public GroupApiTest {};

TEST_F(AdminTest, ListGroupsWithStatesFilter) {
  start();
  stable_group("stable");
  commit("empty", 2, {{"t1", 0, 5}});  // offsets only: an Empty group
  for (int16_t v = 0; v <= 5; ++v) {
    protocol::ListGroupsRequest r;
    auto all = await(h().list_groups(info(v), r));
    EXPECT_EQ(all.error_code, 0);
    EXPECT_EQ(all.groups.size(), 2u) << v;
    expect_encodes(all, v);
    if (v < 4) continue;
    r.states_filter = {"stable"};  // case-insensitive
    auto only = await(h().list_groups(info(v), r));
    ASSERT_EQ(only.groups.size(), 1u);
    EXPECT_EQ(only.groups[0].group_id, "stable");
    EXPECT_EQ(only.groups[0].group_state, "Stable");
    EXPECT_EQ(only.groups[0].protocol_type, "consumer");
    if (v >= 5) {
      r.states_filter.clear();
      r.types_filter = {"consumer"};  // KIP-848 groups only: none here
      EXPECT_TRUE(await(h().list_groups(info(v), r)).groups.empty());
      r.types_filter = {"classic"};
      EXPECT_EQ(await(h().list_groups(info(v), r)).groups.size(), 2u);
    }
  }
}

TEST_F(AdminTest, DescribeGroups) {
  start();
  auto [m, gen] = stable_group("g");
  for (int16_t v = 0; v <= 5; ++v) {
    protocol::DescribeGroupsRequest r;
    r.groups = {"g", "unknown"};
    r.include_authorized_operations = true;
    auto resp = await(h().describe_groups(info(v), r));
    ASSERT_EQ(resp.groups.size(), 2u);
    const auto& g = resp.groups[0];
    EXPECT_EQ(g.error_code, 0);
    EXPECT_EQ(g.group_state, "Stable");
    EXPECT_EQ(g.protocol_type, "consumer");
    EXPECT_EQ(g.protocol_data, "range");
    ASSERT_EQ(g.members.size(), 1u);
    EXPECT_EQ(g.members[0].member_id, m);
    EXPECT_EQ(g.members[0].client_id, "client-a");
    EXPECT_EQ(g.members[0].client_host, "/127.0.0.1");
    EXPECT_EQ(g.members[0].member_assignment.view(), "assign");
    EXPECT_EQ(g.members[0].member_metadata.view(), subscription({"t1"}));
    EXPECT_EQ(g.authorized_operations, v >= 3 ? kAllGroupOperations : INT32_MIN);
    EXPECT_EQ(resp.groups[1].group_state, "Dead");
    expect_encodes(resp, v);
  }
}

TEST_F(AdminTest, DeleteGroups) {
  start();
  stable_group("busy");
  commit("idle", 2, {{"t1", 0, 5}});
  for (int16_t v = 0; v <= 2; ++v) {
    protocol::DeleteGroupsRequest r;
    r.groups_names = {"busy", "idle", "missing"};
    auto resp = await(h().delete_groups(info(v), r));
    ASSERT_EQ(resp.results.size(), 3u);
    EXPECT_EQ(resp.results[0].group_id, "busy");
    EXPECT_EQ(resp.results[0].error_code, 68);               // NON_EMPTY_GROUP
    EXPECT_EQ(resp.results[1].error_code, v == 0 ? 0 : 69);  // deleted by v0 already
    EXPECT_EQ(resp.results[2].error_code, 69);               // GROUP_ID_NOT_FOUND
    expect_encodes(resp, v);
  }
}

TEST_F(AdminTest, NotLoadedAnswersLoadInProgress) {
  start(/*load=*/false);
  EXPECT_EQ(heartbeat("g", "m", 1), 0);  // Kafka answers heartbeats NONE while loading
  EXPECT_EQ(await(h().join_group(info(5), join_req("g", ""))).error_code, 14);
  EXPECT_EQ(await(h().list_groups(info(3), {})).error_code, 14);
}

}  // namespace
}  // namespace shale::broker::testing
