// Test harness for the group API handlers: a GroupService over a SQLite MetaStore in a temp
// directory (so a "restart" is a new service over the same file), a worker pool, and an
// io_context on the test thread that runs the handler coroutines to completion.
#pragma once

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/thread_pool.hpp>

#include "broker/group_service.h"
#include "meta/sqlite_meta_store.h"
#include "protocol/wire.h"

namespace shale::broker::testing {

inline const bool kQuietLogs = (spdlog::set_level(spdlog::level::warn), true);

// A pending handler result, filled on the io_context thread.
template <typename T>
using Pending = std::shared_ptr<std::optional<T>>;

// A ConsumerProtocolSubscription v0 (int16 version, topics, null user data).
inline std::string subscription(const std::vector<std::string>& topics) {
  std::string out;
  auto i16 = [&](int v) {
    out.push_back(static_cast<char>((v >> 8) & 0xff));
    out.push_back(static_cast<char>(v & 0xff));
  };
  i16(0);
  const auto n = static_cast<int32_t>(topics.size());
  for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<char>((n >> s) & 0xff));
  for (const auto& t : topics) {
    i16(static_cast<int>(t.size()));
    out += t;
  }
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(0xff));  // user data: null
  return out;
}

// Encodes a response at `version`: a handler's answer must be encodable at the version asked.
template <typename Resp>
void expect_encodes(const Resp& resp, int16_t version) {
  BufferBuilder out;
  protocol::Writer w(out);
  Status st = resp.encode(w, version);
  EXPECT_TRUE(st.ok()) << "version " << version << ": " << (st.ok() ? "" : st.error().message);
}

class GroupApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("shale_groupapi_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    cfg_.coordinator.initial_rebalance_delay_ms = 0;
    cfg_.coordinator.min_session_timeout_ms = 10;
    cfg_.coordinator.node_id = 7;
    cfg_.coordinator.host = "broker7.local";
    cfg_.coordinator.port = 19092;
    cfg_.tick_interval_ms = 10;
  }
  void TearDown() override {
    guard_.reset();
    service_.reset();
    meta_.reset();
    std::filesystem::remove_all(dir_);
  }

  // Opens the MetaStore and starts a service (again, for a restart).
  void start(bool load = true) {
    service_.reset();
    meta_.reset();
    meta::SqliteOptions o;
    o.path = (dir_ / "meta.db").string();
    auto m = meta::SqliteMetaStore::open(o);
    ASSERT_TRUE(m.ok());
    meta_ = std::move(m).value();
    service_ = std::make_unique<GroupService>(cfg_, meta_.get(), workers_,
                                              [](std::string_view topic, int32_t partition) {
                                                if (topic == "t1")
                                                  return partition >= 0 && partition < 3;
                                                if (topic == "t2") return partition == 0;
                                                return false;
                                              });
    if (load) {
      ASSERT_TRUE(service_->start().ok());
    }
  }

  GroupHandlers& h() { return service_->handlers(); }

  template <typename T>
  Pending<T> spawn(asio::awaitable<T> a) {
    auto out = std::make_shared<std::optional<T>>();
    asio::co_spawn(
        io_,
        [out, a = std::move(a)]() mutable -> asio::awaitable<void> {
          *out = co_await std::move(a);
        },
        asio::detached);
    return out;
  }
  // Runs the io_context until `done` (bounded so that a broken test fails instead of hanging).
  void drive(const std::function<bool()>& done) {
    // The io_context stops whenever it runs out of work; the member work guard prevents that,
    // and restart() undoes a stop anyway.
    io_.restart();
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!done() && std::chrono::steady_clock::now() < give_up) {
      io_.run_one_for(std::chrono::milliseconds(20));
    }
    ASSERT_TRUE(done()) << "handler did not complete";
  }
  template <typename T>
  T await(asio::awaitable<T> a) {
    auto p = spawn(std::move(a));
    drive([&] { return p->has_value(); });
    return p->has_value() ? std::move(**p) : T{};
  }

  GroupRequestInfo info(int16_t version) {
    return GroupRequestInfo{version, "client-a", "/127.0.0.1"};
  }

  // ---- request builders ----
  static protocol::JoinGroupRequest join_req(const std::string& group, const std::string& member,
                                             const std::vector<std::string>& topics = {"t1"}) {
    protocol::JoinGroupRequest r;
    r.group_id = group;
    r.member_id = member;
    r.session_timeout_ms = 30000;
    r.rebalance_timeout_ms = 30000;
    r.protocol_type = "consumer";
    r.protocols.push_back({"range", Buffer::copy(subscription(topics))});
    return r;
  }
  // JoinGroup at `version`, doing the MEMBER_ID_REQUIRED round trip at v4+.
  protocol::JoinGroupResponse join_new(const std::string& group, int16_t version = 5) {
    auto r = join_req(group, "");
    auto first = await(h().join_group(info(version), r));
    if (version < 4) return first;
    EXPECT_EQ(first.error_code, 79);  // MEMBER_ID_REQUIRED
    r.member_id = first.member_id;
    return await(h().join_group(info(version), r));
  }
  protocol::SyncGroupResponse sync(const std::string& group, const std::string& member,
                                   int32_t generation, const std::string& assignment = {},
                                   int16_t version = 3) {
    protocol::SyncGroupRequest r;
    r.group_id = group;
    r.member_id = member;
    r.generation_id = generation;
    if (!assignment.empty()) r.assignments.push_back({member, Buffer::copy(assignment)});
    return await(h().sync_group(info(version), r));
  }
  int16_t heartbeat(const std::string& group, const std::string& member, int32_t generation,
                    std::optional<std::string> instance = std::nullopt, int16_t version = 3) {
    protocol::HeartbeatRequest r;
    r.group_id = group;
    r.member_id = member;
    r.generation_id = generation;
    r.group_instance_id = std::move(instance);
    return await(h().heartbeat(info(version), r)).error_code;
  }
  // One stable single-member group; returns (member id, generation).
  std::pair<std::string, int32_t> stable_group(const std::string& group) {
    auto j = join_new(group);
    EXPECT_EQ(j.error_code, 0);
    auto s = sync(group, j.member_id, j.generation_id, "assign");
    EXPECT_EQ(s.error_code, 0);
    return {j.member_id, j.generation_id};
  }
  protocol::OffsetCommitResponse commit(
      const std::string& group, int16_t version,
      std::vector<std::tuple<std::string, int32_t, int64_t>> offsets, int32_t generation = -1,
      const std::string& member = "") {
    protocol::OffsetCommitRequest r;
    r.group_id = group;
    r.generation_id_or_member_epoch = generation;
    r.member_id = member;
    for (auto& [t, p, o] : offsets) {
      if (r.topics.empty() || r.topics.back().name != t) r.topics.push_back({t, {}});
      protocol::OffsetCommitRequest::OffsetCommitRequestPartition part;
      part.partition_index = p;
      part.committed_offset = o;
      part.committed_leader_epoch = 3;
      part.committed_metadata = "m";
      r.topics.back().partitions.push_back(part);
    }
    auto resp = await(h().offset_commit(info(version), r));
    expect_encodes(resp, version);
    return resp;
  }

  GroupServiceConfig cfg_;
  std::filesystem::path dir_;
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> guard_ = asio::make_work_guard(io_);
  asio::thread_pool workers_{2};
  std::unique_ptr<meta::SqliteMetaStore> meta_;
  std::unique_ptr<GroupService> service_;
};

}  // namespace shale::broker::testing
