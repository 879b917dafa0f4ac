#include "group/classic_group.h"

#include <algorithm>
#include <cassert>

#include "group/consumer_protocol.h"
#include "group/errors.h"

namespace shale::group {

const Bytes* Member::metadata(const std::string& protocol) const {
  for (const auto& p : protocols) {
    if (p.name == protocol) return &p.metadata;
  }
  return nullptr;
}

std::optional<std::string> Member::vote(const std::set<std::string>& candidates) const {
  for (const auto& p : protocols) {
    if (candidates.count(p.name)) return p.name;
  }
  return std::nullopt;
}

void ClassicGroup::transition_to(GroupState s, int64_t now_ms) {
  [[maybe_unused]] bool valid = false;
  switch (s) {
    case GroupState::kEmpty:
      valid = is(GroupState::kPreparingRebalance);
      break;
    case GroupState::kPreparingRebalance:
      valid = can_rebalance();
      break;
    case GroupState::kCompletingRebalance:
      valid = is(GroupState::kPreparingRebalance);
      break;
    case GroupState::kStable:
      valid = is(GroupState::kCompletingRebalance);
      break;
    case GroupState::kDead:
      valid = true;
      break;
  }
  assert(valid && "invalid classic group state transition");
  previous_state_ = state_;
  state_ = s;
  state_timestamp_ms_ = now_ms;
}

Member* ClassicGroup::member(const std::string& id) {
  auto it = members_.find(id);
  return it == members_.end() ? nullptr : &it->second;
}

std::optional<std::string> ClassicGroup::static_member_id(
    const std::optional<std::string>& instance) const {
  if (!instance) return std::nullopt;
  auto it = static_members_.find(*instance);
  if (it == static_members_.end()) return std::nullopt;
  return it->second;
}

void ClassicGroup::count_protocols(const Member& m, int delta) {
  std::set<std::string> names;
  for (const auto& p : m.protocols) names.insert(p.name);
  for (const auto& n : names) {
    int& c = protocol_counts_[n];
    c += delta;
    if (c == 0) protocol_counts_.erase(n);
  }
}

std::set<std::string> ClassicGroup::candidate_protocols() const {
  std::set<std::string> out;
  for (const auto& [name, n] : protocol_counts_) {
    if (static_cast<size_t>(n) == members_.size()) out.insert(name);
  }
  return out;
}

void ClassicGroup::add(Member m) {
  assert(!members_.count(m.member_id));
  if (members_.empty()) protocol_type_ = m.protocol_type;
  if (m.awaiting_join()) ++awaiting_join_;
  count_protocols(m, +1);
  if (!leader_) leader_ = m.member_id;
  if (m.group_instance_id) static_members_[*m.group_instance_id] = m.member_id;
  pending_members_.erase(m.member_id);
  std::string id = m.member_id;
  members_.insert_or_assign(id, std::move(m));
}

void ClassicGroup::remove(const std::string& member_id, Deferred& d) {
  auto it = members_.find(member_id);
  if (it != members_.end()) {
    Member& m = it->second;
    JoinResult jr;
    jr.error_code = err::kUnknownMemberId;
    complete_join(m, std::move(jr), d);
    SyncResult sr;
    sr.error_code = err::kUnknownMemberId;
    complete_sync(m, std::move(sr), d);
    if (m.group_instance_id) {
      auto s = static_members_.find(*m.group_instance_id);
      if (s != static_members_.end() && s->second == member_id) static_members_.erase(s);
    }
    count_protocols(m, -1);
    members_.erase(it);
  }
  if (is_leader(member_id)) {
    // Prefer a member that is already waiting in JoinGroup: it can lead the next generation.
    leader_.reset();
    for (const auto& [id, m] : members_) {
      if (m.awaiting_join()) {
        leader_ = id;
        break;
      }
    }
    if (!leader_ && !members_.empty()) leader_ = members_.begin()->first;
  }
  pending_members_.erase(member_id);
  pending_sync_.erase(member_id);
}

void ClassicGroup::update_member(Member& m, std::vector<JoinProtocol> protocols,
                                 int32_t rebalance_timeout_ms, int32_t session_timeout_ms,
                                 JoinCallback cb, Deferred& d) {
  count_protocols(m, -1);
  m.protocols = std::move(protocols);
  count_protocols(m, +1);
  m.rebalance_timeout_ms = rebalance_timeout_ms;
  m.session_timeout_ms = session_timeout_ms;
  if (m.join_cb) {
    // The client gave up on the earlier request (Kafka mutes a connection while a request is
    // parked, so a second JoinGroup means a new connection); answer it so nothing leaks.
    JoinResult old;
    old.error_code = err::kRebalanceInProgress;
    old.member_id = m.member_id;
    complete_join(m, std::move(old), d);
  }
  m.join_cb = std::move(cb);
  if (m.join_cb) ++awaiting_join_;
}

Member& ClassicGroup::replace_static_member(const std::string& instance, const std::string& old_id,
                                            const std::string& new_id, Deferred& d) {
  auto it = members_.find(old_id);
  assert(it != members_.end());
  Member m = std::move(it->second);
  members_.erase(it);
  JoinResult jr;
  jr.error_code = err::kFencedInstanceId;
  jr.member_id = old_id;
  complete_join(m, std::move(jr), d);
  SyncResult sr;
  sr.error_code = err::kFencedInstanceId;
  complete_sync(m, std::move(sr), d);
  m.member_id = new_id;
  m.heartbeat_timer = 0;
  if (pending_sync_.erase(old_id)) pending_sync_.insert(new_id);
  if (is_leader(old_id)) leader_ = new_id;
  static_members_[instance] = new_id;
  auto [pos, inserted] = members_.emplace(new_id, std::move(m));
  assert(inserted);
  return pos->second;
}

size_t ClassicGroup::num_awaiting_join() const {
  // The counter must match a recount; Debug builds (the unit suite) check it on every use.
  assert(awaiting_join_ ==
         static_cast<size_t>(std::count_if(members_.begin(), members_.end(), [](const auto& kv) {
           return kv.second.awaiting_join();
         })));
  return awaiting_join_;
}

bool ClassicGroup::maybe_elect_new_joined_leader() {
  if (!leader_) return false;
  const Member* current = nullptr;
  if (auto it = members_.find(*leader_); it != members_.end()) current = &it->second;
  if (current && current->awaiting_join()) return true;
  for (const auto& [id, m] : members_) {
    if (m.awaiting_join()) {
      leader_ = id;
      return true;
    }
  }
  return false;
}

int32_t ClassicGroup::rebalance_timeout_ms() const {
  int32_t t = 0;
  for (const auto& [id, m] : members_) t = std::max(t, m.rebalance_timeout_ms);
  return t;
}

bool ClassicGroup::supports_protocols(const std::string& type,
                                      const std::vector<JoinProtocol>& ps) const {
  if (is(GroupState::kEmpty)) return !type.empty() && !ps.empty();
  if (!protocol_type_ || *protocol_type_ != type) return false;
  // Some protocol of the joining member must be supported by every current member.
  for (const auto& p : ps) {
    auto it = protocol_counts_.find(p.name);
    if (it != protocol_counts_.end() && static_cast<size_t>(it->second) == members_.size()) {
      return true;
    }
  }
  return false;
}

std::string ClassicGroup::select_protocol() const {
  assert(!members_.empty());
  const std::set<std::string> candidates = candidate_protocols();
  std::map<std::string, int> votes;
  for (const auto& [id, m] : members_) {
    if (auto v = m.vote(candidates)) ++votes[*v];
  }
  // Most votes wins; ties go to the smallest name so that the choice is deterministic.
  std::string best;
  int best_votes = -1;
  for (const auto& [name, n] : votes) {
    if (n > best_votes) {
      best = name;
      best_votes = n;
    }
  }
  return best;
}

void ClassicGroup::init_next_generation(int64_t now_ms) {
  ++generation_;
  if (!members_.empty()) {
    protocol_name_ = select_protocol();
    subscribed_topics_ = compute_subscribed_topics();
    transition_to(GroupState::kCompletingRebalance, now_ms);
  } else {
    protocol_name_.reset();
    subscribed_topics_ = compute_subscribed_topics();
    transition_to(GroupState::kEmpty, now_ms);
  }
  pending_sync_.clear();
}

std::optional<std::set<std::string>> ClassicGroup::compute_subscribed_topics() const {
  if (!protocol_type_ || *protocol_type_ != kConsumerProtocolType) return std::nullopt;
  if (members_.empty()) return std::set<std::string>{};
  if (!protocol_name_) return std::nullopt;
  std::set<std::string> topics;
  for (const auto& [id, m] : members_) {
    const Bytes* md = m.metadata(*protocol_name_);
    if (!md) return std::nullopt;
    auto ts = subscription_topics(*md);
    // Unparsable metadata: the subscription is unknown, as Kafka treats a SchemaException.
    if (!ts.ok()) return std::nullopt;
    topics.insert(ts->begin(), ts->end());
  }
  return topics;
}

bool ClassicGroup::complete_join(Member& m, JoinResult r, Deferred& d) {
  JoinCallback cb = take_join_callback(m);
  if (!cb) return false;
  d.push_back([cb = std::move(cb), r = std::move(r)]() mutable { cb(std::move(r)); });
  return true;
}

JoinCallback ClassicGroup::take_join_callback(Member& m) {
  if (!m.join_cb) return nullptr;
  assert(awaiting_join_ > 0);
  --awaiting_join_;
  JoinCallback cb = std::move(m.join_cb);
  m.join_cb = nullptr;
  return cb;
}

bool ClassicGroup::complete_sync(Member& m, SyncResult r, Deferred& d) {
  if (!m.sync_cb) return false;
  d.push_back([cb = std::move(m.sync_cb), r = std::move(r)]() mutable { cb(std::move(r)); });
  m.sync_cb = nullptr;
  return true;
}

std::vector<JoinResponseMember> ClassicGroup::current_member_metadata() const {
  std::vector<JoinResponseMember> out;
  if (!protocol_name_) return out;
  for (const auto& [id, m] : members_) {
    const Bytes* md = m.metadata(*protocol_name_);
    out.push_back(JoinResponseMember{id, m.group_instance_id, md ? *md : Bytes()});
  }
  return out;
}

GroupRecord ClassicGroup::to_record(const std::map<std::string, Bytes>* assignment) const {
  GroupRecord r;
  r.group_id = id_;
  r.protocol_type = protocol_type_;
  r.generation = generation_;
  r.protocol_name = protocol_name_;
  r.leader = leader_;
  r.state_timestamp_ms = state_timestamp_ms_;
  for (const auto& [id, m] : members_) {
    StoredMember s;
    s.member_id = id;
    s.group_instance_id = m.group_instance_id;
    s.client_id = m.client_id;
    s.client_host = m.client_host;
    s.rebalance_timeout_ms = m.rebalance_timeout_ms;
    s.session_timeout_ms = m.session_timeout_ms;
    if (protocol_name_) {
      if (const Bytes* md = m.metadata(*protocol_name_)) s.subscription = *md;
    }
    if (assignment) {
      auto a = assignment->find(id);
      if (a != assignment->end()) s.assignment = a->second;
    } else {
      s.assignment = m.assignment;
    }
    r.members.push_back(std::move(s));
  }
  return r;
}

void ClassicGroup::restore(const GroupRecord& r) {
  protocol_type_ = r.protocol_type;
  generation_ = r.generation;
  protocol_name_ = r.protocol_name;
  leader_ = r.leader;
  state_timestamp_ms_ = r.state_timestamp_ms;
  members_.clear();
  static_members_.clear();
  protocol_counts_.clear();
  awaiting_join_ = 0;
  for (const auto& s : r.members) {
    Member m;
    m.member_id = s.member_id;
    m.group_instance_id = s.group_instance_id;
    m.client_id = s.client_id;
    m.client_host = s.client_host;
    m.rebalance_timeout_ms = s.rebalance_timeout_ms;
    m.session_timeout_ms = s.session_timeout_ms;
    m.protocol_type = protocol_type_.value_or("");
    if (protocol_name_) m.protocols.push_back(JoinProtocol{*protocol_name_, s.subscription});
    m.assignment = s.assignment;
    if (m.group_instance_id) static_members_[*m.group_instance_id] = m.member_id;
    count_protocols(m, +1);
    members_.emplace(m.member_id, std::move(m));
  }
  if (leader_ && !members_.count(*leader_)) leader_.reset();
  // A stored group with members was Stable (its assignment is what was stored); the members
  // must heartbeat again within their session timeouts or they are removed.
  previous_state_ = GroupState::kEmpty;
  state_ = members_.empty() ? GroupState::kEmpty : GroupState::kStable;
  subscribed_topics_ = compute_subscribed_topics();
}

}  // namespace shale::group
