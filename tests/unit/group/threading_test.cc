// The coordinator is called from many threads and its callbacks may call back into it.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "harness.h"

namespace shale::group::testing {
namespace {

TEST(Threading, CallbacksMayCallBackIntoTheCoordinator) {
  Harness h;
  // A consumer written in callback style: on the JoinGroup answer it sends SyncGroup at once.
  std::optional<SyncResult> synced;
  std::function<void(JoinResult)> on_join = [&](JoinResult r) {
    if (r.error_code == err::kMemberIdRequired) {
      JoinRequest again = Harness::join_req("g", r.member_id);
      h.c->join_group(again, on_join);
      return;
    }
    ASSERT_EQ(r.error_code, err::kNone);
    SyncRequest s;
    s.group_id = "g";
    s.member_id = r.member_id;
    s.generation_id = r.generation_id;
    s.assignments.push_back(SyncAssignment{r.member_id, "mine"});
    h.c->sync_group(s, [&](SyncResult sr) { synced = sr; });
  };
  h.c->join_group(Harness::join_req("g", ""), on_join);
  ASSERT_TRUE(synced.has_value());
  EXPECT_EQ(synced->error_code, err::kNone);
  EXPECT_EQ(synced->assignment, "mine");
  EXPECT_EQ(h.state("g"), "Stable");
}

TEST(Threading, ConcurrentCallersSeeConsistentOffsets) {
  Harness h;
  constexpr int kThreads = 4;
  constexpr int kCommits = 200;
  std::atomic<bool> stop{false};
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([&, t] {
      for (int i = 1; i <= kCommits; ++i) {
        CommitRequest r;
        r.group_id = "g";
        r.topics.push_back(CommitTopic{"t", {CommitPartition{t, i, -1, -1, std::nullopt}}});
        ASSERT_EQ(h.c->commit_offsets(r).topics[0].partitions[0].error_code, err::kNone);
      }
    });
  }
  std::thread reader([&] {
    while (!stop.load()) {
      FetchRequest f;
      f.groups.push_back(FetchGroup{"g", std::nullopt});
      auto res = h.c->fetch_offsets(f);
      for (const auto& topic : res.groups[0].topics) {
        for (const auto& p : topic.partitions) {
          ASSERT_GE(p.offset, 1);
          ASSERT_LE(p.offset, kCommits);
        }
      }
      h.c->list_groups({});
      h.c->describe_groups({"g"});
      h.c->tick();
    }
  });
  for (auto& w : writers) w.join();
  stop = true;
  reader.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(h.fetch("g", "t", t), kCommits);
  h.restart();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(h.fetch("g", "t", t), kCommits);
}

}  // namespace
}  // namespace shale::group::testing
