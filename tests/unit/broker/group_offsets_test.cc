// OffsetCommit, OffsetFetch and OffsetDelete handlers over decoded requests, across versions.
#include <gtest/gtest.h>

#include "group_harness.h"

namespace shale::broker::testing {
namespace {

class OffsetsTest : public GroupApiTest {
 protected:
  protocol::OffsetFetchResponse fetch_one(const std::string& group, int16_t version,
                                          std::optional<std::vector<std::string>> topics) {
    protocol::OffsetFetchRequest r;
    r.group_id = group;
    if (topics) {
      r.topics.emplace();
      for (const auto& t : *topics) {
        auto& rt = r.topics->emplace_back();  // named: 4.1.2 put topic_id between the fields
        rt.name = t;
        rt.partition_indexes = {0, 1};
      }
    } else {
      r.topics.reset();
    }
    auto resp = await(h().offset_fetch(info(version), r));
    expect_encodes(resp, version);
    return resp;
  }
};

TEST_F(OffsetsTest, SimpleCommitAndFetchAcrossVersions) {
  start();
  // Kafka 4 removed OffsetCommit v0-1 and OffsetFetch v0 (KIP-896).
  for (int16_t v = 2; v <= 9; ++v) {
    const std::string g = "simple" + std::to_string(v);
    auto c = commit(g, v, {{"t1", 0, 100 + v}, {"t1", 1, 200 + v}});
    ASSERT_EQ(c.topics.size(), 1u);
    EXPECT_EQ(c.topics[0].partitions[0].error_code, 0) << v;
    EXPECT_EQ(c.topics[0].partitions[1].error_code, 0) << v;
  }
  for (int16_t v = 2; v <= 7; ++v) {
    auto f = fetch_one("simple" + std::to_string(v), v, std::vector<std::string>{"t1"});
    EXPECT_EQ(f.error_code, 0);
    ASSERT_EQ(f.topics.size(), 1u) << v;
    ASSERT_EQ(f.topics[0].partitions.size(), 2u);
    EXPECT_EQ(f.topics[0].partitions[0].committed_offset, 100 + v);
    EXPECT_EQ(f.topics[0].partitions[1].committed_offset, 200 + v);
    EXPECT_EQ(f.topics[0].partitions[0].metadata, "m");
    // Leader epochs are committed from v6 and fetched from v5.
    if (v >= 6) {
      EXPECT_EQ(f.topics[0].partitions[0].committed_leader_epoch, 3);
    }
  }
}

TEST_F(OffsetsTest, UnknownTopicsAreAnsweredWithoutTheCoordinator) {
  start();
  auto c = commit("g", 8, {{"t1", 0, 1}, {"t1", 7, 1}, {"nope", 0, 1}, {"t2", 0, 9}});
  ASSERT_EQ(c.topics.size(), 3u);
  EXPECT_EQ(c.topics[0].name, "t1");
  EXPECT_EQ(c.topics[0].partitions[0].error_code, 0);
  EXPECT_EQ(c.topics[0].partitions[1].partition_index, 7);
  EXPECT_EQ(c.topics[0].partitions[1].error_code, 3);  // UNKNOWN_TOPIC_OR_PARTITION
  EXPECT_EQ(c.topics[1].partitions[0].error_code, 3);
  EXPECT_EQ(c.topics[2].partitions[0].error_code, 0);
  // Nothing valid: no coordinator call, no group created.
  auto only_bad = commit("ghost", 8, {{"nope", 0, 1}});
  EXPECT_EQ(only_bad.topics.at(0).partitions.at(0).error_code, 3);
  EXPECT_EQ(await(h().list_groups(info(0), {})).groups.size(), 1u);
}

TEST_F(OffsetsTest, GenerationChecks) {
  start();
  auto [m, gen] = stable_group("g");
  EXPECT_EQ(commit("g", 2, {{"t1", 0, 5}}, gen, m).topics[0].partitions[0].error_code, 0);
  EXPECT_EQ(commit("g", 2, {{"t1", 0, 5}}, gen + 1, m).topics[0].partitions[0].error_code, 22);
  EXPECT_EQ(commit("g", 2, {{"t1", 0, 5}}, gen, "ghost").topics[0].partitions[0].error_code, 25);
  // A generation for a group that does not exist: ILLEGAL_GENERATION, GROUP_ID_NOT_FOUND at v9.
  EXPECT_EQ(commit("none", 8, {{"t1", 0, 5}}, 3, "x").topics[0].partitions[0].error_code, 22);
  EXPECT_EQ(commit("none", 9, {{"t1", 0, 5}}, 3, "x").topics[0].partitions[0].error_code, 69);
  // Without a generation (-1, no member: a simple or admin commit), as in Kafka, commits are
  // only accepted into an Empty group.
  EXPECT_EQ(commit("g", 2, {{"t1", 1, 8}}).topics[0].partitions[0].error_code, 25);
  EXPECT_EQ(commit("other", 2, {{"t1", 1, 8}}).topics[0].partitions[0].error_code, 0);
  EXPECT_EQ(commit("", 3, {{"t1", 0, 5}}).topics[0].partitions[0].error_code, 24);
}

TEST_F(OffsetsTest, RebalanceInProgressRejectsCommits) {
  start();
  auto [m1, gen1] = stable_group("g");
  auto r2 = join_req("g", "");
  auto first = await(h().join_group(info(5), r2));
  r2.member_id = first.member_id;
  auto pending = spawn(h().join_group(info(5), r2));
  drive([&] { return heartbeat("g", m1, gen1) == 27; });
  // PreparingRebalance: commits of the current generation are still accepted (consumers
  // commit while revoking partitions).
  EXPECT_EQ(commit("g", 7, {{"t1", 0, 5}}, gen1, m1).topics[0].partitions[0].error_code, 0);
  auto p1 = spawn(h().join_group(info(5), join_req("g", m1)));
  drive([&] { return p1->has_value() && pending->has_value(); });
  ASSERT_TRUE(p1->has_value());
  // CompletingRebalance (joined, not yet synced): REBALANCE_IN_PROGRESS.
  const int32_t gen2 = (*p1)->generation_id;
  EXPECT_EQ(commit("g", 7, {{"t1", 0, 5}}, gen2, m1).topics[0].partitions[0].error_code, 27);
  EXPECT_EQ(commit("g", 7, {{"t1", 0, 5}}, gen1, m1).topics[0].partitions[0].error_code, 22);
}

TEST_F(OffsetsTest, FetchAllTopicsAndMissingOffsets) {
  start();
  commit("g", 7, {{"t1", 0, 10}, {"t2", 0, 20}});
  auto all = fetch_one("g", 2, std::nullopt);
  size_t partitions = 0;
  for (const auto& t : all.topics) partitions += t.partitions.size();
  EXPECT_EQ(partitions, 2u);
  auto some = fetch_one("g", 3, std::vector<std::string>{"t2"});
  ASSERT_EQ(some.topics.at(0).partitions.size(), 2u);
  EXPECT_EQ(some.topics[0].partitions[0].committed_offset, 20);
  EXPECT_EQ(some.topics[0].partitions[1].committed_offset, -1);  // nothing committed
  EXPECT_EQ(some.topics[0].partitions[1].metadata, "");
}

TEST_F(OffsetsTest, SingleGroupErrorsByVersion) {
  start();
  // v2+: the group error is top level; v0-1 carry it on each requested partition.
  auto v3 = fetch_one("", 3, std::vector<std::string>{"t1"});
  EXPECT_EQ(v3.error_code, 24);  // INVALID_GROUP_ID
  auto v1 = fetch_one("", 1, std::vector<std::string>{"t1"});
  ASSERT_EQ(v1.topics.size(), 1u);
  ASSERT_EQ(v1.topics[0].partitions.size(), 2u);
  EXPECT_EQ(v1.topics[0].partitions[0].error_code, 24);
  EXPECT_EQ(v1.topics[0].partitions[1].error_code, 24);
}

TEST_F(OffsetsTest, MultiGroupFetch) {
  start();
  commit("a", 8, {{"t1", 0, 1}});
  commit("b", 8, {{"t1", 2, 2}});
  for (int16_t v = 8; v <= 9; ++v) {
    protocol::OffsetFetchRequest r;
    protocol::OffsetFetchRequest::OffsetFetchRequestGroup ga;
    ga.group_id = "a";
    ga.topics.emplace();
    auto& gat = ga.topics->emplace_back();
    gat.name = "t1";
    gat.partition_indexes = {0};
    protocol::OffsetFetchRequest::OffsetFetchRequestGroup gb;
    gb.group_id = "b";
    gb.topics.reset();  // all
    protocol::OffsetFetchRequest::OffsetFetchRequestGroup gbad;
    gbad.group_id = "";
    gbad.topics.reset();
    r.groups = {ga, gb, gbad};
    r.require_stable = true;
    auto resp = await(h().offset_fetch(info(v), r));
    expect_encodes(resp, v);
    ASSERT_EQ(resp.groups.size(), 3u);
    EXPECT_EQ(resp.groups[0].group_id, "a");
    EXPECT_EQ(resp.groups[0].topics.at(0).partitions.at(0).committed_offset, 1);
    EXPECT_EQ(resp.groups[1].group_id, "b");
    EXPECT_EQ(resp.groups[1].topics.at(0).partitions.at(0).partition_index, 2);
    EXPECT_EQ(resp.groups[1].topics.at(0).partitions.at(0).committed_offset, 2);
    EXPECT_EQ(resp.groups[2].error_code, 24);
    EXPECT_TRUE(resp.topics.empty());
  }
}

// KIP-447: a partition with pending transactional offsets is unstable for require_stable.
TEST_F(OffsetsTest, RequireStableAnswersUnstableForPendingTransactionalOffsets) {
  start();
  commit("g", 8, {{"t1", 0, 1}, {"t1", 1, 2}});
  h().set_pending_txn_offsets([](const std::string& g, const std::string& t, int32_t p) {
    return g == "g" && t == "t1" && p == 1;
  });
  for (bool stable : {false, true}) {
    protocol::OffsetFetchRequest r;
    r.group_id = "g";
    r.topics.emplace();
    auto& rt = r.topics->emplace_back();
    rt.name = "t1";
    rt.partition_indexes = {0, 1};
    r.require_stable = stable;
    auto resp = await(h().offset_fetch(info(7), r));
    ASSERT_EQ(resp.topics.at(0).partitions.size(), 2u);
    EXPECT_EQ(resp.topics[0].partitions[0].committed_offset, 1);
    EXPECT_EQ(resp.topics[0].partitions[0].error_code, 0);
    EXPECT_EQ(resp.topics[0].partitions[1].committed_offset, stable ? -1 : 2);
    EXPECT_EQ(resp.topics[0].partitions[1].error_code, stable ? 88 : 0);
  }
}

TEST_F(OffsetsTest, OffsetDelete) {
  start();
  commit("g", 8, {{"t1", 0, 1}, {"t1", 1, 2}});
  protocol::OffsetDeleteRequest r;
  r.group_id = "g";
  r.topics.push_back({"t1", {{0}, {9}}});
  r.topics.push_back({"nope", {{0}}});
  auto resp = await(h().offset_delete(info(0), r));
  expect_encodes(resp, 0);
  EXPECT_EQ(resp.error_code, 0);
  ASSERT_EQ(resp.topics.size(), 2u);
  EXPECT_EQ(resp.topics[0].partitions[0].error_code, 0);
  EXPECT_EQ(resp.topics[0].partitions[1].error_code, 3);
  EXPECT_EQ(resp.topics[1].partitions[0].error_code, 3);
  auto f = fetch_one("g", 5, std::vector<std::string>{"t1"});
  EXPECT_EQ(f.topics.at(0).partitions.at(0).committed_offset, -1);
  EXPECT_EQ(f.topics.at(0).partitions.at(1).committed_offset, 2);

  r.group_id = "missing";
  auto missing = await(h().offset_delete(info(0), r));
  EXPECT_EQ(missing.error_code, 69);  // GROUP_ID_NOT_FOUND
  EXPECT_TRUE(missing.topics.empty());
}

TEST_F(OffsetsTest, OffsetDeleteOfASubscribedTopicInAnActiveGroup) {
  start();
  auto [m, gen] = stable_group("g");  // subscribed to t1
  commit("g", 8, {{"t1", 0, 1}, {"t2", 0, 1}}, gen, m);
  protocol::OffsetDeleteRequest r;
  r.group_id = "g";
  r.topics.push_back({"t1", {{0}}});
  r.topics.push_back({"t2", {{0}}});
  auto resp = await(h().offset_delete(info(0), r));
  EXPECT_EQ(resp.error_code, 0);
  EXPECT_EQ(resp.topics.at(0).partitions.at(0).error_code, 86);  // GROUP_SUBSCRIBED_TO_TOPIC
  EXPECT_EQ(resp.topics.at(1).partitions.at(0).error_code, 0);
}

}  // namespace
}  // namespace shale::broker::testing
