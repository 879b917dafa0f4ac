// Sharded coordination (cluster mode): a group belongs to shard abs(hashCode) % shards, as
// Kafka maps it to a __consumer_offsets partition; a coordinator serves only the shards it
// loaded, answers NOT_COORDINATOR for the others, and a shard moves between coordinators over
// one store with its groups and offsets.
#include <gtest/gtest.h>

#include "harness.h"

namespace shale::group::testing {
namespace {

TEST(GroupShard, KafkasPartitionForGroupIds) {
  // Java's String.hashCode, then Utils.abs (MIN_VALUE -> 0), modulo 50.
  EXPECT_EQ(Coordinator::shard_of("my-group", 50), 12);               // hash -1906497762
  EXPECT_EQ(Coordinator::shard_of("console-consumer-12345", 50), 6);  // 158455506
  EXPECT_EQ(Coordinator::shard_of("verify-moves", 50), 36);           // -1704272786
  EXPECT_EQ(Coordinator::shard_of("gr\xC3\xBCppe", 50), 12);          // "grüppe": -1233264812
  EXPECT_EQ(Coordinator::shard_of("g\xF0\x9F\x98\x80", 50), 32);      // "g😀" (a surrogate pair)
  EXPECT_EQ(Coordinator::shard_of("polygenelubricants", 50), 0);      // hashCode == MIN_VALUE
  EXPECT_EQ(Coordinator::shard_of("", 50), 0);
  EXPECT_EQ(Coordinator::shard_of("anything", 1), 0);
  // Malformed UTF-8 is hashed a byte at a time, never read past its end.
  const int32_t s = Coordinator::shard_of(std::string_view("\xE2\x82", 2), 50);
  EXPECT_GE(s, 0);
  EXPECT_LT(s, 50);
}

struct Sharded {
  int64_t now = 1'700'000'000'000;
  FakeMetaStore meta;
  MetaGroupStore store{&meta};
  std::unique_ptr<Coordinator> make() {
    CoordinatorConfig cfg;
    cfg.initial_rebalance_delay_ms = 0;
    cfg.shards = 50;
    return std::make_unique<Coordinator>(cfg, &store, [this] { return now; });
  }
};

int16_t commit(Coordinator& c, const std::string& group, int64_t offset) {
  CommitRequest r;
  r.group_id = group;
  r.generation_id = -1;  // a simple (admin-style) commit
  r.topics.push_back(CommitTopic{"t", {CommitPartition{0, offset, -1, -1, "m"}}});
  return c.commit_offsets(r).topics.at(0).partitions.at(0).error_code;
}

FetchGroupResult fetch(Coordinator& c, const std::string& group) {
  FetchRequest r;
  r.groups.push_back(FetchGroup{group, std::vector<TopicPartitions>{{"t", {0}}}});
  return c.fetch_offsets(r).groups.at(0);
}

TEST(GroupShard, OnlyLoadedShardsAreServedAndAShardMovesWithItsOffsets) {
  Sharded s;
  auto a = s.make();
  auto b = s.make();
  const int32_t mine = Coordinator::shard_of("my-group", 50);       // 12
  const int32_t other = Coordinator::shard_of("verify-moves", 50);  // 36
  ASSERT_NE(mine, other);
  // Nothing loaded: every group is someone else's.
  EXPECT_EQ(commit(*a, "my-group", 5), err::kNotCoordinator);
  EXPECT_EQ(a->list_groups({}).error_code, err::kNone);
  EXPECT_TRUE(a->list_groups({}).groups.empty());

  ASSERT_TRUE(a->load_shard(mine).ok());
  ASSERT_TRUE(b->load_shard(other).ok());
  EXPECT_TRUE(a->shard_loaded(mine));
  EXPECT_FALSE(a->shard_loaded(other));
  EXPECT_EQ(commit(*a, "my-group", 5), err::kNone);
  EXPECT_EQ(commit(*a, "verify-moves", 5), err::kNotCoordinator);
  EXPECT_EQ(commit(*b, "verify-moves", 9), err::kNone);
  EXPECT_EQ(fetch(*b, "my-group").error_code, err::kNotCoordinator);
  EXPECT_EQ(a->describe_groups({"verify-moves"}).at(0).error_code, err::kNotCoordinator);
  EXPECT_EQ(a->delete_groups({"verify-moves"}).at(0).error_code, err::kNotCoordinator);
  EXPECT_EQ(a->heartbeat(HeartbeatRequest{"verify-moves", 1, "m", std::nullopt}),
            err::kNotCoordinator);
  // ListGroups lists the groups of the loaded shards only.
  auto la = a->list_groups({});
  ASSERT_EQ(la.groups.size(), 1u);
  EXPECT_EQ(la.groups[0].group_id, "my-group");

  // One member, synced (its generation is stored).
  JoinRequest jr = Harness::join_req("my-group", "");
  JoinFuture first;
  a->join_group(jr, first.callback());
  ASSERT_TRUE(first.done());
  ASSERT_EQ(first.error(), err::kMemberIdRequired);
  jr.member_id = first.get().member_id;
  JoinFuture joined;
  a->join_group(jr, joined.callback());
  ASSERT_TRUE(joined.done());  // no initial delay: the only member completes the join
  EXPECT_EQ(joined.error(), err::kNone);
  SyncRequest sr;
  sr.group_id = "my-group";
  sr.member_id = jr.member_id;
  sr.generation_id = joined.get().generation_id;
  sr.assignments = {{jr.member_id, "assign"}};
  SyncFuture synced;
  a->sync_group(sr, synced.callback());  // stores the generation (Kafka writes it at sync)
  ASSERT_TRUE(synced.done());
  EXPECT_EQ(synced.error(), err::kNone);

  // A second member's join parks (the group rebalances) ...
  JoinRequest jr2 = Harness::join_req("my-group", "");
  JoinFuture second;
  a->join_group(jr2, second.callback());
  ASSERT_TRUE(second.done());
  jr2.member_id = second.get().member_id;
  JoinFuture parked;
  a->join_group(jr2, parked.callback());
  EXPECT_FALSE(parked.done());

  // ... and is told NOT_COORDINATOR when shard `mine` moves from a to b: a unloads, b loads it
  // with its offsets.
  a->unload_shard(mine);
  ASSERT_TRUE(parked.done());
  EXPECT_EQ(parked.error(), err::kNotCoordinator);
  EXPECT_FALSE(a->shard_loaded(mine));
  EXPECT_EQ(commit(*a, "my-group", 6), err::kNotCoordinator);
  EXPECT_EQ(a->heartbeat(HeartbeatRequest{"my-group", 1, jr.member_id, std::nullopt}),
            err::kNotCoordinator);
  ASSERT_TRUE(b->load_shard(mine).ok());
  auto f = fetch(*b, "my-group");
  ASSERT_EQ(f.error_code, err::kNone);
  EXPECT_EQ(f.topics.at(0).partitions.at(0).offset, 5);
  EXPECT_EQ(fetch(*b, "verify-moves").topics.at(0).partitions.at(0).offset, 9);
  // The group came along with its member (who keeps its session on the new coordinator).
  EXPECT_EQ(b->heartbeat(HeartbeatRequest{"my-group", joined.get().generation_id, jr.member_id,
                                          std::nullopt}),
            err::kNone);
  // Loading a loaded shard is a no-op; an out-of-range shard is refused.
  EXPECT_TRUE(b->load_shard(mine).ok());
  EXPECT_FALSE(b->load_shard(50).ok());
  EXPECT_FALSE(b->load_shard(-1).ok());
}

}  // namespace
}  // namespace shale::group::testing
