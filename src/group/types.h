// Plain request and result structs of the classic group APIs (JoinGroup, SyncGroup, Heartbeat,
// LeaveGroup, OffsetCommit, OffsetFetch, OffsetDelete, ListGroups, DescribeGroups,
// DeleteGroups, FindCoordinator). They carry exactly what the Kafka messages carry (see
// <Api>Request.json in the kafka-clients jar, docs/protocol.md) so that the broker's handlers
// only copy fields between these and the generated codecs; the coordinator never sees wire bytes.
//
// Conventions: a Kafka nullable string is std::optional<std::string>; Kafka `bytes` are
// std::string (opaque, may contain NULs); error codes are Kafka's int16 values (errors.h).
// Version-dependent behaviour is selected by `api_version` where Kafka's behaviour depends on
// it; fields a version does not carry keep their defaults (Kafka's schema defaults).
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shale::group {

using Bytes = std::string;

enum class GroupState { kEmpty, kPreparingRebalance, kCompletingRebalance, kStable, kDead };

// Kafka's names: "Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead".
std::string_view state_name(GroupState s);
// Case-insensitive, as ListGroups' StatesFilter is.
std::optional<GroupState> parse_state(std::string_view name);

// ---- JoinGroup (api key 11) ----
struct JoinProtocol {
  std::string name;
  Bytes metadata;
  bool operator==(const JoinProtocol&) const = default;
};

struct JoinRequest {
  int16_t api_version = 9;
  std::string group_id;
  int32_t session_timeout_ms = 0;
  int32_t rebalance_timeout_ms = -1;  // v0 has none: -1 means "same as the session timeout"
  std::string member_id;              // "" = unknown member
  std::optional<std::string> group_instance_id;
  std::string protocol_type;
  std::vector<JoinProtocol> protocols;
  std::optional<std::string> reason;
  std::string client_id;    // from the request header
  std::string client_host;  // the peer address, as Kafka reports it ("/127.0.0.1")
};

struct JoinResponseMember {
  std::string member_id;
  std::optional<std::string> group_instance_id;
  Bytes metadata;
};

struct JoinResult {
  int16_t error_code = 0;
  int32_t generation_id = -1;
  std::optional<std::string> protocol_type;
  std::optional<std::string> protocol_name;
  std::string leader;
  bool skip_assignment = false;
  std::string member_id;
  std::vector<JoinResponseMember> members;  // only for the leader
};
using JoinCallback = std::function<void(JoinResult)>;

// ---- SyncGroup (api key 14) ----
struct SyncAssignment {
  std::string member_id;
  Bytes assignment;
};

struct SyncRequest {
  std::string group_id;
  int32_t generation_id = -1;
  std::string member_id;
  std::optional<std::string> group_instance_id;
  std::optional<std::string> protocol_type;  // v5+
  std::optional<std::string> protocol_name;  // v5+
  std::vector<SyncAssignment> assignments;   // only the leader sends them
};

struct SyncResult {
  int16_t error_code = 0;
  std::optional<std::string> protocol_type;
  std::optional<std::string> protocol_name;
  Bytes assignment;
};
using SyncCallback = std::function<void(SyncResult)>;

// ---- Heartbeat (api key 12) ----
struct HeartbeatRequest {
  std::string group_id;
  int32_t generation_id = -1;
  std::string member_id;
  std::optional<std::string> group_instance_id;
};

// ---- LeaveGroup (api key 13) ----
// v0-2 carry one member id: the broker passes it as a one-element `members` and answers with
// that member's error code as the top-level error.
struct LeaveMember {
  std::string member_id;
  std::optional<std::string> group_instance_id;
  std::optional<std::string> reason;
};
struct LeaveRequest {
  std::string group_id;
  std::vector<LeaveMember> members;
};
struct LeaveMemberResult {
  std::string member_id;
  std::optional<std::string> group_instance_id;
  int16_t error_code = 0;
};
struct LeaveResult {
  int16_t error_code = 0;
  std::vector<LeaveMemberResult> members;
};

// ---- shared by the offset APIs ----
struct TopicPartitions {
  std::string name;
  std::vector<int32_t> partitions;
};
struct PartitionError {
  int32_t partition = 0;
  int16_t error_code = 0;
};
struct TopicErrors {
  std::string name;
  std::vector<PartitionError> partitions;
};

// ---- OffsetCommit (api key 8) ----
struct CommitPartition {
  int32_t partition = 0;
  int64_t offset = 0;
  int32_t leader_epoch = -1;            // v6+
  int64_t commit_timestamp_ms = -1;     // v1 only; ignored as Kafka 4 ignores it
  std::optional<std::string> metadata;  // null is stored as ""
};
struct CommitTopic {
  std::string name;
  std::vector<CommitPartition> partitions;
};
struct CommitRequest {
  int16_t api_version = 9;
  std::string group_id;
  int32_t generation_id = -1;  // GenerationIdOrMemberEpoch
  std::string member_id;
  std::optional<std::string> group_instance_id;
  int64_t retention_time_ms = -1;  // v2-4; -1 = broker default
  std::vector<CommitTopic> topics;
  // Set by the transaction coordinator when a transaction commits the offsets of its
  // TxnOffsetCommit requests: no generation/member check (a transactional commit is fenced by
  // the producer epoch instead), and the group need not have members.
  bool transactional = false;
};
struct CommitResult {
  std::vector<TopicErrors> topics;
};

// ---- OffsetFetch (api key 9) ----
// v0-7 carry one group: the broker passes it as a one-element `groups` and copies that group's
// error code to the top-level ErrorCode (v2-7).
struct FetchGroup {
  std::string group_id;
  std::optional<std::vector<TopicPartitions>> topics;  // nullopt: all committed offsets
};
struct FetchRequest {
  std::vector<FetchGroup> groups;
  bool require_stable = false;  // v7+
};
struct FetchedPartition {
  int32_t partition = 0;
  int64_t offset = -1;
  int32_t leader_epoch = -1;
  std::optional<std::string> metadata;  // "" when nothing is committed, as Kafka answers
  int16_t error_code = 0;
};
struct FetchedTopic {
  std::string name;
  std::vector<FetchedPartition> partitions;
};
struct FetchGroupResult {
  std::string group_id;
  int16_t error_code = 0;
  std::vector<FetchedTopic> topics;
};
struct FetchResult {
  std::vector<FetchGroupResult> groups;
};

// ---- OffsetDelete (api key 47) ----
struct OffsetDeleteRequest {
  std::string group_id;
  std::vector<TopicPartitions> topics;
};
struct OffsetDeleteResult {
  int16_t error_code = 0;
  std::vector<TopicErrors> topics;
};

// ---- ListGroups (api key 16) ----
struct ListGroupsRequest {
  std::vector<std::string> states_filter;  // v4+; empty = all
  std::vector<std::string> types_filter;   // v5+; empty = all
};
struct ListedGroup {
  std::string group_id;
  std::string protocol_type;
  std::string group_state;
  std::string group_type;  // always "classic" here
};
struct ListGroupsResult {
  int16_t error_code = 0;
  std::vector<ListedGroup> groups;
};

// ---- DescribeGroups (api key 15) ----
struct DescribedMember {
  std::string member_id;
  std::optional<std::string> group_instance_id;
  std::string client_id;
  std::string client_host;
  Bytes metadata;    // only when the group is Stable
  Bytes assignment;  // only when the group is Stable
};
struct DescribedGroup {
  int16_t error_code = 0;
  std::string group_id;
  std::string group_state;
  std::string protocol_type;
  std::string protocol_data;  // the selected protocol name when Stable
  std::vector<DescribedMember> members;
};

// ---- DeleteGroups (api key 42) ----
struct DeleteGroupResult {
  std::string group_id;
  int16_t error_code = 0;
};

// ---- FindCoordinator (api key 10) ----
inline constexpr int8_t kKeyTypeGroup = 0;
struct CoordinatorInfo {
  std::string key;
  int32_t node_id = -1;
  std::string host;
  int32_t port = -1;
  int16_t error_code = 0;
  std::optional<std::string> error_message;
};

}  // namespace shale::group
