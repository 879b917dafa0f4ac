// SyncGroup (leader's assignment to everyone, followers waiting, errors, pending-sync
// expiry, store failures), LeaveGroup (single, batch, by instance id) and static membership.
#include <gtest/gtest.h>

#include "harness.h"

namespace shale::group::testing {
namespace {

TEST(Sync, LeaderAssignmentReachesWaitingFollowers) {
  Harness h;
  JoinFuture a = h.join_new("g");
  JoinFuture b = h.join_new("g");
  JoinFuture a2 = h.rejoin("g", a.get().member_id);
  ASSERT_TRUE(a2.done() && b.done());
  const std::string la = a2.get().member_id, lb = b.get().member_id;
  const int32_t gen = a2.get().generation_id;
  SyncFuture fb = h.sync("g", lb, gen);
  EXPECT_FALSE(fb.done());                           // followers wait for the leader
  EXPECT_EQ(h.heartbeat("g", lb, gen), err::kNone);  // heartbeats are fine meanwhile
  SyncFuture fa = h.sync("g", la, gen, {{la, "A"}, {lb, "B"}});
  ASSERT_TRUE(fa.done() && fb.done());
  EXPECT_EQ(fa.get().assignment, "A");
  EXPECT_EQ(fb.get().assignment, "B");
  EXPECT_EQ(fb.get().protocol_type, "consumer");
  EXPECT_EQ(fb.get().protocol_name, "range");
  EXPECT_EQ(h.state("g"), "Stable");
  // A late follower in a Stable group gets its assignment at once.
  SyncFuture again = h.sync("g", lb, gen);
  ASSERT_TRUE(again.done());
  EXPECT_EQ(again.get().assignment, "B");
}

TEST(Sync, MembersMissingFromTheLeadersAssignmentGetAnEmptyOne) {
  Harness h;
  TwoMembers t = stable_pair(h);
  JoinFuture a = h.rejoin("g", t.a);
  JoinFuture b = h.rejoin("g", t.b);
  SyncFuture fb = h.sync("g", t.b, t.generation + 1);
  SyncFuture fa = h.sync("g", t.a, t.generation + 1, {{t.a, "A"}, {"stranger", "S"}});
  ASSERT_TRUE(fb.done());
  EXPECT_EQ(fb.error(), err::kNone);
  EXPECT_EQ(fb.get().assignment, "");
}

TEST(Sync, Errors) {
  Harness h;
  TwoMembers t = stable_pair(h);
  EXPECT_EQ(h.sync("g", t.a, t.generation + 1).error(), err::kIllegalGeneration);
  EXPECT_EQ(h.sync("g", "nobody", t.generation).error(), err::kUnknownMemberId);
  EXPECT_EQ(h.sync("nogroup", t.a, t.generation).error(), err::kUnknownMemberId);
  EXPECT_EQ(h.sync("", t.a, t.generation).error(), err::kInvalidGroupId);
  SyncRequest r;
  r.group_id = "g";
  r.member_id = t.b;
  r.generation_id = t.generation;
  r.protocol_name = "roundrobin";
  SyncFuture f;
  h.c->sync_group(r, f.callback());
  EXPECT_EQ(f.error(), err::kInconsistentGroupProtocol);
  r.protocol_name = "range";
  r.protocol_type = "connect";
  SyncFuture f2;
  h.c->sync_group(r, f2.callback());
  EXPECT_EQ(f2.error(), err::kInconsistentGroupProtocol);
  r.protocol_type = "consumer";
  SyncFuture f3;
  h.c->sync_group(r, f3.callback());
  EXPECT_EQ(f3.error(), err::kNone);
}

TEST(Sync, DuringPreparingRebalanceIsRebalanceInProgress) {
  Harness h;
  TwoMembers t = stable_pair(h);
  JoinFuture c = h.join_new("g");
  EXPECT_EQ(h.sync("g", t.b, t.generation).error(), err::kRebalanceInProgress);
}

TEST(Sync, WaitingFollowerIsToldToRejoinWhenANewMemberArrives) {
  Harness h;
  TwoMembers t = stable_pair(h);
  JoinFuture a = h.rejoin("g", t.a);
  JoinFuture b = h.rejoin("g", t.b);
  ASSERT_TRUE(a.done() && b.done());
  SyncFuture fb = h.sync("g", t.b, t.generation + 1);
  EXPECT_FALSE(fb.done());
  JoinFuture c = h.join_new("g");
  ASSERT_TRUE(fb.done());
  EXPECT_EQ(fb.error(), err::kRebalanceInProgress);
  EXPECT_EQ(h.state("g"), "PreparingRebalance");
}

TEST(Sync, LeaderThatNeverSyncsStallsNothing) {
  Harness h;
  TwoMembers t = stable_pair(h);
  JoinFuture a = h.rejoin("g", t.a);
  JoinFuture b = h.rejoin("g", t.b);
  SyncFuture fb = h.sync("g", t.b, t.generation + 1);
  for (int i = 0; i < 3; ++i) {
    h.advance(9999);
    EXPECT_EQ(h.heartbeat("g", t.a, t.generation + 1), err::kNone);
    EXPECT_EQ(h.heartbeat("g", t.b, t.generation + 1), err::kNone);
  }
  EXPECT_FALSE(fb.done());
  h.advance(3);  // 30 s: the leader heartbeats but never sent SyncGroup: it is removed
  EXPECT_EQ(h.heartbeat("g", t.a, t.generation + 1), err::kUnknownMemberId);
  ASSERT_TRUE(fb.done());
  EXPECT_EQ(fb.error(), err::kRebalanceInProgress);
  JoinFuture b2 = h.rejoin("g", t.b);
  ASSERT_TRUE(b2.done());
  EXPECT_EQ(b2.get().leader, t.b);
}

TEST(Sync, FollowerThatNeverSyncsIsRemovedAfterTheRebalanceTimeout) {
  Harness h;
  TwoMembers t = stable_pair(h);
  JoinFuture a = h.rejoin("g", t.a);
  JoinFuture b = h.rejoin("g", t.b);
  SyncFuture fa = h.sync("g", t.a, t.generation + 1, {{t.a, "A"}, {t.b, "B"}});
  ASSERT_TRUE(fa.done());
  EXPECT_EQ(h.state("g"), "Stable");
  for (int i = 0; i < 3; ++i) {
    h.advance(9999);
    EXPECT_EQ(h.heartbeat("g", t.a, t.generation + 1), err::kNone);
    EXPECT_EQ(h.heartbeat("g", t.b, t.generation + 1), err::kNone);
  }
  h.advance(3);  // b heartbeats but never synced
  EXPECT_EQ(h.heartbeat("g", t.b, t.generation + 1), err::kUnknownMemberId);
  EXPECT_EQ(h.heartbeat("g", t.a, t.generation + 1), err::kRebalanceInProgress);
}

TEST(Sync, StoreFailureFailsTheSyncAndRebalances) {
  Harness h;
  TwoMembers t = stable_pair(h);
  JoinFuture a = h.rejoin("g", t.a);
  JoinFuture b = h.rejoin("g", t.b);
  SyncFuture fb = h.sync("g", t.b, t.generation + 1);
  h.meta.fail_next_commits(1);
  SyncFuture fa = h.sync("g", t.a, t.generation + 1, {{t.a, "A"}, {t.b, "B"}});
  ASSERT_TRUE(fa.done() && fb.done());
  EXPECT_EQ(fa.error(), err::kCoordinatorNotAvailable);
  EXPECT_EQ(fb.error(), err::kCoordinatorNotAvailable);
  EXPECT_EQ(fb.get().assignment, "");
  EXPECT_EQ(h.state("g"), "PreparingRebalance");
  JoinFuture a2 = h.rejoin("g", t.a);
  JoinFuture b2 = h.rejoin("g", t.b);
  ASSERT_TRUE(a2.done());
  EXPECT_EQ(a2.get().generation_id, t.generation + 2);
}

TEST(Leave, MemberLeavingTriggersRebalance) {
  Harness h;
  TwoMembers t = stable_pair(h);
  LeaveResult r = h.c->leave_group(LeaveRequest{"g", {{t.b, std::nullopt, "bye"}}});
  EXPECT_EQ(r.error_code, err::kNone);
  ASSERT_EQ(r.members.size(), 1u);
  EXPECT_EQ(r.members[0].error_code, err::kNone);
  EXPECT_EQ(h.state("g"), "PreparingRebalance");
  JoinFuture a = h.rejoin("g", t.a);
  ASSERT_TRUE(a.done());
  EXPECT_EQ(a.get().members.size(), 1u);
  EXPECT_EQ(a.get().generation_id, t.generation + 1);
}

TEST(Leave, LastMemberLeavingEmptiesTheGroup) {
  Harness h;
  TwoMembers t = stable_pair(h);
  auto r = h.c->leave_group(LeaveRequest{"g", {{t.a, std::nullopt, {}}, {t.b, std::nullopt, {}}}});
  EXPECT_EQ(r.members[0].error_code, err::kNone);
  EXPECT_EQ(r.members[1].error_code, err::kNone);
  EXPECT_EQ(h.state("g"), "Empty");
  // The empty generation was stored, so a restart keeps it.
  h.restart();
  EXPECT_EQ(h.state("g"), "Empty");
  JoinFuture a = h.join_new("g");
  EXPECT_EQ(a.get().generation_id, t.generation + 2);
}

TEST(Leave, ParkedJoinOfLeavingMemberIsAnswered) {
  Harness h;
  TwoMembers t = stable_pair(h);
  JoinFuture a = h.rejoin("g", t.a);  // parks: b has not re-joined
  EXPECT_FALSE(a.done());
  JoinFuture b = h.rejoin("g", t.b, {{"range", "x"}});
  ASSERT_TRUE(a.done());
  JoinFuture c = h.join_new("g");
  JoinFuture a2 = h.rejoin("g", t.a);
  EXPECT_FALSE(a2.done());
  auto r = h.c->leave_group(LeaveRequest{"g", {{t.b, std::nullopt, {}}}});
  EXPECT_EQ(r.members[0].error_code, err::kNone);
  ASSERT_TRUE(a2.done() && c.done());  // b's leave completes the round
  EXPECT_EQ(a2.get().members.size(), 2u);
}

TEST(Leave, UnknownMembersAndGroups) {
  Harness h;
  TwoMembers t = stable_pair(h);
  auto r = h.c->leave_group(LeaveRequest{"g", {{"nobody", std::nullopt, {}}, {"", "inst", {}}}});
  EXPECT_EQ(r.members[0].error_code, err::kUnknownMemberId);
  EXPECT_EQ(r.members[1].error_code, err::kUnknownMemberId);
  EXPECT_EQ(h.state("g"), "Stable");
  EXPECT_EQ(h.c->leave_group(LeaveRequest{"nogroup", {{t.a, std::nullopt, {}}}}).error_code,
            err::kUnknownMemberId);
}

TEST(Leave, PendingMemberCanLeave) {
  Harness h;
  TwoMembers t = stable_pair(h);
  JoinFuture p = h.join(Harness::join_req("g", ""));
  auto r = h.c->leave_group(LeaveRequest{"g", {{p.get().member_id, std::nullopt, {}}}});
  EXPECT_EQ(r.members[0].error_code, err::kNone);
  EXPECT_EQ(h.rejoin("g", p.get().member_id).error(), err::kUnknownMemberId);
  // Like Kafka, any successful leave of a Stable group starts a rebalance.
  EXPECT_EQ(h.state("g"), "PreparingRebalance");
}

// ---- static membership ----

JoinFuture join_static(Harness& h, const std::string& instance, const std::string& member_id = "",
                       std::vector<JoinProtocol> protocols = {{"range", "md"}}) {
  JoinRequest r = Harness::join_req("g", member_id, std::move(protocols));
  r.group_instance_id = instance;
  return h.join(r);
}

struct StaticPair {
  std::string a, b;  // a: static "ia" (leader); b: static "ib"
  int32_t generation = 0;
};

StaticPair stable_static_pair(Harness& h, std::vector<JoinProtocol> p = {{"range", "md"}}) {
  StaticPair s;
  JoinFuture a = join_static(h, "ia", "", p);  // no MEMBER_ID_REQUIRED for static members
  EXPECT_EQ(a.error(), err::kNone);
  s.a = a.get().member_id;
  EXPECT_EQ(s.a.rfind("ia-", 0), 0u);
  JoinFuture b = join_static(h, "ib", "", p);
  JoinFuture a2 = join_static(h, "ia", s.a, p);
  EXPECT_TRUE(a2.done() && b.done());
  s.b = b.get().member_id;
  s.generation = a2.get().generation_id;
  SyncFuture sb = h.sync("g", s.b, s.generation);
  SyncFuture sa = h.sync("g", s.a, s.generation, {{s.a, "A"}, {s.b, "B"}});
  EXPECT_EQ(sb.get().assignment, "B");
  return s;
}

TEST(Static, RestartedFollowerReplacesItsOldIdWithoutRebalance) {
  Harness h;
  StaticPair s = stable_static_pair(h);
  JoinFuture b = join_static(h, "ib");  // restarted: no member id
  ASSERT_TRUE(b.done());
  EXPECT_EQ(b.error(), err::kNone);
  const std::string nb = b.get().member_id;
  EXPECT_NE(nb, s.b);
  EXPECT_EQ(b.get().generation_id, s.generation);
  EXPECT_FALSE(b.get().skip_assignment);
  EXPECT_TRUE(b.get().members.empty());
  EXPECT_EQ(h.state("g"), "Stable");
  EXPECT_EQ(h.heartbeat("g", s.a, s.generation), err::kNone);
  // The new id gets the old assignment; the old id is fenced.
  SyncFuture sb = h.sync("g", nb, s.generation);
  EXPECT_EQ(sb.get().assignment, "B");
  EXPECT_EQ(h.heartbeat("g", s.b, s.generation, "ib"), err::kFencedInstanceId);
  EXPECT_EQ(h.heartbeat("g", s.b, s.generation), err::kUnknownMemberId);
  // And it is durable.
  h.restart();
  EXPECT_EQ(h.heartbeat("g", nb, s.generation, "ib"), err::kNone);
}

TEST(Static, RestartedLeaderGetsMembersButSkipsAssignment) {
  Harness h;
  StaticPair s = stable_static_pair(h);
  JoinFuture a = join_static(h, "ia");
  ASSERT_TRUE(a.done());
  EXPECT_EQ(a.error(), err::kNone);
  EXPECT_TRUE(a.get().skip_assignment);
  EXPECT_EQ(a.get().leader, a.get().member_id);
  EXPECT_EQ(a.get().members.size(), 2u);
  EXPECT_EQ(h.state("g"), "Stable");
}

TEST(Static, OldClientsDoNotGetSkipAssignment) {
  Harness h;
  StaticPair s = stable_static_pair(h);
  JoinRequest r = Harness::join_req("g", "");
  r.group_instance_id = "ia";
  r.api_version = 8;
  JoinFuture a = h.join(r);
  ASSERT_TRUE(a.done());
  EXPECT_EQ(a.error(), err::kNone);
  EXPECT_FALSE(a.get().skip_assignment);
  EXPECT_TRUE(a.get().members.empty());
  EXPECT_EQ(a.get().leader, s.a);  // Kafka answers with the leader id from before
  EXPECT_EQ(h.state("g"), "Stable");
}

TEST(Static, ReplacementOfTheLastMissingMemberCompletesTheRound) {
  Harness h;
  StaticPair s = stable_static_pair(h);
  JoinFuture a = join_static(h, "ia", s.a, {{"range", "new"}});  // rebalance
  EXPECT_FALSE(a.done());
  JoinFuture b = join_static(h, "ib");  // b restarted and comes back without its id
  ASSERT_TRUE(a.done() && b.done());
  EXPECT_EQ(a.get().generation_id, s.generation + 1);
  EXPECT_NE(b.get().member_id, s.b);
}

TEST(Static, ProtocolsThatChangeTheSelectionForceARebalance) {
  Harness h;
  StaticPair s = stable_static_pair(h, {{"range", "md"}, {"roundrobin", "md"}});
  JoinFuture b = join_static(h, "ib", "", {{"roundrobin", "x"}});
  EXPECT_FALSE(b.done());
  EXPECT_EQ(h.state("g"), "PreparingRebalance");
  JoinFuture a = join_static(h, "ia", s.a, {{"range", "md"}, {"roundrobin", "md"}});
  ASSERT_TRUE(a.done() && b.done());
  EXPECT_EQ(a.get().protocol_name, "roundrobin");
}

TEST(Static, NewMetadataForTheSameProtocolDoesNotRebalance) {
  // Kafka only checks whether the selected protocol would change.
  Harness h;
  StaticPair s = stable_static_pair(h);
  JoinFuture b = join_static(h, "ib", "", {{"range", "new"}});
  ASSERT_TRUE(b.done());
  EXPECT_EQ(b.error(), err::kNone);
  EXPECT_EQ(h.state("g"), "Stable");
  auto d = h.c->describe_groups({"g"})[0];
  for (const auto& m : d.members) {
    if (m.member_id == b.get().member_id) {
      EXPECT_EQ(m.metadata, "new");
    }
  }
}

TEST(Static, StaleMemberIdIsFenced) {
  Harness h;
  StaticPair s = stable_static_pair(h);
  EXPECT_EQ(join_static(h, "ib", s.a).error(), err::kFencedInstanceId);
  EXPECT_EQ(join_static(h, "nope", s.a).error(), err::kUnknownMemberId);
  SyncRequest r;
  r.group_id = "g";
  r.member_id = s.a;
  r.group_instance_id = "ib";
  r.generation_id = s.generation;
  SyncFuture f;
  h.c->sync_group(r, f.callback());
  EXPECT_EQ(f.error(), err::kFencedInstanceId);
}

TEST(Static, ReplacedMembersParkedRequestsAreFenced) {
  Harness h;
  StaticPair s = stable_static_pair(h);
  JoinFuture c = h.join_new("g");  // rebalance
  JoinFuture b_old = join_static(h, "ib", s.b);
  EXPECT_FALSE(b_old.done());
  JoinFuture b_new = join_static(h, "ib");  // the same instance restarted meanwhile
  ASSERT_TRUE(b_old.done());
  EXPECT_EQ(b_old.error(), err::kFencedInstanceId);
  EXPECT_FALSE(b_new.done());
  JoinFuture a = join_static(h, "ia", s.a);
  ASSERT_TRUE(b_new.done() && a.done() && c.done());
  EXPECT_EQ(a.get().members.size(), 3u);
}

TEST(Static, StaticMembersThatDoNotRejoinStayInTheGroup) {
  Harness h;
  StaticPair s = stable_static_pair(h);
  JoinFuture a = join_static(h, "ia", s.a, {{"range", "new"}});  // rebalance
  for (int i = 0; i < 3; ++i) {
    h.advance(9000);
    EXPECT_EQ(h.heartbeat("g", s.b, s.generation, "ib"), err::kRebalanceInProgress);
  }
  EXPECT_FALSE(a.done());
  h.advance(3000);  // rebalance timeout: b is static, it is kept
  ASSERT_TRUE(a.done());
  EXPECT_EQ(a.get().members.size(), 2u);
}

TEST(Static, StaticMemberWhoseSessionExpiresIsRemoved) {
  Harness h;
  StaticPair s = stable_static_pair(h);
  h.advance(9000);
  EXPECT_EQ(h.heartbeat("g", s.a, s.generation, "ia"), err::kNone);
  h.advance(1000);  // b's 10 s session ends: static members are not immune
  EXPECT_EQ(h.heartbeat("g", s.a, s.generation, "ia"), err::kRebalanceInProgress);
  EXPECT_EQ(h.heartbeat("g", s.b, s.generation, "ib"), err::kUnknownMemberId);
  JoinFuture a = join_static(h, "ia", s.a);
  ASSERT_TRUE(a.done());
  EXPECT_EQ(a.get().members.size(), 1u);
  // b comes back later as a new static member.
  JoinFuture b = join_static(h, "ib");
  EXPECT_FALSE(b.done());
  EXPECT_EQ(h.state("g"), "PreparingRebalance");
}

TEST(Static, AdminCanRemoveAStaticMemberByInstanceId) {
  Harness h;
  StaticPair s = stable_static_pair(h);
  auto r = h.c->leave_group(LeaveRequest{"g", {{"", "ib", "admin"}}});
  EXPECT_EQ(r.members[0].error_code, err::kNone);
  EXPECT_EQ(h.state("g"), "PreparingRebalance");
  EXPECT_EQ(h.heartbeat("g", s.b, s.generation, "ib"), err::kUnknownMemberId);
  // Leaving with a member id and a mismatching instance id is fenced.
  auto r2 = h.c->leave_group(LeaveRequest{"g", {{"wrong", "ia", {}}}});
  EXPECT_EQ(r2.members[0].error_code, err::kFencedInstanceId);
}

TEST(Static, ReplacementStoreFailureRevertsAndFails) {
  Harness h;
  StaticPair s = stable_static_pair(h);
  h.meta.fail_next_commits(1);
  JoinFuture b = join_static(h, "ib");
  ASSERT_TRUE(b.done());
  EXPECT_EQ(b.error(), err::kCoordinatorNotAvailable);
  EXPECT_EQ(h.heartbeat("g", s.b, s.generation, "ib"), err::kNone);  // old id still valid
  EXPECT_EQ(h.state("g"), "Stable");
}

}  // namespace
}  // namespace shale::group::testing
