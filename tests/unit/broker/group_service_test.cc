// GroupService: restarts over the same MetaStore, the timer thread, and registration with a
// dispatcher-shaped registry.
#include <gtest/gtest.h>

#include <map>

#include "base/endian.h"
#include "broker/api_versions.h"
#include "broker/dispatcher.h"
#include "group_harness.h"
#include "protocol/frame.h"
#include "protocol/generated/request_header.h"

namespace shale::broker::testing {
namespace {

class GroupServiceTest : public GroupApiTest {};

TEST_F(GroupServiceTest, OffsetsAndGroupsSurviveARestart) {
  start();
  auto [m, gen] = stable_group("g");
  commit("g", 8, {{"t1", 0, 42}, {"t2", 0, 7}}, gen, m);
  commit("plain", 2, {{"t1", 2, 99}});
  service_->stop();

  start();  // a new service and MetaStore over the same database file
  protocol::OffsetFetchRequest r;
  r.group_id = "g";
  r.topics.reset();
  auto f = await(h().offset_fetch(info(6), r));
  EXPECT_EQ(f.error_code, 0);
  std::map<std::string, int64_t> got;
  for (const auto& t : f.topics) {
    for (const auto& p : t.partitions) got[t.name] = p.committed_offset;
  }
  EXPECT_EQ(got["t1"], 42);
  EXPECT_EQ(got["t2"], 7);
  r.group_id = "plain";
  EXPECT_EQ(await(h().offset_fetch(info(6), r)).topics.at(0).partitions.at(0).committed_offset, 99);
  // The group comes back Stable with its member, whose session restarted.
  protocol::DescribeGroupsRequest d;
  d.groups = {"g"};
  auto desc = await(h().describe_groups(info(4), d));
  EXPECT_EQ(desc.groups.at(0).group_state, "Stable");
  ASSERT_EQ(desc.groups[0].members.size(), 1u);
  EXPECT_EQ(desc.groups[0].members[0].member_id, m);
  EXPECT_EQ(heartbeat("g", m, gen), 0);
}

TEST_F(GroupServiceTest, StopAnswersParkedJoinsNotCoordinator) {
  start();
  auto [m1, gen1] = stable_group("g");
  auto r2 = join_req("g", "");
  auto first = await(h().join_group(info(5), r2));
  r2.member_id = first.member_id;
  auto pending = spawn(h().join_group(info(5), r2));
  drive([&] { return heartbeat("g", m1, gen1) == 27; });
  service_->stop();
  drive([&] { return pending->has_value(); });
  ASSERT_TRUE(pending->has_value());
  EXPECT_EQ((*pending)->error_code, 16);  // NOT_COORDINATOR
}

// The ticker, not a request, completes a join: the initial rebalance delay of a new group
// expires while nobody calls the coordinator.
TEST_F(GroupServiceTest, TickerCompletesDelayedInitialJoin) {
  cfg_.coordinator.initial_rebalance_delay_ms = 50;
  start();
  auto r = join_req("g", "");
  auto first = await(h().join_group(info(5), r));
  r.member_id = first.member_id;
  auto j = await(h().join_group(info(5), r));
  EXPECT_EQ(j.error_code, 0);
  EXPECT_EQ(j.generation_id, 1);
}

// The ticker expires a member that stops heartbeating, and the group becomes Empty.
TEST_F(GroupServiceTest, TickerExpiresSilentMembers) {
  start();
  auto r = join_req("g", "");
  r.session_timeout_ms = 30;
  auto first = await(h().join_group(info(5), r));
  r.member_id = first.member_id;
  auto j = await(h().join_group(info(5), r));
  ASSERT_EQ(j.error_code, 0);
  ASSERT_EQ(sync("g", j.member_id, j.generation_id, "a").error_code, 0);
  protocol::DescribeGroupsRequest d;
  d.groups = {"g"};
  auto state = [&] { return service_->coordinator().describe_groups({"g"}).at(0).group_state; };
  drive([&] { return state() == "Empty"; });
  EXPECT_EQ(heartbeat("g", j.member_id, j.generation_id), 25);
}

// A registry shaped like broker::Dispatcher, to check what register_group_handlers adds.
struct FakeConn {
  std::string peer;
};
struct FakeContext {
  const FakeConn& conn;
  const protocol::RequestHeader& header;
  int16_t version() const { return header.request_api_version; }
};
struct FakeDispatcher {
  struct Range {
    int16_t min;
    int16_t max;
  };
  std::map<protocol::ApiKey, Range> ranges;
  std::function<asio::awaitable<std::optional<protocol::DescribeGroupsResponse>>(
      const FakeContext&, protocol::DescribeGroupsRequest&)>
      describe;
  template <typename Req, typename Resp>
  void add(int16_t min, int16_t max,
           std::function<asio::awaitable<std::optional<Resp>>(const FakeContext&, Req&)> h) {
    ranges[Req::kApiKey] = {min, max};
    if constexpr (std::is_same_v<Req, protocol::DescribeGroupsRequest>) describe = std::move(h);
  }
};

TEST_F(GroupServiceTest, RegistersEveryGroupApi) {
  start();
  FakeDispatcher d;
  register_group_handlers(d, h());
  using K = protocol::ApiKey;
  EXPECT_EQ(d.ranges.size(), 11u);
  for (K k : {K::kFindCoordinator, K::kJoinGroup, K::kSyncGroup, K::kHeartbeat, K::kLeaveGroup,
              K::kOffsetCommit, K::kOffsetFetch, K::kOffsetDelete, K::kListGroups,
              K::kDescribeGroups, K::kDeleteGroups}) {
    EXPECT_TRUE(d.ranges.count(k)) << static_cast<int>(k);
    EXPECT_EQ(d.ranges[k].min, 0);
  }
  EXPECT_EQ(d.ranges[K::kFindCoordinator].max, 6);
  EXPECT_EQ(d.ranges[K::kOffsetFetch].max, 9);

  // The registered handler fills client id and host from the connection.
  stable_group("g");
  FakeConn conn{"10.1.2.3:4567"};
  protocol::RequestHeader header;
  header.request_api_version = 5;
  header.client_id = "cli";
  FakeContext ctx{conn, header};
  protocol::DescribeGroupsRequest req;
  req.groups = {"g"};
  auto resp = await(d.describe(ctx, req));
  ASSERT_TRUE(resp.has_value());
  EXPECT_EQ(resp->groups.at(0).group_state, "Stable");
}

// Bytes in, bytes out: the real dispatcher decodes the frames, runs the group handlers and
// encodes their answers; ApiVersions advertises the registered group APIs.
TEST_F(GroupServiceTest, ThroughTheDispatcher) {
  start();
  Dispatcher d;
  register_api_versions(d);
  register_group_handlers(d, h());
  net::ConnectionInfo conn;
  conn.peer = "127.0.0.1:40000";
  auto call = [&](auto req, int16_t version, auto resp_type) {
    using Resp = decltype(resp_type);
    auto f = protocol::encode_request_frame(9, std::string("wire-client"), version, req);
    EXPECT_TRUE(f.ok());
    net::Response r = await(d.handle(conn, f->slice(4, f->size() - 4)));
    EXPECT_FALSE(r.close);
    Resp out;
    if (!r.frame) return out;
    Buffer b = r.frame->flatten();
    protocol::Reader rd(b);
    protocol::ResponseHeader hdr;
    EXPECT_TRUE(protocol::decode_response_header(rd, Resp::kApiKey, version, hdr).ok());
    EXPECT_EQ(hdr.correlation_id, 9);
    EXPECT_TRUE(out.decode(rd, version).ok());
    EXPECT_EQ(rd.remaining(), 0u);
    return out;
  };

  auto versions = call(protocol::ApiVersionsRequest{}, 2, protocol::ApiVersionsResponse{});
  std::map<int16_t, int16_t> max_of;
  for (const auto& k : versions.api_keys) max_of[k.api_key] = k.max_version;
  EXPECT_EQ(max_of[static_cast<int16_t>(protocol::ApiKey::kFindCoordinator)], 6);
  EXPECT_EQ(max_of[static_cast<int16_t>(protocol::ApiKey::kJoinGroup)], 9);
  EXPECT_EQ(max_of[static_cast<int16_t>(protocol::ApiKey::kOffsetDelete)], 0);

  protocol::FindCoordinatorRequest fc;
  fc.coordinator_keys = {"g"};
  auto coord = call(fc, 4, protocol::FindCoordinatorResponse{});
  ASSERT_EQ(coord.coordinators.size(), 1u);
  EXPECT_EQ(coord.coordinators[0].port, 19092);

  auto first = call(join_req("g", ""), 9, protocol::JoinGroupResponse{});
  EXPECT_EQ(first.error_code, 79);
  auto j = call(join_req("g", first.member_id), 9, protocol::JoinGroupResponse{});
  EXPECT_EQ(j.error_code, 0);
  EXPECT_EQ(j.generation_id, 1);
  protocol::DescribeGroupsRequest dg;
  dg.groups = {"g"};
  auto desc = call(dg, 5, protocol::DescribeGroupsResponse{});
  ASSERT_EQ(desc.groups.at(0).members.size(), 1u);
  EXPECT_EQ(desc.groups[0].members[0].client_id, "wire-client");
  EXPECT_EQ(desc.groups[0].members[0].client_host, "/127.0.0.1");
}

}  // namespace
}  // namespace shale::broker::testing
