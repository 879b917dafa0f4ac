// Test harness for the coordinator: a fake clock the test moves by hand, an in-memory
// MetaStore behind MetaGroupStore, and helpers that capture parked JoinGroup/SyncGroup answers.
#pragma once

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fake_meta_store.h"
#include "group/coordinator.h"
#include "group/errors.h"
#include "group/meta_group_store.h"

namespace shale::group::testing {

// The coordinator logs every rebalance at info; keep test output to warnings.
inline const bool kQuietLogs = (spdlog::set_level(spdlog::level::warn), true);

// A ConsumerProtocolSubscription v0: int16 version, topics, null user data.
inline std::string subscription(const std::vector<std::string>& topics, int16_t version = 0) {
  std::string out;
  auto i16 = [&](int v) {
    out.push_back(static_cast<char>((v >> 8) & 0xff));
    out.push_back(static_cast<char>(v & 0xff));
  };
  auto i32 = [&](int32_t v) {
    for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<char>((v >> s) & 0xff));
  };
  i16(version);
  i32(static_cast<int32_t>(topics.size()));
  for (const auto& t : topics) {
    i16(static_cast<int>(t.size()));
    out += t;
  }
  i32(-1);                    // user data: null
  if (version >= 1) i32(0);   // owned partitions: none
  if (version >= 2) i32(-1);  // generation id
  if (version >= 3) i16(-1);  // rack id: null
  return out;
}

template <typename T>
struct Future {
  std::shared_ptr<std::optional<T>> slot = std::make_shared<std::optional<T>>();
  std::shared_ptr<int> calls = std::make_shared<int>(0);
  std::function<void(T)> callback() {
    return [slot = slot, calls = calls](T r) {
      ++*calls;
      *slot = std::move(r);
    };
  }
  bool done() const { return slot->has_value(); }
  const T& get() const {
    EXPECT_TRUE(done());
    return **slot;
  }
  int16_t error() const { return get().error_code; }
};
using JoinFuture = Future<JoinResult>;
using SyncFuture = Future<SyncResult>;

struct Harness {
  int64_t now = 1'700'000'000'000;
  FakeMetaStore meta;
  MetaGroupStore store{&meta};
  CoordinatorConfig cfg;
  std::unique_ptr<Coordinator> c;

  explicit Harness(std::function<void(CoordinatorConfig&)> tune = nullptr) {
    cfg.initial_rebalance_delay_ms = 0;
    if (tune) tune(cfg);
    restart();
  }
  // A new coordinator over the same store, as after a broker restart.
  void restart() {
    c = std::make_unique<Coordinator>(cfg, &store, [this] { return now; });
    Status s = c->load();
    EXPECT_TRUE(s.ok());
  }
  void advance(int64_t ms) {
    now += ms;
    c->tick();
  }

  static JoinRequest join_req(const std::string& group, const std::string& member_id,
                              std::vector<JoinProtocol> protocols = {{"range", "md"}}) {
    JoinRequest r;
    r.group_id = group;
    r.member_id = member_id;
    r.session_timeout_ms = 10000;
    r.rebalance_timeout_ms = 30000;
    r.protocol_type = "consumer";
    r.protocols = std::move(protocols);
    r.client_id = "client";
    r.client_host = "/127.0.0.1";
    return r;
  }
  JoinFuture join(JoinRequest r) {
    JoinFuture f;
    c->join_group(std::move(r), f.callback());
    return f;
  }
  // The KIP-394 dance: join without id, get MEMBER_ID_REQUIRED, join again with the id.
  JoinFuture join_new(const std::string& group,
                      std::vector<JoinProtocol> protocols = {{"range", "md"}},
                      std::function<void(JoinRequest&)> tune = nullptr) {
    JoinRequest r = join_req(group, "", protocols);
    if (tune) tune(r);
    JoinFuture first = join(r);
    EXPECT_TRUE(first.done());
    EXPECT_EQ(first.error(), err::kMemberIdRequired);
    r.member_id = first.get().member_id;
    return join(r);
  }
  JoinFuture rejoin(const std::string& group, const std::string& member_id,
                    std::vector<JoinProtocol> protocols = {{"range", "md"}}) {
    return join(join_req(group, member_id, std::move(protocols)));
  }
  SyncFuture sync(const std::string& group, const std::string& member_id, int32_t generation,
                  std::vector<SyncAssignment> assignments = {}) {
    SyncRequest r;
    r.group_id = group;
    r.member_id = member_id;
    r.generation_id = generation;
    r.assignments = std::move(assignments);
    SyncFuture f;
    c->sync_group(std::move(r), f.callback());
    return f;
  }
  int16_t heartbeat(const std::string& group, const std::string& member_id, int32_t generation,
                    std::optional<std::string> instance = std::nullopt) {
    return c->heartbeat(HeartbeatRequest{group, generation, member_id, std::move(instance)});
  }
  std::string state(const std::string& group) {
    return c->describe_groups({group}).at(0).group_state;
  }
  // Commits one offset; returns its error code.
  int16_t commit(const std::string& group, const std::string& member_id, int32_t generation,
                 const std::string& topic, int32_t partition, int64_t offset,
                 std::optional<std::string> metadata = "m") {
    CommitRequest r;
    r.group_id = group;
    r.member_id = member_id;
    r.generation_id = generation;
    r.topics.push_back(CommitTopic{topic, {CommitPartition{partition, offset, 7, -1, metadata}}});
    return c->commit_offsets(r).topics.at(0).partitions.at(0).error_code;
  }
  int64_t fetch(const std::string& group, const std::string& topic, int32_t partition) {
    FetchRequest r;
    r.groups.push_back(FetchGroup{group, std::vector<TopicPartitions>{{topic, {partition}}}});
    auto res = c->fetch_offsets(r);
    EXPECT_EQ(res.groups.at(0).error_code, err::kNone);
    return res.groups.at(0).topics.at(0).partitions.at(0).offset;
  }
};

// Two dynamic members in a Stable group "g" at generation `generation`: a is the leader.
struct TwoMembers {
  std::string a, b;
  int32_t generation = 0;
};
inline TwoMembers stable_pair(Harness& h, const std::string& group = "g") {
  TwoMembers t;
  JoinFuture fa = h.join_new(group);
  EXPECT_TRUE(fa.done());
  t.a = fa.get().member_id;
  JoinFuture fb = h.join_new(group);  // rebalance: b waits for a to re-join
  EXPECT_FALSE(fb.done());
  JoinFuture fa2 = h.rejoin(group, t.a);
  EXPECT_TRUE(fa2.done());
  EXPECT_TRUE(fb.done());
  t.b = fb.get().member_id;
  t.generation = fa2.get().generation_id;
  EXPECT_EQ(fa2.get().leader, t.a);
  SyncFuture sb = h.sync(group, t.b, t.generation);
  SyncFuture sa = h.sync(group, t.a, t.generation, {{t.a, "assign-a"}, {t.b, "assign-b"}});
  EXPECT_EQ(sa.error(), err::kNone);
  EXPECT_EQ(sb.error(), err::kNone);
  return t;
}

}  // namespace shale::group::testing
