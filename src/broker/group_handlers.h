// GroupHandlers: the Kafka group and offset APIs (FindCoordinator, JoinGroup, SyncGroup,
// Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch, OffsetDelete, ListGroups, DescribeGroups,
// DeleteGroups) on top of group::Coordinator. Each handler takes the decoded request at its
// version, copies it into the coordinator's plain structs, and copies the answer back into the
// generated response at the same version; version differences (single vs. batched keys,
// single vs. multi-group OffsetFetch, v0-2 LeaveGroup, nullable fields) are resolved here.
// The coordinator's behaviour and the API mapping are described in docs/groups.md.
//
// Threads: handlers are coroutines started on a connection's shard (an event-loop thread).
// Every coordinator call may block (MetaStore writes), so it runs on `workers` and the
// coroutine resumes on its own executor afterwards. A JoinGroup/SyncGroup the coordinator
// parks is completed later from whichever thread completes it (another request's worker or
// the GroupTicker); the answer is posted back to the waiting coroutine's executor.
// Lifetime: the coordinator, the worker pool and the topic lookup must outlive every handler
// coroutine (stop the network server before destroying them).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include <asio/awaitable.hpp>
#include <asio/thread_pool.hpp>

#include "group/coordinator.h"
#include "protocol/generated/delete_groups_request.h"
#include "protocol/generated/delete_groups_response.h"
#include "protocol/generated/describe_groups_request.h"
#include "protocol/generated/describe_groups_response.h"
#include "protocol/generated/find_coordinator_request.h"
#include "protocol/generated/find_coordinator_response.h"
#include "protocol/generated/heartbeat_request.h"
#include "protocol/generated/heartbeat_response.h"
#include "protocol/generated/join_group_request.h"
#include "protocol/generated/join_group_response.h"
#include "protocol/generated/leave_group_request.h"
#include "protocol/generated/leave_group_response.h"
#include "protocol/generated/list_groups_request.h"
#include "protocol/generated/list_groups_response.h"
#include "protocol/generated/offset_commit_request.h"
#include "protocol/generated/offset_commit_response.h"
#include "protocol/generated/offset_delete_request.h"
#include "protocol/generated/offset_delete_response.h"
#include "protocol/generated/offset_fetch_request.h"
#include "protocol/generated/offset_fetch_response.h"
#include "protocol/generated/sync_group_request.h"
#include "protocol/generated/sync_group_response.h"

namespace shale::broker {

// Kafka's CoordinatorType (FindCoordinator KeyType).
inline constexpr int8_t kCoordinatorKeyGroup = 0;
inline constexpr int8_t kCoordinatorKeyTransaction = 1;
inline constexpr int8_t kCoordinatorKeyShare = 2;

// AuthorizedOperations of a group when no authorizer is configured: every operation Kafka
// supports on a group resource (READ 3, DELETE 6, DESCRIBE 8, DESCRIBE_CONFIGS 10,
// ALTER_CONFIGS 11), as a bit field.
inline constexpr int32_t kAllGroupOperations =
    (1 << 3) | (1 << 6) | (1 << 8) | (1 << 10) | (1 << 11);

// Does this topic-partition exist? (OffsetCommit/OffsetDelete answer UNKNOWN_TOPIC_OR_PARTITION
// for partitions that do not.) Called on the shard; must not block. The broker context
// provides it (Broker::partition_exists).
using PartitionExists = std::function<bool(std::string_view topic, int32_t partition)>;

// What a group handler needs from the request besides its body.
struct GroupRequestInfo {
  int16_t version = 0;
  std::string client_id;
  std::string client_host;  // Kafka's form: "/127.0.0.1"
};

// "127.0.0.1:5555" -> "/127.0.0.1", "[::1]:5555" -> "/::1" (what Kafka shows as a member's
// client host in DescribeGroups).
std::string kafka_client_host(std::string_view peer);

class GroupHandlers {
 public:
  // `on_call` (optional) runs after every coordinator call, on the worker thread; the broker
  // passes GroupTicker::poke so that timers a call scheduled are seen at once.
  GroupHandlers(group::Coordinator& coordinator, asio::thread_pool& workers,
                PartitionExists partition_exists, std::function<void()> on_call = nullptr);

  // KIP-447: does a transaction hold pending (TxnOffsetCommit) offsets of this group for this
  // partition? OffsetFetch with require_stable then answers UNSTABLE_OFFSET_COMMIT for it. May
  // block; called on a worker thread. Set before serving (shale serve: the transaction
  // coordinator).
  using PendingTxnOffsets =
      std::function<bool(const std::string& group, const std::string& topic, int32_t partition)>;
  void set_pending_txn_offsets(PendingTxnOffsets fn) { pending_txn_offsets_ = std::move(fn); }

  asio::awaitable<protocol::FindCoordinatorResponse> find_coordinator(
      GroupRequestInfo info, protocol::FindCoordinatorRequest req);
  // Cluster mode: which broker coordinates a group (node id, host, port; possibly this one),
  // or nullopt while no live broker does (COORDINATOR_NOT_AVAILABLE). Set before serving.
  struct RemoteCoordinator {
    int32_t node_id = -1;
    std::string host;
    int32_t port = -1;
  };
  using Locator = std::function<std::optional<RemoteCoordinator>(const std::string& group)>;
  void set_locator(Locator f) { locator_ = std::move(f); }
  // FindCoordinator for transactions answers COORDINATOR_NOT_AVAILABLE with this message when
  // set (cluster mode: the transaction coordinator writes its markers only into partitions of
  // its own broker, so it does not run there yet). Set before serving.
  void set_transactions_unavailable(std::string why) { txn_unavailable_ = std::move(why); }
  asio::awaitable<protocol::JoinGroupResponse> join_group(GroupRequestInfo info,
                                                          protocol::JoinGroupRequest req);
  asio::awaitable<protocol::SyncGroupResponse> sync_group(GroupRequestInfo info,
                                                          protocol::SyncGroupRequest req);
  asio::awaitable<protocol::HeartbeatResponse> heartbeat(GroupRequestInfo info,
                                                         protocol::HeartbeatRequest req);
  asio::awaitable<protocol::LeaveGroupResponse> leave_group(GroupRequestInfo info,
                                                            protocol::LeaveGroupRequest req);
  asio::awaitable<protocol::OffsetCommitResponse> offset_commit(GroupRequestInfo info,
                                                                protocol::OffsetCommitRequest req);
  asio::awaitable<protocol::OffsetFetchResponse> offset_fetch(GroupRequestInfo info,
                                                              protocol::OffsetFetchRequest req);
  asio::awaitable<protocol::OffsetDeleteResponse> offset_delete(GroupRequestInfo info,
                                                                protocol::OffsetDeleteRequest req);
  asio::awaitable<protocol::ListGroupsResponse> list_groups(GroupRequestInfo info,
                                                            protocol::ListGroupsRequest req);
  asio::awaitable<protocol::DescribeGroupsResponse> describe_groups(
      GroupRequestInfo info, protocol::DescribeGroupsRequest req);
  asio::awaitable<protocol::DeleteGroupsResponse> delete_groups(GroupRequestInfo info,
                                                                protocol::DeleteGroupsRequest req);

 private:
  Locator locator_;
  std::string txn_unavailable_;
  // Runs fn() on the worker pool, then on_call_, and resumes on the caller's executor.
  // fn must capture only `this` and pointers into the awaiting coroutine's frame (which lives
  // until the result arrives): GCC 12 miscompiles lambda temporaries with non-trivial
  // captures in a co_await expression (an SSO string moved out of the frame was freed as if
  // heap-allocated under ASan). Handlers also take their arguments by value, never by
  // reference, since a coroutine outlives its caller's temporaries.
  template <typename F>
  auto blocking(F fn) -> asio::awaitable<decltype(fn())>;

  // Runs call(cb) (a JoinGroup/SyncGroup that the coordinator may park), then on_call_, and
  // makes sure `done` runs only after both.
  template <typename R, typename Call>
  void call_parked(Call call, std::function<void(R)> done);

  group::Coordinator& coordinator_;
  asio::thread_pool& workers_;
  PartitionExists partition_exists_;
  std::function<void()> on_call_;
  PendingTxnOffsets pending_txn_offsets_;
};

// Registers every group API with a dispatcher that has Kafka's handler registry
// (broker::Dispatcher: add<Req, Resp>(min, max, handler), where a handler gets a context with
// `conn.peer`, `header.client_id` and `version()`). A template so that this file does not
// depend on the dispatcher's translation unit. `h` must outlive the dispatcher.
template <typename Dispatcher>
void register_group_handlers(Dispatcher& d, GroupHandlers& h) {
  auto info = [](const auto& ctx) {
    GroupRequestInfo i;
    i.version = ctx.version();
    i.client_id = ctx.header.client_id.value_or("");
    i.client_host = kafka_client_host(ctx.conn.peer);
    return i;
  };
#define SHALE_GROUP_API(Req, Resp, method, min, max)                                     \
  d.template add<protocol::Req, protocol::Resp>(                                         \
      min, max,                                                                          \
      [&h, info](const auto& ctx,                                                        \
                 protocol::Req& req) -> asio::awaitable<std::optional<protocol::Resp>> { \
        co_return co_await h.method(info(ctx), std::move(req));                          \
      })
  SHALE_GROUP_API(FindCoordinatorRequest, FindCoordinatorResponse, find_coordinator, 0, 6);
  SHALE_GROUP_API(JoinGroupRequest, JoinGroupResponse, join_group, 0, 9);
  SHALE_GROUP_API(SyncGroupRequest, SyncGroupResponse, sync_group, 0, 5);
  SHALE_GROUP_API(HeartbeatRequest, HeartbeatResponse, heartbeat, 0, 4);
  SHALE_GROUP_API(LeaveGroupRequest, LeaveGroupResponse, leave_group, 0, 5);
  SHALE_GROUP_API(OffsetCommitRequest, OffsetCommitResponse, offset_commit, 0, 9);
  SHALE_GROUP_API(OffsetFetchRequest, OffsetFetchResponse, offset_fetch, 0, 9);
  SHALE_GROUP_API(OffsetDeleteRequest, OffsetDeleteResponse, offset_delete, 0, 0);
  SHALE_GROUP_API(ListGroupsRequest, ListGroupsResponse, list_groups, 0, 5);
  SHALE_GROUP_API(DescribeGroupsRequest, DescribeGroupsResponse, describe_groups, 0, 5);
  SHALE_GROUP_API(DeleteGroupsRequest, DeleteGroupsResponse, delete_groups, 0, 2);
#undef SHALE_GROUP_API
}

}  // namespace shale::broker
