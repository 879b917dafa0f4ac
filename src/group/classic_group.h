// ClassicGroup: the in-memory state of one classic-protocol consumer group, after Apache
// Kafka's ClassicGroup/ClassicGroupMember: members with their supported protocols, the
// static-member map (group.instance.id -> member id), pending members (got MEMBER_ID_REQUIRED
// and have not re-joined yet), members awaiting a JoinGroup or SyncGroup answer (their parked
// callbacks), the generation, the selected protocol, the leader, and committed offsets.
//
// Owner: the Coordinator, under its mutex; nothing here locks. Parked callbacks are never
// called from here: completing one moves it into a Deferred list that the Coordinator runs
// after releasing its lock.
//
// Invariants: every member id in static_members is in members; the leader (if any) is a
// member; a member id is never both pending and a member.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "group/consumer_protocol.h"
#include "group/group_store.h"
#include "group/types.h"

namespace shale::group {

// Work to run once the coordinator's lock is released (parked callbacks).
using Deferred = std::vector<std::function<void()>>;

struct Member {
  std::string member_id;
  std::optional<std::string> group_instance_id;
  std::string client_id;
  std::string client_host;
  int32_t rebalance_timeout_ms = 0;
  int32_t session_timeout_ms = 0;
  std::string protocol_type;
  std::vector<JoinProtocol> protocols;  // in the member's order of preference
  Bytes assignment;
  JoinCallback join_cb;  // set while a JoinGroup is parked
  SyncCallback sync_cb;  // set while a SyncGroup is parked
  bool is_new = false;   // joined in the current rebalance; may expire while awaiting join
  uint64_t heartbeat_timer = 0;

  bool awaiting_join() const { return static_cast<bool>(join_cb); }
  bool awaiting_sync() const { return static_cast<bool>(sync_cb); }
  bool is_static() const { return group_instance_id.has_value(); }
  const Bytes* metadata(const std::string& protocol) const;
  bool matches(const std::vector<JoinProtocol>& other) const { return protocols == other; }
  // The first of the member's protocols that is in `candidates`.
  std::optional<std::string> vote(const std::set<std::string>& candidates) const;
  // Kafka's hasSatisfiedHeartbeat: members parked in a rebalance need no heartbeat, unless new.
  bool has_satisfied_heartbeat() const {
    if (is_new) return false;
    return awaiting_join() || awaiting_sync();
  }
};

class ClassicGroup {
 public:
  ClassicGroup(std::string id, int64_t now_ms) : id_(std::move(id)), state_timestamp_ms_(now_ms) {}

  const std::string& id() const { return id_; }
  GroupState state() const { return state_; }
  GroupState previous_state() const { return previous_state_; }
  bool is(GroupState s) const { return state_ == s; }
  int64_t state_timestamp_ms() const { return state_timestamp_ms_; }
  // Asserts Kafka's allowed previous states (a programmer error otherwise).
  void transition_to(GroupState s, int64_t now_ms);
  bool can_rebalance() const {
    return is(GroupState::kStable) || is(GroupState::kCompletingRebalance) ||
           is(GroupState::kEmpty);
  }

  int32_t generation() const { return generation_; }
  const std::optional<std::string>& protocol_type() const { return protocol_type_; }
  const std::optional<std::string>& protocol_name() const { return protocol_name_; }
  const std::optional<std::string>& leader() const { return leader_; }
  std::string leader_or_empty() const { return leader_.value_or(""); }
  bool is_leader(const std::string& member_id) const { return leader_ && *leader_ == member_id; }

  // ---- members ----
  std::map<std::string, Member>& members() { return members_; }
  const std::map<std::string, Member>& members() const { return members_; }
  bool has_member(const std::string& id) const { return members_.count(id) > 0; }
  Member* member(const std::string& id);
  size_t size() const { return members_.size(); }
  std::optional<std::string> static_member_id(const std::optional<std::string>& instance) const;
  void add(Member m);
  // Removes a member (or pending member). Parked requests of a removed member are answered
  // with UNKNOWN_MEMBER_ID so the client re-joins. Picks another leader if needed.
  void remove(const std::string& member_id, Deferred& d);
  void update_member(Member& m, std::vector<JoinProtocol> protocols, int32_t rebalance_timeout_ms,
                     int32_t session_timeout_ms, JoinCallback cb, Deferred& d);
  // A static member re-joined without its member id: move it to `new_id`, fencing parked
  // requests of the old id with FENCED_INSTANCE_ID. Returns the new member.
  Member& replace_static_member(const std::string& instance, const std::string& old_id,
                                const std::string& new_id, Deferred& d);

  // Pending members: member id -> heartbeat timer id.
  std::map<std::string, uint64_t>& pending_members() { return pending_members_; }
  bool is_pending(const std::string& id) const { return pending_members_.count(id) > 0; }
  std::set<std::string>& pending_sync() { return pending_sync_; }

  size_t num_awaiting_join() const;
  bool has_all_members_joined() const {
    return num_awaiting_join() == members_.size() && pending_members_.empty();
  }
  bool maybe_elect_new_joined_leader();
  int32_t rebalance_timeout_ms() const;  // max over members

  // ---- protocols ----
  bool supports_protocols(const std::string& type, const std::vector<JoinProtocol>& ps) const;
  std::string select_protocol() const;
  void init_next_generation(int64_t now_ms);
  const std::optional<std::set<std::string>>& subscribed_topics() const {
    return subscribed_topics_;
  }
  bool is_subscribed_to(const std::string& topic) const {
    return subscribed_topics_ && subscribed_topics_->count(topic) > 0;
  }
  bool uses_consumer_protocol() const { return protocol_type_ == kConsumerProtocolType; }

  // Completing parked requests (no-ops when nothing is parked). Return whether one was parked.
  // Always go through these (or take_join_callback) so the count of waiting members holds.
  bool complete_join(Member& m, JoinResult r, Deferred& d);
  static bool complete_sync(Member& m, SyncResult r, Deferred& d);
  JoinCallback take_join_callback(Member& m);
  std::vector<JoinResponseMember> current_member_metadata() const;

  // ---- persistence ----
  GroupRecord to_record(const std::map<std::string, Bytes>* assignment) const;
  void restore(const GroupRecord& r);

  // ---- offsets: topic -> partition -> value ----
  std::map<std::string, std::map<int32_t, OffsetValue>>& offsets() { return offsets_; }
  const std::map<std::string, std::map<int32_t, OffsetValue>>& offsets() const { return offsets_; }
  bool has_offsets() const { return !offsets_.empty(); }

  // ---- timers (ids of the live timer of each kind; 0 = none) ----
  uint64_t join_timer = 0;
  bool join_timer_is_initial = false;  // the join timer is the initial-rebalance delay
  uint64_t sync_timer = 0;
  // Initial-rebalance delay bookkeeping (Kafka's newMemberAdded and remaining delay).
  bool new_member_added = false;
  int32_t initial_delay_ms = 0;
  int32_t initial_remaining_ms = 0;
  bool initial_rebalance = false;  // the current rebalance started from Empty

 private:
  std::optional<std::set<std::string>> compute_subscribed_topics() const;
  // Kafka's supportedProtocols: for each protocol name, how many members support it, so that
  // joins into large groups stay O(protocols) instead of O(members).
  void count_protocols(const Member& m, int delta);
  std::set<std::string> candidate_protocols() const;

  std::string id_;
  GroupState state_ = GroupState::kEmpty;
  GroupState previous_state_ = GroupState::kEmpty;
  int64_t state_timestamp_ms_ = -1;
  int32_t generation_ = 0;
  std::optional<std::string> protocol_type_;
  std::optional<std::string> protocol_name_;
  std::optional<std::string> leader_;
  std::map<std::string, Member> members_;
  std::map<std::string, std::string> static_members_;
  std::map<std::string, uint64_t> pending_members_;
  std::set<std::string> pending_sync_;
  std::optional<std::set<std::string>> subscribed_topics_;
  std::map<std::string, int> protocol_counts_;
  size_t awaiting_join_ = 0;  // members with a parked JoinGroup
  std::map<std::string, std::map<int32_t, OffsetValue>> offsets_;
};

}  // namespace shale::group
