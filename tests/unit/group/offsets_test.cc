// OffsetCommit / OffsetFetch / OffsetDelete and offset retention.
#include <gtest/gtest.h>

#include "harness.h"

namespace shale::group::testing {
namespace {

constexpr int64_t kDay = 24LL * 3600 * 1000;

// A Stable consumer group "g" whose members subscribe to `topics`.
TwoMembers consumer_group(Harness& h, const std::vector<std::string>& topics) {
  const std::vector<JoinProtocol> p{{"range", subscription(topics)}};
  TwoMembers t;
  JoinFuture a = h.join_new("g", p);
  t.a = a.get().member_id;
  JoinFuture b = h.join_new("g", p);
  JoinFuture a2 = h.rejoin("g", t.a, p);
  t.b = b.get().member_id;
  t.generation = a2.get().generation_id;
  SyncFuture sb = h.sync("g", t.b, t.generation);
  SyncFuture sa = h.sync("g", t.a, t.generation, {{t.a, "A"}, {t.b, "B"}});
  EXPECT_EQ(h.state("g"), "Stable");
  return t;
}

TEST(Offsets, MemberCommitsAndFetches) {
  Harness h;
  TwoMembers t = stable_pair(h);
  EXPECT_EQ(h.commit("g", t.a, t.generation, "t", 0, 42), err::kNone);
  EXPECT_EQ(h.commit("g", t.b, t.generation, "t", 1, 43), err::kNone);
  EXPECT_EQ(h.fetch("g", "t", 0), 42);
  EXPECT_EQ(h.fetch("g", "t", 1), 43);
  EXPECT_EQ(h.fetch("g", "t", 2), -1);
  EXPECT_EQ(h.fetch("g", "u", 0), -1);
  EXPECT_EQ(h.fetch("nogroup", "t", 0), -1);

  FetchRequest all;
  all.groups.push_back(FetchGroup{"g", std::nullopt});
  auto r = h.c->fetch_offsets(all);
  ASSERT_EQ(r.groups.at(0).topics.size(), 1u);
  const auto& parts = r.groups[0].topics[0].partitions;
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].offset, 42);
  EXPECT_EQ(parts[0].leader_epoch, 7);
  EXPECT_EQ(parts[0].metadata, "m");
}

TEST(Offsets, FetchOfUncommittedPartitionsSaysMinusOne) {
  Harness h;
  FetchRequest r;
  r.groups.push_back(FetchGroup{"g", std::vector<TopicPartitions>{{"t", {0, 1}}}});
  auto res = h.c->fetch_offsets(r);
  const auto& p = res.groups.at(0).topics.at(0).partitions;
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].offset, -1);
  EXPECT_EQ(p[0].leader_epoch, -1);
  EXPECT_EQ(p[0].metadata, "");
  EXPECT_EQ(p[0].error_code, err::kNone);
  FetchRequest all;
  all.groups.push_back(FetchGroup{"g", std::nullopt});
  EXPECT_TRUE(h.c->fetch_offsets(all).groups.at(0).topics.empty());
}

TEST(Offsets, MultiGroupFetch) {
  Harness h;
  EXPECT_EQ(h.commit("g1", "", -1, "t", 0, 1), err::kNone);
  EXPECT_EQ(h.commit("g2", "", -1, "t", 0, 2), err::kNone);
  FetchRequest r;
  r.groups.push_back(FetchGroup{"g1", std::nullopt});
  r.groups.push_back(FetchGroup{"g2", std::vector<TopicPartitions>{{"t", {0}}}});
  r.groups.push_back(FetchGroup{"g3", std::nullopt});
  auto res = h.c->fetch_offsets(r);
  ASSERT_EQ(res.groups.size(), 3u);
  EXPECT_EQ(res.groups[0].group_id, "g1");
  EXPECT_EQ(res.groups[0].topics.at(0).partitions.at(0).offset, 1);
  EXPECT_EQ(res.groups[1].topics.at(0).partitions.at(0).offset, 2);
  EXPECT_TRUE(res.groups[2].topics.empty());
}

TEST(Offsets, GenerationAndMemberChecks) {
  Harness h;
  TwoMembers t = stable_pair(h);
  EXPECT_EQ(h.commit("g", t.a, t.generation - 1, "t", 0, 1), err::kIllegalGeneration);
  EXPECT_EQ(h.commit("g", "nobody", t.generation, "t", 0, 1), err::kUnknownMemberId);
  // Without member and generation only an empty group takes commits.
  EXPECT_EQ(h.commit("g", "", -1, "t", 0, 1), err::kUnknownMemberId);
  EXPECT_EQ(h.fetch("g", "t", 0), -1);
  // During PreparingRebalance the current generation may still commit.
  JoinFuture c = h.join_new("g");
  EXPECT_EQ(h.commit("g", t.a, t.generation, "t", 0, 5), err::kNone);
  // During CompletingRebalance nobody may.
  JoinFuture a = h.rejoin("g", t.a);
  JoinFuture b = h.rejoin("g", t.b);
  ASSERT_TRUE(a.done());
  EXPECT_EQ(h.commit("g", t.a, t.generation + 1, "t", 0, 6), err::kRebalanceInProgress);
  EXPECT_EQ(h.fetch("g", "t", 0), 5);
}

TEST(Offsets, CommitsKeepTheSessionAlive) {
  Harness h;
  TwoMembers t = stable_pair(h);
  for (int i = 0; i < 5; ++i) {
    h.advance(9000);
    EXPECT_EQ(h.commit("g", t.a, t.generation, "t", 0, i), err::kNone);
    EXPECT_EQ(h.heartbeat("g", t.b, t.generation), err::kNone);
  }
  EXPECT_EQ(h.state("g"), "Stable");
}

TEST(Offsets, SimpleCommitsCreateAnEmptyGroup) {
  Harness h;
  EXPECT_EQ(h.commit("simple", "", -1, "t", 3, 99), err::kNone);
  EXPECT_EQ(h.fetch("simple", "t", 3), 99);
  auto groups = h.c->list_groups({}).groups;
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].group_id, "simple");
  EXPECT_EQ(groups[0].protocol_type, "");
  EXPECT_EQ(groups[0].group_state, "Empty");
}

TEST(Offsets, CommitWithGenerationToUnknownGroup) {
  Harness h;
  CommitRequest r;
  r.group_id = "g";
  r.member_id = "m";
  r.generation_id = 3;
  r.topics.push_back(CommitTopic{"t", {CommitPartition{0, 1, -1, -1, std::nullopt}}});
  EXPECT_EQ(h.c->commit_offsets(r).topics[0].partitions[0].error_code, err::kGroupIdNotFound);
  r.api_version = 8;
  EXPECT_EQ(h.c->commit_offsets(r).topics[0].partitions[0].error_code, err::kIllegalGeneration);
  EXPECT_TRUE(h.c->list_groups({}).groups.empty());
}

TEST(Offsets, OversizedMetadataIsRejectedPerPartition) {
  Harness h([](CoordinatorConfig& c) { c.offset_metadata_max_bytes = 10; });
  CommitRequest r;
  r.group_id = "g";
  r.topics.push_back(CommitTopic{"t",
                                 {CommitPartition{0, 1, -1, -1, std::string(11, 'x')},
                                  CommitPartition{1, 2, -1, -1, std::string(10, 'x')}}});
  auto res = h.c->commit_offsets(r);
  EXPECT_EQ(res.topics[0].partitions[0].error_code, err::kOffsetMetadataTooLarge);
  EXPECT_EQ(res.topics[0].partitions[1].error_code, err::kNone);
  EXPECT_EQ(h.fetch("g", "t", 0), -1);
  EXPECT_EQ(h.fetch("g", "t", 1), 2);
}

TEST(Offsets, NullMetadataIsStoredAsEmpty) {
  Harness h;
  EXPECT_EQ(h.commit("g", "", -1, "t", 0, 5, std::nullopt), err::kNone);
  FetchRequest all;
  all.groups.push_back(FetchGroup{"g", std::nullopt});
  EXPECT_EQ(h.c->fetch_offsets(all).groups[0].topics[0].partitions[0].metadata, "");
}

TEST(Offsets, CommitIsDurableBeforeItIsAcknowledged) {
  Harness h;
  EXPECT_EQ(h.commit("g", "", -1, "t", 0, 10), err::kNone);
  const int before = h.meta.commits();
  EXPECT_EQ(h.commit("g", "", -1, "t", 0, 11), err::kNone);
  EXPECT_EQ(h.meta.commits(), before + 1);  // one store transaction per commit request
  h.meta.fail_next_commits(1);
  EXPECT_EQ(h.commit("g", "", -1, "t", 0, 12), err::kCoordinatorNotAvailable);
  EXPECT_EQ(h.fetch("g", "t", 0), 11);
  h.restart();
  EXPECT_EQ(h.fetch("g", "t", 0), 11);
}

TEST(Offsets, FailedFirstCommitLeavesNoGroup) {
  Harness h;
  h.meta.fail_next_commits(1);
  EXPECT_EQ(h.commit("g", "", -1, "t", 0, 12), err::kCoordinatorNotAvailable);
  EXPECT_TRUE(h.c->list_groups({}).groups.empty());
}

TEST(Offsets, DeleteRules) {
  Harness h;
  OffsetDeleteRequest missing{"nogroup", {{"t", {0}}}};
  EXPECT_EQ(h.c->delete_offsets(missing).error_code, err::kGroupIdNotFound);
  EXPECT_EQ(h.c->delete_offsets(OffsetDeleteRequest{"", {}}).error_code, err::kInvalidGroupId);

  TwoMembers t = consumer_group(h, {"sub"});
  EXPECT_EQ(h.commit("g", t.a, t.generation, "sub", 0, 1), err::kNone);
  EXPECT_EQ(h.commit("g", t.a, t.generation, "old", 0, 2), err::kNone);
  auto r = h.c->delete_offsets(OffsetDeleteRequest{"g", {{"sub", {0}}, {"old", {0, 1}}}});
  EXPECT_EQ(r.error_code, err::kNone);
  ASSERT_EQ(r.topics.size(), 2u);
  EXPECT_EQ(r.topics[0].partitions[0].error_code, err::kGroupSubscribedToTopic);
  EXPECT_EQ(r.topics[1].partitions[0].error_code, err::kNone);
  EXPECT_EQ(r.topics[1].partitions[1].error_code, err::kNone);
  EXPECT_EQ(h.fetch("g", "sub", 0), 1);
  EXPECT_EQ(h.fetch("g", "old", 0), -1);
  h.restart();
  EXPECT_EQ(h.fetch("g", "old", 0), -1);
  EXPECT_EQ(h.fetch("g", "sub", 0), 1);
}

TEST(Offsets, DeleteFromActiveNonConsumerGroupIsRefused) {
  Harness h;
  JoinRequest r = Harness::join_req("c", "");
  r.protocol_type = "connect";
  JoinFuture f = h.join(r);
  r.member_id = f.get().member_id;
  ASSERT_EQ(h.join(r).error(), err::kNone);
  EXPECT_EQ(h.c->delete_offsets(OffsetDeleteRequest{"c", {{"t", {0}}}}).error_code,
            err::kNonEmptyGroup);
}

TEST(Offsets, DeleteFromEmptyGroup) {
  Harness h;
  EXPECT_EQ(h.commit("g", "", -1, "t", 0, 1), err::kNone);
  auto r = h.c->delete_offsets(OffsetDeleteRequest{"g", {{"t", {0}}}});
  EXPECT_EQ(r.error_code, err::kNone);
  EXPECT_EQ(h.fetch("g", "t", 0), -1);
}

TEST(Offsets, SubscriptionVersionsAreUnderstood) {
  for (int16_t v = 0; v <= 3; ++v) {
    Harness h;
    const std::vector<JoinProtocol> p{{"range", subscription({"sub"}, v)}};
    JoinFuture a = h.join_new("g", p);
    h.sync("g", a.get().member_id, a.get().generation_id, {});
    EXPECT_EQ(h.commit("g", "", -1, "x", 0, 0), err::kUnknownMemberId);
    auto r = h.c->delete_offsets(OffsetDeleteRequest{"g", {{"sub", {0}}}});
    EXPECT_EQ(r.topics[0].partitions[0].error_code, err::kGroupSubscribedToTopic) << v;
  }
}

TEST(Retention, OffsetsOfAnEmptyGroupExpireAfterRetentionThenTheGroupGoes) {
  Harness h;
  TwoMembers t = stable_pair(h);
  EXPECT_EQ(h.commit("g", t.a, t.generation, "t", 0, 5), err::kNone);
  h.c->leave_group(LeaveRequest{"g", {{t.a, std::nullopt, {}}, {t.b, std::nullopt, {}}}});
  ASSERT_EQ(h.state("g"), "Empty");
  h.advance(7 * kDay - 1);
  EXPECT_EQ(h.fetch("g", "t", 0), 5);
  h.advance(600000);  // the next retention check after 7 days
  EXPECT_EQ(h.fetch("g", "t", 0), -1);
  EXPECT_EQ(h.state("g"), "Dead");
  EXPECT_EQ(h.meta.size(), 0u);
}

TEST(Retention, ActiveConsumerGroupKeepsSubscribedTopics) {
  Harness h([](CoordinatorConfig& c) {
    c.offsets_retention_ms = 3600000;
    c.offsets_retention_check_interval_ms = 60000;
  });
  TwoMembers t = consumer_group(h, {"sub"});
  EXPECT_EQ(h.commit("g", t.a, t.generation, "sub", 0, 1), err::kNone);
  EXPECT_EQ(h.commit("g", t.a, t.generation, "old", 0, 2), err::kNone);
  for (int64_t elapsed = 0; elapsed <= 3600000 + 60000; elapsed += 5000) {
    h.advance(5000);
    EXPECT_EQ(h.heartbeat("g", t.a, t.generation), err::kNone);
    EXPECT_EQ(h.heartbeat("g", t.b, t.generation), err::kNone);
  }
  EXPECT_EQ(h.fetch("g", "sub", 0), 1);
  EXPECT_EQ(h.fetch("g", "old", 0), -1);
  EXPECT_EQ(h.state("g"), "Stable");
}

TEST(Retention, SimpleGroupOffsetsAgeFromTheirCommit) {
  Harness h;
  EXPECT_EQ(h.commit("s", "", -1, "t", 0, 1), err::kNone);
  h.advance(3 * kDay);
  EXPECT_EQ(h.commit("s", "", -1, "t", 1, 2), err::kNone);
  h.advance(4 * kDay + 600000);
  EXPECT_EQ(h.fetch("s", "t", 0), -1);
  EXPECT_EQ(h.fetch("s", "t", 1), 2);
  h.advance(3 * kDay);
  EXPECT_EQ(h.fetch("s", "t", 1), -1);
  EXPECT_TRUE(h.c->list_groups({}).groups.empty());
}

TEST(Retention, ExplicitRetentionTimeOfOldCommits) {
  Harness h;
  CommitRequest r;
  r.api_version = 2;
  r.group_id = "s";
  r.retention_time_ms = 1000;
  r.topics.push_back(CommitTopic{"t", {CommitPartition{0, 7, -1, -1, std::nullopt}}});
  EXPECT_EQ(h.c->commit_offsets(r).topics[0].partitions[0].error_code, err::kNone);
  h.advance(600000);
  EXPECT_EQ(h.fetch("s", "t", 0), -1);
}

}  // namespace
}  // namespace shale::group::testing
