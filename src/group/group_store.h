// GroupStore: where the coordinator makes group metadata and committed offsets durable, and
// where it reads them back after a restart. The coordinator writes through it synchronously
// and answers a request only after the write returned OK (an OffsetCommit is acknowledged only
// once durable), so implementations must not acknowledge before the data would survive a crash.
//
// What is stored is what Kafka's __consumer_offsets holds for classic groups: one group
// metadata record per group (written when a generation's assignment is stored, when a group
// becomes Empty, and when a static member is replaced) and one record per committed offset.
//
// Threading: the coordinator calls a store from the threads that call the coordinator (never
// concurrently for one coordinator). Calls block; implementations over MetaStore inherit its
// rule: never from an event-loop thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "group/types.h"

namespace shale::group {

struct StoredMember {
  std::string member_id;
  std::optional<std::string> group_instance_id;
  std::string client_id;
  std::string client_host;
  int32_t rebalance_timeout_ms = 0;
  int32_t session_timeout_ms = 0;
  Bytes subscription;  // the member's metadata for the selected protocol
  Bytes assignment;
  bool operator==(const StoredMember&) const = default;
};

struct GroupRecord {
  std::string group_id;
  std::optional<std::string> protocol_type;
  int32_t generation = 0;
  std::optional<std::string> protocol_name;
  std::optional<std::string> leader;
  int64_t state_timestamp_ms = -1;  // when the group entered its current state
  std::vector<StoredMember> members;
  bool operator==(const GroupRecord&) const = default;
};

struct OffsetValue {
  int64_t offset = -1;
  int32_t leader_epoch = -1;
  std::string metadata;
  int64_t commit_timestamp_ms = -1;
  std::optional<int64_t> expire_timestamp_ms;  // only from OffsetCommit v2-4 retention times
  bool operator==(const OffsetValue&) const = default;
};

struct OffsetRecord {
  std::string topic;
  int32_t partition = 0;
  OffsetValue value;
  bool operator==(const OffsetRecord&) const = default;
};

struct TopicPartition {
  std::string topic;
  int32_t partition = 0;
  bool operator==(const TopicPartition&) const = default;
};

struct StoredGroup {
  std::string group_id;
  std::optional<GroupRecord> metadata;  // absent for groups that only have offsets
  std::vector<OffsetRecord> offsets;
};

class GroupStore {
 public:
  virtual ~GroupStore() = default;

  // Replaces the group's metadata record.
  virtual Status save_group(const GroupRecord& group) = 0;
  // Atomically writes `commits` and removes `deletes` for one group.
  virtual Status save_offsets(std::string_view group_id, const std::vector<OffsetRecord>& commits,
                              const std::vector<TopicPartition>& deletes) = 0;
  // Removes the group's metadata and all its offsets.
  virtual Status delete_group(std::string_view group_id) = 0;
  // Everything stored, grouped by group id.
  virtual Result<std::vector<StoredGroup>> load_all() = 0;
};

}  // namespace shale::group
