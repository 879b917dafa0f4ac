// JoinGroup: MEMBER_ID_REQUIRED, validation, protocol selection, the initial delay, rebalances
// on joins, rebalance timeouts, pending members, leader/follower re-joins and group.max.size.
#include <gtest/gtest.h>

#include "harness.h"

namespace shale::group::testing {
namespace {

TEST(Join, UnknownMemberGetsMemberIdRequiredThenJoins) {
  Harness h;
  JoinRequest r = Harness::join_req("g", "");
  r.client_id = "my-client";
  JoinFuture first = h.join(r);
  ASSERT_TRUE(first.done());
  EXPECT_EQ(first.error(), err::kMemberIdRequired);
  const std::string id = first.get().member_id;
  EXPECT_EQ(id.rfind("my-client-", 0), 0u) << id;
  EXPECT_EQ(id.size(), std::string("my-client-").size() + 36);
  EXPECT_EQ(h.state("g"), "Empty");

  r.member_id = id;
  JoinFuture second = h.join(r);
  ASSERT_TRUE(second.done());
  const JoinResult& jr = second.get();
  EXPECT_EQ(jr.error_code, err::kNone);
  EXPECT_EQ(jr.member_id, id);
  EXPECT_EQ(jr.generation_id, 1);
  EXPECT_EQ(jr.leader, id);
  EXPECT_EQ(jr.protocol_type, "consumer");
  EXPECT_EQ(jr.protocol_name, "range");
  ASSERT_EQ(jr.members.size(), 1u);
  EXPECT_EQ(jr.members[0].member_id, id);
  EXPECT_EQ(jr.members[0].metadata, "md");
  EXPECT_EQ(h.state("g"), "CompletingRebalance");
}

TEST(Join, MemberIdsAreUnique) {
  Harness h;
  JoinFuture a = h.join(Harness::join_req("g", ""));
  JoinFuture b = h.join(Harness::join_req("g", ""));
  EXPECT_NE(a.get().member_id, b.get().member_id);
}

TEST(Join, OldVersionsJoinWithoutMemberIdRoundTrip) {
  Harness h;
  JoinRequest r = Harness::join_req("g", "");
  r.api_version = 3;
  JoinFuture f = h.join(r);
  ASSERT_TRUE(f.done());
  EXPECT_EQ(f.error(), err::kNone);
  EXPECT_FALSE(f.get().member_id.empty());
  EXPECT_EQ(f.get().generation_id, 1);
}

TEST(Join, V0UsesSessionTimeoutAsRebalanceTimeout) {
  Harness h;
  JoinRequest r = Harness::join_req("g", "");
  r.api_version = 0;
  r.rebalance_timeout_ms = -1;
  JoinFuture a = h.join(r);
  ASSERT_EQ(a.error(), err::kNone);
  JoinFuture b = h.join(r);  // rebalance: a must re-join within its session timeout (10 s)
  EXPECT_FALSE(b.done());
  h.advance(9999);
  EXPECT_FALSE(b.done());
  h.advance(1);
  ASSERT_TRUE(b.done());
  EXPECT_EQ(b.get().generation_id, 2);
  EXPECT_EQ(b.get().leader, b.get().member_id);  // a was removed
}

TEST(Join, ValidatesGroupIdAndSessionTimeout) {
  Harness h;
  EXPECT_EQ(h.join(Harness::join_req("", "")).error(), err::kInvalidGroupId);
  JoinRequest r = Harness::join_req("g", "");
  r.session_timeout_ms = 5999;
  EXPECT_EQ(h.join(r).error(), err::kInvalidSessionTimeout);
  r.session_timeout_ms = 1800001;
  EXPECT_EQ(h.join(r).error(), err::kInvalidSessionTimeout);
  r.session_timeout_ms = 6000;
  EXPECT_EQ(h.join(r).error(), err::kMemberIdRequired);
  // Rejected joins leave no group behind.
  EXPECT_EQ(h.c->list_groups({}).groups.size(), 1u);
}

TEST(Join, KnownMemberIdOfUnknownGroupIsUnknown) {
  Harness h;
  EXPECT_EQ(h.join(Harness::join_req("g", "ghost")).error(), err::kUnknownMemberId);
  EXPECT_EQ(h.state("g"), "Dead");
}

TEST(Join, EmptyProtocolListIsInconsistent) {
  Harness h;
  EXPECT_EQ(h.join(Harness::join_req("g", "", {})).error(), err::kInconsistentGroupProtocol);
  JoinRequest r = Harness::join_req("g", "");
  r.protocol_type = "";
  EXPECT_EQ(h.join(r).error(), err::kInconsistentGroupProtocol);
  EXPECT_TRUE(h.c->list_groups({}).groups.empty());
}

TEST(Join, ProtocolTypeAndProtocolsMustMatchTheGroup) {
  Harness h;
  ASSERT_EQ(h.join_new("g").error(), err::kNone);
  JoinRequest other = Harness::join_req("g", "");
  other.protocol_type = "connect";
  EXPECT_EQ(h.join(other).error(), err::kInconsistentGroupProtocol);
  EXPECT_EQ(h.join(Harness::join_req("g", "", {{"roundrobin", "x"}})).error(),
            err::kInconsistentGroupProtocol);
  // One common protocol is enough.
  EXPECT_EQ(h.join(Harness::join_req("g", "", {{"roundrobin", "x"}, {"range", "y"}})).error(),
            err::kMemberIdRequired);
}

TEST(Join, SelectsTheProtocolAllSupportWithMostVotes) {
  Harness h([](CoordinatorConfig& c) { c.initial_rebalance_delay_ms = 100; });
  const std::vector<JoinProtocol> a{{"range", "a"}, {"roundrobin", "a"}, {"sticky", "a"}};
  const std::vector<JoinProtocol> b{{"sticky", "b"}, {"roundrobin", "b"}};
  const std::vector<JoinProtocol> c{{"roundrobin", "c"}, {"sticky", "c"}};
  JoinFuture fa = h.join_new("g", a);
  JoinFuture fb = h.join_new("g", b);
  JoinFuture fc = h.join_new("g", c);
  h.advance(100);  // members arrived during the delay: it is extended once
  EXPECT_FALSE(fa.done());
  h.advance(100);
  ASSERT_TRUE(fa.done() && fb.done() && fc.done());
  // range is not supported by b and c; a and c vote roundrobin (a's first candidate), b sticky.
  EXPECT_EQ(fa.get().protocol_name, "roundrobin");
  EXPECT_EQ(fb.get().protocol_name, "roundrobin");
  // The leader sees every member's metadata for the selected protocol.
  const JoinResult& leader = fa.get().leader == fa.get().member_id ? fa.get() : fb.get();
  ASSERT_EQ(leader.members.size(), 3u);
  for (const auto& m : leader.members) {
    EXPECT_EQ(m.metadata.size(), 1u);
  }
}

TEST(Join, SupportedProtocolsFollowMemberUpdates) {
  Harness h;
  JoinFuture a = h.join_new("g", {{"range", "a"}, {"roundrobin", "a"}});
  ASSERT_EQ(a.error(), err::kNone);
  EXPECT_EQ(a.get().protocol_name, "range");
  // a drops range: its new metadata starts a round that it alone completes.
  JoinFuture a2 = h.rejoin("g", a.get().member_id, {{"roundrobin", "a"}});
  ASSERT_TRUE(a2.done());
  EXPECT_EQ(a2.get().protocol_name, "roundrobin");
  EXPECT_EQ(h.join(Harness::join_req("g", "", {{"range", "b"}})).error(),
            err::kInconsistentGroupProtocol);
  JoinFuture p = h.join(Harness::join_req("g", "", {{"range", "b"}, {"roundrobin", "b"}}));
  ASSERT_EQ(p.error(), err::kMemberIdRequired);
  // Duplicate names in one member's list count once.
  JoinFuture b = h.join(
      Harness::join_req("g", p.get().member_id, {{"roundrobin", "b"}, {"roundrobin", "b2"}}));
  JoinFuture a3 = h.rejoin("g", a.get().member_id, {{"roundrobin", "a"}});
  ASSERT_TRUE(b.done() && a3.done());
  EXPECT_EQ(b.error(), err::kNone);
  EXPECT_EQ(a3.get().protocol_name, "roundrobin");
}

TEST(Join, InitialRebalanceDelayWaitsForMoreMembers) {
  Harness h([](CoordinatorConfig& c) { c.initial_rebalance_delay_ms = 3000; });
  JoinFuture a = h.join_new("g");
  EXPECT_FALSE(a.done());
  EXPECT_EQ(h.state("g"), "PreparingRebalance");
  h.advance(1000);
  JoinFuture b = h.join_new("g");
  EXPECT_FALSE(b.done());
  h.advance(2000);  // first delay over, but a member arrived: wait another delay
  EXPECT_FALSE(a.done());
  h.advance(2999);
  EXPECT_FALSE(a.done());
  h.advance(1);
  ASSERT_TRUE(a.done() && b.done());
  EXPECT_EQ(a.get().generation_id, 1);
  EXPECT_EQ(b.get().generation_id, 1);
  EXPECT_EQ(a.get().leader, b.get().leader);
  const JoinResult& leader = a.get().leader == a.get().member_id ? a.get() : b.get();
  EXPECT_EQ(leader.members.size(), 2u);
}

TEST(Join, InitialDelayIsBoundedByTheRebalanceTimeout) {
  Harness h([](CoordinatorConfig& c) { c.initial_rebalance_delay_ms = 3000; });
  auto short_rebalance = [](JoinRequest& r) { r.rebalance_timeout_ms = 4000; };
  JoinFuture a = h.join_new("g", {{"range", "md"}}, short_rebalance);
  h.advance(2000);
  JoinFuture b = h.join_new("g", {{"range", "md"}}, short_rebalance);
  h.advance(1000);  // 3 s: extend by min(3000, 4000-3000) = 1000
  EXPECT_FALSE(a.done());
  h.advance(1000);
  EXPECT_TRUE(a.done() && b.done());
}

TEST(Join, NewMemberTriggersRebalanceOfStableGroup) {
  Harness h;
  TwoMembers t = stable_pair(h);
  EXPECT_EQ(h.state("g"), "Stable");
  JoinFuture c = h.join_new("g");
  EXPECT_FALSE(c.done());
  EXPECT_EQ(h.state("g"), "PreparingRebalance");
  EXPECT_EQ(h.heartbeat("g", t.a, t.generation), err::kRebalanceInProgress);
  EXPECT_EQ(h.heartbeat("g", t.b, t.generation), err::kRebalanceInProgress);
  JoinFuture a = h.rejoin("g", t.a);
  EXPECT_FALSE(a.done());
  JoinFuture b = h.rejoin("g", t.b);
  ASSERT_TRUE(a.done() && b.done() && c.done());
  EXPECT_EQ(a.get().generation_id, t.generation + 1);
  EXPECT_EQ(a.get().leader, t.a);
  EXPECT_EQ(a.get().members.size(), 3u);
  EXPECT_TRUE(b.get().members.empty());
  EXPECT_TRUE(c.get().members.empty());
  EXPECT_EQ(b.get().member_id, t.b);  // members keep their ids across rebalances
}

TEST(Join, RebalanceTimeoutRemovesMembersThatDidNotRejoin) {
  Harness h;
  TwoMembers t = stable_pair(h);
  JoinFuture c = h.join_new("g");
  JoinFuture a = h.rejoin("g", t.a);
  for (int i = 0; i < 3; ++i) {  // b stays alive but does not re-join
    h.advance(9999);
    EXPECT_EQ(h.heartbeat("g", t.b, t.generation), err::kRebalanceInProgress);
  }
  h.advance(2);
  EXPECT_FALSE(a.done());
  h.advance(1);  // the rebalance timeout (30 s, the largest of the members')
  ASSERT_TRUE(a.done() && c.done());
  EXPECT_EQ(a.get().generation_id, t.generation + 1);
  ASSERT_EQ(a.get().members.size(), 2u);
  for (const auto& m : a.get().members) EXPECT_NE(m.member_id, t.b);
  EXPECT_EQ(h.heartbeat("g", t.b, t.generation + 1), err::kUnknownMemberId);
}

TEST(Join, LeaderThatDidNotRejoinIsReplaced) {
  Harness h;
  TwoMembers t = stable_pair(h);
  JoinFuture b = h.rejoin("g", t.b, {{"range", "changed"}});  // metadata change: rebalance
  EXPECT_FALSE(b.done());
  h.advance(30000);
  ASSERT_TRUE(b.done());
  EXPECT_EQ(b.get().leader, t.b);
  ASSERT_EQ(b.get().members.size(), 1u);
  EXPECT_EQ(b.get().members[0].metadata, "changed");
}

TEST(Join, SessionTimeoutRemovesMemberAndRebalances) {
  Harness h;
  TwoMembers t = stable_pair(h);
  h.advance(5000);
  EXPECT_EQ(h.heartbeat("g", t.b, t.generation), err::kNone);
  h.advance(4999);
  EXPECT_EQ(h.heartbeat("g", t.b, t.generation), err::kNone);
  EXPECT_EQ(h.state("g"), "Stable");
  h.advance(1);  // a never heartbeat: its 10 s session ends
  EXPECT_EQ(h.state("g"), "PreparingRebalance");
  EXPECT_EQ(h.heartbeat("g", t.a, t.generation), err::kUnknownMemberId);
  EXPECT_EQ(h.heartbeat("g", t.b, t.generation), err::kRebalanceInProgress);
  JoinFuture b = h.rejoin("g", t.b);
  ASSERT_TRUE(b.done());
  EXPECT_EQ(b.get().generation_id, t.generation + 1);
  EXPECT_EQ(b.get().leader, t.b);
}

TEST(Join, HeartbeatsKeepMembersAlive) {
  Harness h;
  TwoMembers t = stable_pair(h);
  for (int i = 0; i < 20; ++i) {
    h.advance(9000);
    EXPECT_EQ(h.heartbeat("g", t.a, t.generation), err::kNone);
    EXPECT_EQ(h.heartbeat("g", t.b, t.generation), err::kNone);
  }
  EXPECT_EQ(h.state("g"), "Stable");
}

TEST(Join, HeartbeatErrors) {
  Harness h;
  TwoMembers t = stable_pair(h);
  EXPECT_EQ(h.heartbeat("g", t.a, t.generation + 1), err::kIllegalGeneration);
  EXPECT_EQ(h.heartbeat("g", t.a, t.generation - 1), err::kIllegalGeneration);
  EXPECT_EQ(h.heartbeat("g", "nobody", t.generation), err::kUnknownMemberId);
  EXPECT_EQ(h.heartbeat("other", t.a, t.generation), err::kUnknownMemberId);
  EXPECT_EQ(h.heartbeat("", t.a, t.generation), err::kInvalidGroupId);
  // A dynamic member named with an instance id it does not own.
  EXPECT_EQ(h.heartbeat("g", t.a, t.generation, "instance"), err::kUnknownMemberId);
}

TEST(Join, PendingMemberExpiresAfterSessionTimeout) {
  Harness h;
  JoinFuture first = h.join(Harness::join_req("g", ""));
  const std::string id = first.get().member_id;
  h.advance(10000);
  EXPECT_EQ(h.rejoin("g", id).error(), err::kUnknownMemberId);
}

TEST(Join, PendingMemberHoldsTheRebalanceUntilItJoins) {
  Harness h;
  TwoMembers t = stable_pair(h);
  JoinFuture pending = h.join(Harness::join_req("g", ""));
  ASSERT_EQ(pending.error(), err::kMemberIdRequired);
  EXPECT_EQ(h.state("g"), "Stable");  // a pending member alone does not rebalance
  JoinFuture a = h.rejoin("g", t.a);  // the leader asks for a rebalance
  JoinFuture b = h.rejoin("g", t.b);
  EXPECT_FALSE(a.done());  // waits for the pending member
  JoinFuture c = h.rejoin("g", pending.get().member_id);
  ASSERT_TRUE(a.done() && b.done() && c.done());
  EXPECT_EQ(a.get().members.size(), 3u);
}

TEST(Join, ExpiredPendingMemberNoLongerHoldsTheRebalance) {
  Harness h;
  TwoMembers t = stable_pair(h);
  JoinFuture pending = h.join(Harness::join_req("g", ""));
  JoinFuture a = h.rejoin("g", t.a);
  JoinFuture b = h.rejoin("g", t.b);
  EXPECT_FALSE(a.done());
  h.advance(10000);  // the pending member's session timeout
  ASSERT_TRUE(a.done() && b.done());
  EXPECT_EQ(a.get().members.size(), 2u);
}

TEST(Join, FollowerRejoinWithSameMetadataInStableGroupDoesNotRebalance) {
  Harness h;
  TwoMembers t = stable_pair(h);
  JoinFuture b = h.rejoin("g", t.b);
  ASSERT_TRUE(b.done());
  EXPECT_EQ(b.error(), err::kNone);
  EXPECT_EQ(b.get().generation_id, t.generation);
  EXPECT_EQ(b.get().leader, t.a);
  EXPECT_TRUE(b.get().members.empty());
  EXPECT_EQ(h.state("g"), "Stable");
}

TEST(Join, FollowerRejoinWithNewMetadataRebalances) {
  Harness h;
  TwoMembers t = stable_pair(h);
  JoinFuture b = h.rejoin("g", t.b, {{"range", "new"}});
  EXPECT_FALSE(b.done());
  EXPECT_EQ(h.state("g"), "PreparingRebalance");
  JoinFuture a = h.rejoin("g", t.a);
  ASSERT_TRUE(a.done() && b.done());
  EXPECT_EQ(a.get().generation_id, t.generation + 1);
}

TEST(Join, RejoinDuringCompletingRebalanceGetsTheSameGenerationAgain) {
  Harness h;
  JoinFuture a = h.join_new("g");
  ASSERT_EQ(a.error(), err::kNone);
  EXPECT_EQ(h.state("g"), "CompletingRebalance");
  JoinFuture again = h.rejoin("g", a.get().member_id);
  ASSERT_TRUE(again.done());
  EXPECT_EQ(again.get().generation_id, a.get().generation_id);
  EXPECT_EQ(again.get().members.size(), 1u);  // the leader gets the members again
  EXPECT_EQ(h.state("g"), "CompletingRebalance");
}

TEST(Join, CooperativeStyleRepeatedJoinsKeepMemberIds) {
  Harness h;
  TwoMembers t = stable_pair(h);
  int32_t gen = t.generation;
  for (int round = 0; round < 3; ++round) {
    // Cooperative rebalancing: members re-join with their ids (and owned partitions in the
    // metadata); the broker just runs another generation.
    const std::string owned = "owned" + std::to_string(round);
    JoinFuture a = h.rejoin("g", t.a, {{"cooperative-sticky", owned}, {"range", "md"}});
    JoinFuture b = h.rejoin("g", t.b, {{"cooperative-sticky", owned}, {"range", "md"}});
    ASSERT_TRUE(a.done() && b.done());
    EXPECT_EQ(a.get().member_id, t.a);
    EXPECT_EQ(b.get().member_id, t.b);
    EXPECT_EQ(a.get().generation_id, gen + 1);
    gen = a.get().generation_id;
    EXPECT_EQ(a.get().protocol_name, "cooperative-sticky");
    SyncFuture sb = h.sync("g", t.b, gen);
    SyncFuture sa = h.sync("g", t.a, gen, {{t.a, "x"}, {t.b, "y"}});
    EXPECT_EQ(sb.get().assignment, "y");
    EXPECT_EQ(h.state("g"), "Stable");
  }
}

TEST(Join, ARetriedParkedJoinAnswersTheEarlierOne) {
  Harness h;
  TwoMembers t = stable_pair(h);
  JoinFuture c = h.join_new("g");
  JoinFuture a1 = h.rejoin("g", t.a);
  JoinFuture a2 = h.rejoin("g", t.a);
  ASSERT_TRUE(a1.done());
  EXPECT_EQ(a1.error(), err::kRebalanceInProgress);
  EXPECT_FALSE(a2.done());
  JoinFuture b = h.rejoin("g", t.b);
  ASSERT_TRUE(a2.done());
  EXPECT_EQ(a2.error(), err::kNone);
  EXPECT_EQ(*a1.calls, 1);
}

TEST(Join, GroupMaxSize) {
  Harness h([](CoordinatorConfig& c) { c.max_size = 2; });
  TwoMembers t = stable_pair(h);
  JoinFuture c = h.join(Harness::join_req("g", ""));  // refused before getting a member id
  ASSERT_TRUE(c.done());
  EXPECT_EQ(c.error(), err::kGroupMaxSizeReached);
  EXPECT_EQ(c.get().member_id, "");
  EXPECT_EQ(h.state("g"), "Stable");
  // Existing members are still accepted.
  EXPECT_EQ(h.rejoin("g", t.b).error(), err::kNone);
}

TEST(Join, GroupMaxSizeDuringRebalanceCountsWaitingMembers) {
  Harness h([](CoordinatorConfig& c) {
    c.max_size = 2;
    c.initial_rebalance_delay_ms = 1000;
  });
  JoinFuture a = h.join_new("g");
  JoinFuture b = h.join_new("g");
  JoinFuture c = h.join(Harness::join_req("g", ""));
  ASSERT_TRUE(c.done());
  EXPECT_EQ(c.error(), err::kGroupMaxSizeReached);
  h.advance(1000);  // the initial delay, extended once for b
  EXPECT_FALSE(a.done());
  h.advance(1000);
  ASSERT_TRUE(a.done() && b.done());
  EXPECT_EQ(a.error(), err::kNone);
}

TEST(Join, NewMemberThatNeverCompletesItsJoinExpires) {
  Harness h([](CoordinatorConfig& c) { c.new_member_join_timeout_ms = 60000; });
  TwoMembers t = stable_pair(h);
  // c's long rebalance timeout keeps the round open; a and b heartbeat but never re-join.
  JoinFuture c =
      h.join_new("g", {{"range", "md"}}, [](JoinRequest& r) { r.rebalance_timeout_ms = 600000; });
  EXPECT_FALSE(c.done());
  for (int i = 0; i < 6; ++i) {
    h.advance(9000);
    EXPECT_EQ(h.heartbeat("g", t.a, t.generation), err::kRebalanceInProgress);
  }
  EXPECT_FALSE(c.done());
  h.advance(6000);  // 60 s after it joined
  ASSERT_TRUE(c.done());
  EXPECT_EQ(c.error(), err::kUnknownMemberId);
  EXPECT_EQ(h.state("g"), "PreparingRebalance");
}

}  // namespace
}  // namespace shale::group::testing
