#include "group/coordinator.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <type_traits>

#include <spdlog/spdlog.h>

#include "base/clock.h"
#include "group/errors.h"

namespace shale::group {
namespace {

JoinResult join_error(int16_t code, std::string member_id) {
  JoinResult r;
  r.error_code = code;
  r.member_id = std::move(member_id);
  return r;
}

SyncResult sync_error(int16_t code) {
  SyncResult r;
  r.error_code = code;
  return r;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool inconsistent(const std::optional<std::string>& requested,
                  const std::optional<std::string>& current) {
  return requested && current && *requested != *current;
}

template <typename T>
void reply(Deferred& d, std::function<void(T)>& cb, T r) {
  if (!cb) return;
  d.push_back([cb = std::move(cb), r = std::move(r)]() mutable { cb(std::move(r)); });
  cb = nullptr;
}

}  // namespace

std::string_view state_name(GroupState s) {
  switch (s) {
    case GroupState::kEmpty:
      return "Empty";
    case GroupState::kPreparingRebalance:
      return "PreparingRebalance";
    case GroupState::kCompletingRebalance:
      return "CompletingRebalance";
    case GroupState::kStable:
      return "Stable";
    case GroupState::kDead:
      return "Dead";
  }
  return "Unknown";
}

std::optional<GroupState> parse_state(std::string_view name) {
  std::string n = lower(name);
  for (GroupState s : {GroupState::kEmpty, GroupState::kPreparingRebalance,
                       GroupState::kCompletingRebalance, GroupState::kStable, GroupState::kDead}) {
    if (lower(state_name(s)) == n) return s;
  }
  return std::nullopt;
}

Coordinator::Coordinator(CoordinatorConfig config, GroupStore* store, Clock clock)
    : config_(std::move(config)),
      store_(store),
      clock_(clock ? std::move(clock) : Clock(&shale::clock::wall_ms)),
      rng_(std::random_device{}()) {}

Coordinator::~Coordinator() = default;

template <typename F>
auto Coordinator::locked(F&& f) {
  using R = std::invoke_result_t<F, int64_t, Deferred&>;
  Deferred d;
  if constexpr (std::is_void_v<R>) {
    {
      std::lock_guard lk(mu_);
      const int64_t now = clock_();
      run_due_timers(now, d);
      f(now, d);
      run_due_timers(now, d);
    }
    for (auto& fn : d) fn();
  } else {
    std::optional<R> r;
    {
      std::lock_guard lk(mu_);
      const int64_t now = clock_();
      run_due_timers(now, d);
      r.emplace(f(now, d));
      run_due_timers(now, d);
    }
    for (auto& fn : d) fn();
    return std::move(*r);
  }
}

// ---------------------------------------------------------------------------------------------
// Timers

uint64_t Coordinator::schedule(int64_t deadline, TimerKind kind, const std::string& group,
                               const std::string& member) {
  uint64_t id = next_timer_id_++;
  timers_.push(Timer{deadline, id, kind, group, member});
  return id;
}

void Coordinator::run_due_timers(int64_t now, Deferred& d) {
  // Timers scheduled while this pass runs wait for the next pass, so a zero timeout cannot
  // loop forever inside one call.
  const uint64_t limit = next_timer_id_;
  std::vector<Timer> later;
  while (!timers_.empty() && timers_.top().deadline <= now) {
    Timer t = timers_.top();
    timers_.pop();
    if (t.id >= limit) {
      later.push_back(std::move(t));
      continue;
    }
    fire(t, now, d);
  }
  for (auto& t : later) timers_.push(std::move(t));
}

void Coordinator::fire(const Timer& t, int64_t now, Deferred& d) {
  ClassicGroup* g = find(t.group_id);
  if (!g) return;
  switch (t.kind) {
    case TimerKind::kHeartbeat: {
      auto p = g->pending_members().find(t.member_id);
      if (p != g->pending_members().end() && p->second == t.id) {
        spdlog::info("group {}: pending member {} removed after session timeout", g->id(),
                     t.member_id);
        g->remove(t.member_id, d);
        if (g->is(GroupState::kPreparingRebalance) && g->has_all_members_joined()) {
          complete_join(*g, now, d);
        }
        return;
      }
      Member* m = g->member(t.member_id);
      if (m && m->heartbeat_timer == t.id) expire_heartbeat(*g, t.member_id, now, d);
      return;
    }
    case TimerKind::kJoin:
      if (g->join_timer != t.id) return;
      g->join_timer = 0;
      if (g->join_timer_is_initial) {
        try_complete_initial_rebalance(*g, now, d);
      } else {
        complete_join(*g, now, d);
      }
      return;
    case TimerKind::kSync:
      if (g->sync_timer != t.id) return;
      g->sync_timer = 0;
      expire_pending_sync(*g, now, d);
      return;
  }
}

void Coordinator::tick() {
  locked([&](int64_t now, Deferred&) {
    if (any_loaded() && now >= next_expiration_check_ms_) {
      expire_offsets(now);
      next_expiration_check_ms_ = now + config_.offsets_retention_check_interval_ms;
    }
  });
}

std::optional<int64_t> Coordinator::next_deadline_ms() {
  std::lock_guard lk(mu_);
  if (!any_loaded()) return std::nullopt;
  int64_t t = next_expiration_check_ms_;
  if (!timers_.empty()) t = std::min(t, timers_.top().deadline);
  return t;
}

// ---------------------------------------------------------------------------------------------
// Groups

ClassicGroup* Coordinator::find(const std::string& group_id) {
  auto it = groups_.find(group_id);
  return it == groups_.end() ? nullptr : it->second.get();
}

ClassicGroup& Coordinator::get_or_create(const std::string& group_id, int64_t now) {
  auto& slot = groups_[group_id];
  if (!slot) slot = std::make_unique<ClassicGroup>(group_id, now);
  return *slot;
}

void Coordinator::erase_group(const std::string& group_id) { groups_.erase(group_id); }

bool Coordinator::loaded() const {
  std::lock_guard lk(mu_);
  return loaded_;
}

Status Coordinator::load() {
  if (loaded()) return Error::make(Errc::kInvalidArgument, "group coordinator already loaded");
  auto stored = store_->load_all();
  if (!stored.ok()) return std::move(stored).error();
  return locked([&](int64_t now, Deferred& d) -> Status {
    if (loaded_) return Error::make(Errc::kInvalidArgument, "group coordinator already loaded");
    unloaded_ = false;
    groups_.clear();
    timers_ = {};
    for (const auto& sg : *stored) {
      ClassicGroup& g = get_or_create(sg.group_id, now);
      if (sg.metadata) g.restore(*sg.metadata);
      for (const auto& o : sg.offsets) g.offsets()[o.topic][o.partition] = o.value;
      for (auto& [id, m] : g.members()) schedule_heartbeat(g, m, now, m.session_timeout_ms);
      if (g.is(GroupState::kStable) && g.size() > static_cast<size_t>(config_.max_size)) {
        prepare_rebalance(g, now, d, "loaded above group.max.size");
      }
    }
    loaded_ = true;
    next_expiration_check_ms_ = now + config_.offsets_retention_check_interval_ms;
    spdlog::info("group coordinator loaded {} groups", groups_.size());
    return ok_status();
  });
}

void Coordinator::unload() {
  locked([&](int64_t now, Deferred& d) {
    for (auto& [id, g] : groups_) {
      for (auto& [mid, m] : g->members()) {
        g->complete_join(m, join_error(err::kNotCoordinator, mid), d);
        ClassicGroup::complete_sync(m, sync_error(err::kNotCoordinator), d);
      }
      g->transition_to(GroupState::kDead, now);
    }
    groups_.clear();
    timers_ = {};
    loaded_ = false;
    unloaded_ = true;
    spdlog::info("group coordinator unloaded");
  });
}

int32_t Coordinator::shard_of(std::string_view group_id, int32_t shards) {
  if (shards <= 0) return 0;
  // Java's String.hashCode over the UTF-16 code units of the id (malformed UTF-8: one unit per
  // byte), then Kafka's Utils.abs modulo the shard count.
  uint32_t h = 0;
  auto unit = [&h](uint32_t u) { h = 31 * h + u; };
  const auto* p = reinterpret_cast<const unsigned char*>(group_id.data());
  const auto* end = p + group_id.size();
  while (p < end) {
    uint32_t cp = *p;
    int extra = cp < 0x80           ? 0
                : (cp >> 5) == 0x6  ? 1
                : (cp >> 4) == 0xE  ? 2
                : (cp >> 3) == 0x1E ? 3
                                    : -1;
    bool ok = extra >= 0 && end - p > extra;
    if (ok && extra > 0) {
      cp &= 0x3Fu >> extra;
      for (int i = 1; i <= extra; ++i) {
        if ((p[i] & 0xC0) != 0x80) ok = false;
        cp = (cp << 6) | (p[i] & 0x3Fu);
      }
    }
    if (!ok) {
      unit(*p++);
      continue;
    }
    p += extra + 1;
    if (cp >= 0x10000) {
      cp -= 0x10000;
      unit(0xD800 + (cp >> 10));
      unit(0xDC00 + (cp & 0x3FF));
    } else {
      unit(cp);
    }
  }
  // Kafka's Utils.abs: Math.abs, with Integer.MIN_VALUE mapped to 0.
  const auto v = static_cast<int32_t>(h);
  const int32_t a = v == INT32_MIN ? 0 : (v < 0 ? -v : v);
  return a % shards;
}

int16_t Coordinator::unavailable(std::string_view group_id) const {
  if (config_.shards <= 0) return loaded_ ? err::kNone : not_loaded_error();
  return shards_.contains(shard_of(group_id, config_.shards)) ? err::kNone : err::kNotCoordinator;
}

bool Coordinator::any_loaded() const { return loaded_ || !shards_.empty(); }

bool Coordinator::shard_loaded(int32_t shard) const {
  std::lock_guard lk(mu_);
  return shards_.contains(shard);
}

std::set<int32_t> Coordinator::loaded_shards() const {
  std::lock_guard lk(mu_);
  return shards_;
}

Status Coordinator::load_shard(int32_t shard) {
  if (config_.shards <= 0 || shard < 0 || shard >= config_.shards)
    return Error::make(Errc::kInvalidArgument,
                       "no group coordinator shard " + std::to_string(shard));
  if (shard_loaded(shard)) return ok_status();
  auto stored = store_->load_all();
  if (!stored.ok()) return std::move(stored).error();
  return locked([&](int64_t now, Deferred& d) -> Status {
    if (shards_.contains(shard)) return ok_status();
    if (shards_.empty())
      next_expiration_check_ms_ = now + config_.offsets_retention_check_interval_ms;
    size_t n = 0;
    for (const auto& sg : *stored) {
      if (shard_of(sg.group_id, config_.shards) != shard) continue;
      groups_.erase(sg.group_id);
      ClassicGroup& g = get_or_create(sg.group_id, now);
      if (sg.metadata) g.restore(*sg.metadata);
      for (const auto& o : sg.offsets) g.offsets()[o.topic][o.partition] = o.value;
      for (auto& [id, m] : g.members()) schedule_heartbeat(g, m, now, m.session_timeout_ms);
      if (g.is(GroupState::kStable) && g.size() > static_cast<size_t>(config_.max_size)) {
        prepare_rebalance(g, now, d, "loaded above group.max.size");
      }
      ++n;
    }
    shards_.insert(shard);
    spdlog::info("group coordinator shard {} loaded ({} groups)", shard, n);
    return ok_status();
  });
}

void Coordinator::unload_shard(int32_t shard) {
  locked([&](int64_t now, Deferred& d) {
    if (!shards_.erase(shard)) return;
    for (auto it = groups_.begin(); it != groups_.end();) {
      if (shard_of(it->first, config_.shards) != shard) {
        ++it;
        continue;
      }
      ClassicGroup& g = *it->second;
      for (auto& [mid, m] : g.members()) {
        g.complete_join(m, join_error(err::kNotCoordinator, mid), d);
        ClassicGroup::complete_sync(m, sync_error(err::kNotCoordinator), d);
      }
      g.transition_to(GroupState::kDead, now);
      it = groups_.erase(it);
    }
    spdlog::info("group coordinator shard {} unloaded", shard);
  });
}

std::string Coordinator::new_member_id(const std::string& client_id,
                                       const std::optional<std::string>& instance) {
  uint64_t hi = rng_(), lo = rng_();
  hi = (hi & ~0xF000ULL) | 0x4000ULL;                  // version 4
  lo = (lo & ~(0xC000ULL << 48)) | (0x8000ULL << 48);  // RFC 4122 variant
  char uuid[40];
  std::snprintf(uuid, sizeof uuid, "%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(hi >> 32),
                static_cast<unsigned>((hi >> 16) & 0xFFFF), static_cast<unsigned>(hi & 0xFFFF),
                static_cast<unsigned>(lo >> 48),
                static_cast<unsigned long long>(lo & 0xFFFFFFFFFFFFULL));
  return (instance ? *instance : client_id) + "-" + uuid;
}

int16_t Coordinator::store_error(const Error& e) {
  return e.code == Errc::kFenced ? err::kNotCoordinator : err::kCoordinatorNotAvailable;
}

// ---------------------------------------------------------------------------------------------
// JoinGroup

void Coordinator::join_group(JoinRequest req, JoinCallback cb) {
  locked([&](int64_t now, Deferred& d) { join(req, cb, now, d); });
}

void Coordinator::join(JoinRequest& req, JoinCallback& cb, int64_t now, Deferred& d) {
  if (int16_t e = unavailable(req.group_id)) return reply(d, cb, join_error(e, req.member_id));
  if (req.group_id.empty()) return reply(d, cb, join_error(err::kInvalidGroupId, req.member_id));
  if (req.rebalance_timeout_ms < 0) req.rebalance_timeout_ms = req.session_timeout_ms;
  if (req.session_timeout_ms < config_.min_session_timeout_ms ||
      req.session_timeout_ms > config_.max_session_timeout_ms) {
    return reply(d, cb, join_error(err::kInvalidSessionTimeout, req.member_id));
  }
  const bool unknown = req.member_id.empty();
  ClassicGroup* g = find(req.group_id);
  bool created = false;
  if (!g) {
    if (!unknown) return reply(d, cb, join_error(err::kUnknownMemberId, req.member_id));
    g = &get_or_create(req.group_id, now);
    created = true;
  }
  if (!accept_joining_member(*g, req.member_id)) {
    spdlog::info("group {}: rejecting member {}: group.max.size {} reached", g->id(), req.member_id,
                 config_.max_size);
    if (!unknown && g->has_member(req.member_id)) {
      g->remove(req.member_id, d);
      if (g->is(GroupState::kPreparingRebalance)) maybe_complete_join_phase(*g, now, d);
    }
    reply(d, cb, join_error(err::kGroupMaxSizeReached, ""));
  } else if (unknown) {
    join_new_member(*g, req, cb, now, d);
  } else {
    join_existing_member(*g, req, cb, now, d);
  }
  if (created && g->is(GroupState::kEmpty) && g->size() == 0 && g->pending_members().empty() &&
      !g->has_offsets()) {
    erase_group(req.group_id);
  }
}

bool Coordinator::accept_joining_member(const ClassicGroup& g, const std::string& id) const {
  const auto max = static_cast<size_t>(config_.max_size);
  switch (g.state()) {
    case GroupState::kEmpty:
    case GroupState::kDead:
      return true;
    case GroupState::kPreparingRebalance: {
      // Counting members already waiting (not the group size, which may exceed a lowered
      // max) kicks out the last members to re-join, as Kafka does.
      auto it = g.members().find(id);
      return (it != g.members().end() && it->second.awaiting_join()) || g.num_awaiting_join() < max;
    }
    case GroupState::kCompletingRebalance:
    case GroupState::kStable:
      return g.has_member(id) || g.size() < max;
  }
  return false;
}

void Coordinator::join_new_member(ClassicGroup& g, JoinRequest& req, JoinCallback& cb, int64_t now,
                                  Deferred& d) {
  if (!g.supports_protocols(req.protocol_type, req.protocols)) {
    return reply(d, cb, join_error(err::kInconsistentGroupProtocol, ""));
  }
  std::string id = new_member_id(req.client_id, req.group_instance_id);
  if (req.group_instance_id) {
    if (auto existing = g.static_member_id(req.group_instance_id)) {
      spdlog::info("group {}: static member {} re-joins without member id; replacing {} by {}",
                   g.id(), *req.group_instance_id, *existing, id);
      return update_static_member_and_rebalance(g, *existing, id, req, cb, now, d);
    }
    return add_member_and_rebalance(g, id, req, cb, now, d);
  }
  if (req.api_version >= 4) {
    // KIP-394: hand out the member id first; the member joins for real with it. The pending
    // member expires after one session timeout if it does not come back.
    g.pending_members()[id] =
        schedule(now + req.session_timeout_ms, TimerKind::kHeartbeat, g.id(), id);
    return reply(d, cb, join_error(err::kMemberIdRequired, id));
  }
  add_member_and_rebalance(g, id, req, cb, now, d);
}

void Coordinator::join_existing_member(ClassicGroup& g, JoinRequest& req, JoinCallback& cb,
                                       int64_t now, Deferred& d) {
  const std::string& id = req.member_id;
  if (!g.supports_protocols(req.protocol_type, req.protocols)) {
    return reply(d, cb, join_error(err::kInconsistentGroupProtocol, id));
  }
  if (g.is_pending(id)) {
    // Pending members are always dynamic (static members never get MEMBER_ID_REQUIRED).
    return add_member_and_rebalance(g, id, req, cb, now, d);
  }
  if (int16_t e = validate_existing_member(g, id, req.group_instance_id); e != err::kNone) {
    return reply(d, cb, join_error(e, id));
  }
  Member& m = *g.member(id);
  auto current_generation = [&](bool with_members) {
    JoinResult r;
    r.generation_id = g.generation();
    r.protocol_type = g.protocol_type();
    r.protocol_name = g.protocol_name();
    r.leader = g.leader_or_empty();
    r.member_id = id;
    if (with_members) r.members = g.current_member_metadata();
    return r;
  };
  auto update_and_rebalance = [&] {
    g.update_member(m, std::move(req.protocols), req.rebalance_timeout_ms, req.session_timeout_ms,
                    std::move(cb), d);
    cb = nullptr;
    maybe_prepare_rebalance_or_complete_join(
        g, now, d, "member " + id + " re-joined; client reason: " + req.reason.value_or("none"));
  };
  switch (g.state()) {
    case GroupState::kPreparingRebalance:
      return update_and_rebalance();
    case GroupState::kCompletingRebalance:
      // Same metadata: the member probably lost the JoinGroup answer; send it again.
      if (m.matches(req.protocols)) return reply(d, cb, current_generation(g.is_leader(id)));
      return update_and_rebalance();
    case GroupState::kStable:
      // The leader re-joining forces a rebalance: that is how it asks for a new assignment
      // (topic metadata changes, cooperative rebalancing's follow-up round).
      if (g.is_leader(id) || !m.matches(req.protocols)) return update_and_rebalance();
      return reply(d, cb, current_generation(false));
    case GroupState::kEmpty:
    case GroupState::kDead:
      return reply(d, cb, join_error(err::kUnknownMemberId, id));
  }
}

void Coordinator::add_member_and_rebalance(ClassicGroup& g, const std::string& member_id,
                                           JoinRequest& req, JoinCallback& cb, int64_t now,
                                           Deferred& d) {
  Member m;
  m.member_id = member_id;
  m.group_instance_id = req.group_instance_id;
  m.client_id = req.client_id;
  m.client_host = req.client_host;
  m.rebalance_timeout_ms = req.rebalance_timeout_ms;
  m.session_timeout_ms = req.session_timeout_ms;
  m.protocol_type = req.protocol_type;
  m.protocols = std::move(req.protocols);
  m.join_cb = std::move(cb);
  cb = nullptr;
  m.is_new = true;
  if (g.is(GroupState::kPreparingRebalance) && g.previous_state() == GroupState::kEmpty) {
    g.new_member_added = true;  // extends the initial rebalance delay
  }
  g.add(std::move(m));
  // A new member cannot heartbeat while its JoinGroup is parked, and a client that gave up
  // would leave a defunct member behind: expire new members after a fixed join timeout.
  schedule_heartbeat(g, *g.member(member_id), now, config_.new_member_join_timeout_ms);
  maybe_prepare_rebalance_or_complete_join(
      g, now, d,
      "new member " + member_id + " joined; client reason: " + req.reason.value_or("none"));
}

void Coordinator::update_static_member_and_rebalance(ClassicGroup& g, const std::string& old_id,
                                                     const std::string& new_id, JoinRequest& req,
                                                     JoinCallback& cb, int64_t now, Deferred& d) {
  const std::string instance = *req.group_instance_id;
  const std::string old_leader = g.leader_or_empty();
  Member& m = g.replace_static_member(instance, old_id, new_id, d);
  schedule_heartbeat(g, m, now, m.session_timeout_ms);
  auto old_protocols = m.protocols;
  const int32_t old_rebalance = m.rebalance_timeout_ms;
  const int32_t old_session = m.session_timeout_ms;
  g.update_member(m, std::move(req.protocols), req.rebalance_timeout_ms, req.session_timeout_ms,
                  std::move(cb), d);
  cb = nullptr;
  switch (g.state()) {
    case GroupState::kStable: {
      if (g.protocol_name().value_or("") != g.select_protocol()) {
        return maybe_prepare_rebalance_or_complete_join(
            g, now, d, "static member " + instance + " changed the selected protocol");
      }
      // Same protocol: the member keeps its assignment under the new id, no rebalance. The new
      // id must be durable, or a restarted coordinator would fence the member.
      Status s = store_->save_group(g.to_record(nullptr));
      Member& nm = *g.member(new_id);
      if (!s.ok()) {
        spdlog::warn("group {}: storing replaced static member {} failed: {}", g.id(), instance,
                     s.error().to_string());
        JoinCallback pending = g.take_join_callback(nm);
        Member& back = g.replace_static_member(instance, new_id, old_id, d);
        g.update_member(back, std::move(old_protocols), old_rebalance, old_session, nullptr, d);
        schedule_heartbeat(g, back, now, back.session_timeout_ms);
        JoinResult r = join_error(store_error(s.error()), "");
        r.generation_id = g.generation();
        r.protocol_type = g.protocol_type();
        r.protocol_name = g.protocol_name();
        r.leader = old_leader;
        return reply(d, pending, std::move(r));
      }
      JoinResult r;
      r.generation_id = g.generation();
      r.protocol_type = g.protocol_type();
      r.protocol_name = g.protocol_name();
      r.member_id = new_id;
      if (req.api_version >= 9) {
        // KIP-814: a static leader that re-joins gets the members but must not re-assign.
        const bool leader = g.is_leader(new_id);
        r.leader = g.leader_or_empty();
        r.skip_assignment = leader;
        if (leader) r.members = g.current_member_metadata();
      } else {
        r.leader = old_leader;  // as Kafka: the leader id from before the replacement
      }
      g.complete_join(nm, std::move(r), d);
      return;
    }
    case GroupState::kCompletingRebalance:
      // The leader may already be assigning with the old member id: start over.
      return prepare_rebalance(
          g, now, d, "static member " + instance + " replaced during CompletingRebalance");
    case GroupState::kPreparingRebalance:
      // The member now waits for the join phase with its new id (it may have been the last).
      return maybe_complete_join_phase(g, now, d);
    case GroupState::kEmpty:
    case GroupState::kDead:
      assert(false && "a group with a static member cannot be empty");
      return;
  }
}

int16_t Coordinator::validate_existing_member(const ClassicGroup& g, const std::string& id,
                                              const std::optional<std::string>& instance) const {
  if (!instance) return g.has_member(id) ? err::kNone : err::kUnknownMemberId;
  auto existing = g.static_member_id(instance);
  if (!existing) return err::kUnknownMemberId;
  if (*existing != id) return err::kFencedInstanceId;
  return err::kNone;
}

int16_t Coordinator::validate_member(const ClassicGroup& g, const std::string& id,
                                     const std::optional<std::string>& instance) {
  if (instance) {
    auto existing = g.static_member_id(instance);
    if (!existing) return err::kUnknownMemberId;
    if (*existing != id) return err::kFencedInstanceId;
  }
  return g.has_member(id) ? err::kNone : err::kUnknownMemberId;
}

// ---------------------------------------------------------------------------------------------
// Rebalance machinery

void Coordinator::maybe_prepare_rebalance_or_complete_join(ClassicGroup& g, int64_t now,
                                                           Deferred& d, const std::string& reason) {
  if (g.can_rebalance()) {
    prepare_rebalance(g, now, d, reason);
  } else {
    maybe_complete_join_phase(g, now, d);
  }
}

void Coordinator::prepare_rebalance(ClassicGroup& g, int64_t now, Deferred& d,
                                    const std::string& reason) {
  // Members waiting in SyncGroup must re-join.
  if (g.is(GroupState::kCompletingRebalance)) {
    reset_and_propagate_assignment_error(g, err::kRebalanceInProgress, now, d);
  }
  g.sync_timer = 0;
  g.pending_sync().clear();
  const bool initial = g.is(GroupState::kEmpty);
  if (initial) {
    // A new group: give other members time to arrive before the first generation.
    g.initial_rebalance = true;
    g.new_member_added = false;
    g.initial_delay_ms = config_.initial_rebalance_delay_ms;
    g.initial_remaining_ms = std::max(g.rebalance_timeout_ms() - g.initial_delay_ms, 0);
    g.join_timer = schedule(now + g.initial_delay_ms, TimerKind::kJoin, g.id());
    g.join_timer_is_initial = true;
  }
  g.transition_to(GroupState::kPreparingRebalance, now);
  spdlog::info("group {}: preparing to rebalance (generation {}): {}", g.id(), g.generation(),
               reason);
  if (initial) return;
  if (g.has_all_members_joined()) {
    complete_join(g, now, d);
  } else {
    g.join_timer = schedule(now + g.rebalance_timeout_ms(), TimerKind::kJoin, g.id());
    g.join_timer_is_initial = false;
  }
}

void Coordinator::maybe_complete_join_phase(ClassicGroup& g, int64_t now, Deferred& d) {
  // The initial rebalance completes only when its delay runs out.
  if (g.is(GroupState::kPreparingRebalance) && g.has_all_members_joined() && !g.initial_rebalance) {
    complete_join(g, now, d);
  }
}

void Coordinator::try_complete_initial_rebalance(ClassicGroup& g, int64_t now, Deferred& d) {
  if (g.new_member_added && g.initial_remaining_ms != 0) {
    g.new_member_added = false;
    const int32_t delay = std::min(config_.initial_rebalance_delay_ms, g.initial_remaining_ms);
    const int32_t remaining = std::max(g.initial_remaining_ms - g.initial_delay_ms, 0);
    g.initial_delay_ms = delay;
    g.initial_remaining_ms = remaining;
    g.join_timer = schedule(now + delay, TimerKind::kJoin, g.id());
    g.join_timer_is_initial = true;
    return;
  }
  complete_join(g, now, d);
}

void Coordinator::complete_join(ClassicGroup& g, int64_t now, Deferred& d) {
  g.join_timer = 0;
  if (!g.is(GroupState::kPreparingRebalance)) return;
  // Dynamic members that did not re-join in time are gone; static members stay until their
  // session expires (they are expected back with the same instance id).
  std::vector<std::string> laggards;
  for (const auto& [id, m] : g.members()) {
    if (!m.awaiting_join() && !m.is_static()) laggards.push_back(id);
  }
  for (const auto& id : laggards) {
    spdlog::info("group {}: removing member {}: it did not re-join before the rebalance timeout",
                 g.id(), id);
    g.remove(id, d);
  }
  if (!g.maybe_elect_new_joined_leader() && g.size() > 0) {
    // Only static members that have not re-joined remain: wait for them (or for their
    // sessions to expire) another rebalance timeout.
    g.join_timer = schedule(now + g.rebalance_timeout_ms(), TimerKind::kJoin, g.id());
    g.join_timer_is_initial = false;
    return;
  }
  g.initial_rebalance = false;
  g.new_member_added = false;
  g.init_next_generation(now);
  if (g.is(GroupState::kEmpty)) {
    spdlog::info("group {}: generation {} is empty", g.id(), g.generation());
    Status s = store_->save_group(g.to_record(nullptr));
    if (!s.ok()) {
      spdlog::warn("group {}: storing empty generation failed: {}", g.id(), s.error().to_string());
    }
    return;
  }
  spdlog::info("group {}: stabilized generation {} with {} members, protocol {}", g.id(),
               g.generation(), g.size(), g.protocol_name().value_or(""));
  for (auto& [id, m] : g.members()) {
    JoinResult r;
    r.generation_id = g.generation();
    r.protocol_type = g.protocol_type();
    r.protocol_name = g.protocol_name();
    r.leader = g.leader_or_empty();
    r.member_id = id;
    if (g.is_leader(id)) r.members = g.current_member_metadata();
    g.complete_join(m, std::move(r), d);
    schedule_heartbeat(g, m, now, m.session_timeout_ms);
    m.is_new = false;
    g.pending_sync().insert(id);
  }
  // Members that never send SyncGroup would stall the group in CompletingRebalance forever.
  g.sync_timer = schedule(now + g.rebalance_timeout_ms(), TimerKind::kSync, g.id());
}

void Coordinator::expire_pending_sync(ClassicGroup& g, int64_t now, Deferred& d) {
  if (!(g.is(GroupState::kCompletingRebalance) || g.is(GroupState::kStable))) return;
  if (g.pending_sync().empty()) return;
  std::vector<std::string> gone(g.pending_sync().begin(), g.pending_sync().end());
  for (const auto& id : gone) {
    spdlog::info("group {}: removing member {}: no SyncGroup before the rebalance timeout", g.id(),
                 id);
    g.remove(id, d);
  }
  prepare_rebalance(g, now, d, "members did not send SyncGroup in time");
}

void Coordinator::expire_heartbeat(ClassicGroup& g, const std::string& id, int64_t now,
                                   Deferred& d) {
  Member* m = g.member(id);
  if (!m || m->has_satisfied_heartbeat()) return;
  spdlog::info("group {}: member {} failed (session timeout), removing it", g.id(), id);
  remove_member_and_update(g, id, now, d);
}

void Coordinator::remove_member_and_update(ClassicGroup& g, const std::string& id, int64_t now,
                                           Deferred& d) {
  g.remove(id, d);
  if (g.is(GroupState::kStable) || g.is(GroupState::kCompletingRebalance)) {
    maybe_prepare_rebalance_or_complete_join(g, now, d, "member " + id + " removed");
  } else if (g.is(GroupState::kPreparingRebalance) && g.has_all_members_joined()) {
    complete_join(g, now, d);
  }
}

void Coordinator::schedule_heartbeat(ClassicGroup& g, Member& m, int64_t now, int32_t timeout) {
  m.heartbeat_timer = schedule(now + timeout, TimerKind::kHeartbeat, g.id(), m.member_id);
}

void Coordinator::set_and_propagate_assignment(ClassicGroup& g,
                                               const std::map<std::string, Bytes>& a, int64_t now,
                                               Deferred& d) {
  for (auto& [id, m] : g.members()) {
    auto it = a.find(id);
    m.assignment = it == a.end() ? Bytes() : it->second;
  }
  propagate_assignment(g, err::kNone, now, d);
}

void Coordinator::reset_and_propagate_assignment_error(ClassicGroup& g, int16_t error, int64_t now,
                                                       Deferred& d) {
  for (auto& [id, m] : g.members()) m.assignment.clear();
  propagate_assignment(g, error, now, d);
}

void Coordinator::propagate_assignment(ClassicGroup& g, int16_t error, int64_t now, Deferred& d) {
  for (auto& [id, m] : g.members()) {
    SyncResult r;
    r.error_code = error;
    if (error == err::kNone) {
      r.protocol_type = g.protocol_type();
      r.protocol_name = g.protocol_name();
    }
    r.assignment = m.assignment;
    // A member's session restarts when it gets its answer: while it waited, its heartbeat
    // expiration was ignored.
    if (ClassicGroup::complete_sync(m, std::move(r), d)) {
      schedule_heartbeat(g, m, now, m.session_timeout_ms);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// SyncGroup, Heartbeat, LeaveGroup

void Coordinator::sync_group(SyncRequest req, SyncCallback cb) {
  locked([&](int64_t now, Deferred& d) { sync(req, cb, now, d); });
}

void Coordinator::sync(SyncRequest& req, SyncCallback& cb, int64_t now, Deferred& d) {
  if (int16_t e = unavailable(req.group_id)) return reply(d, cb, sync_error(e));
  if (req.group_id.empty()) return reply(d, cb, sync_error(err::kInvalidGroupId));
  ClassicGroup* g = find(req.group_id);
  if (!g) return reply(d, cb, sync_error(err::kUnknownMemberId));
  if (int16_t e = validate_member(*g, req.member_id, req.group_instance_id); e != err::kNone) {
    return reply(d, cb, sync_error(e));
  }
  if (req.generation_id != g->generation()) {
    return reply(d, cb, sync_error(err::kIllegalGeneration));
  }
  if (inconsistent(req.protocol_type, g->protocol_type()) ||
      inconsistent(req.protocol_name, g->protocol_name())) {
    return reply(d, cb, sync_error(err::kInconsistentGroupProtocol));
  }
  Member& m = *g->member(req.member_id);
  auto remove_pending_sync = [&] {
    if (g->pending_sync().erase(req.member_id) && g->pending_sync().empty()) g->sync_timer = 0;
  };
  switch (g->state()) {
    case GroupState::kPreparingRebalance:
      return reply(d, cb, sync_error(err::kRebalanceInProgress));
    case GroupState::kCompletingRebalance: {
      if (m.sync_cb) ClassicGroup::complete_sync(m, sync_error(err::kRebalanceInProgress), d);
      m.sync_cb = std::move(cb);
      cb = nullptr;
      remove_pending_sync();
      if (!g->is_leader(req.member_id)) return;  // followers wait for the leader
      std::map<std::string, Bytes> assignment;
      for (auto& a : req.assignments) assignment[a.member_id] = std::move(a.assignment);
      for (const auto& [id, mm] : g->members()) assignment.try_emplace(id);
      // The generation's assignment is durable before anyone learns it.
      Status s = store_->save_group(g->to_record(&assignment));
      if (!s.ok()) {
        spdlog::warn("group {}: storing assignment of generation {} failed: {}", g->id(),
                     g->generation(), s.error().to_string());
        reset_and_propagate_assignment_error(*g, store_error(s.error()), now, d);
        maybe_prepare_rebalance_or_complete_join(*g, now, d, "storing the assignment failed");
        return;
      }
      set_and_propagate_assignment(*g, assignment, now, d);
      g->transition_to(GroupState::kStable, now);
      return;
    }
    case GroupState::kStable: {
      remove_pending_sync();
      SyncResult r;
      r.protocol_type = g->protocol_type();
      r.protocol_name = g->protocol_name();
      r.assignment = m.assignment;
      return reply(d, cb, std::move(r));
    }
    case GroupState::kEmpty:
    case GroupState::kDead:
      return reply(d, cb, sync_error(err::kUnknownMemberId));
  }
}

int16_t Coordinator::heartbeat(const HeartbeatRequest& req) {
  return locked([&](int64_t now, Deferred&) -> int16_t {
    // Kafka answers heartbeats blindly while loading: members keep their sessions.
    if (config_.shards <= 0 && !loaded_) return unloaded_ ? err::kNotCoordinator : err::kNone;
    if (int16_t e = unavailable(req.group_id)) return e;
    if (req.group_id.empty()) return err::kInvalidGroupId;
    ClassicGroup* g = find(req.group_id);
    if (!g) return err::kUnknownMemberId;
    if (int16_t e = validate_member(*g, req.member_id, req.group_instance_id); e != err::kNone) {
      return e;
    }
    if (req.generation_id != g->generation()) return err::kIllegalGeneration;
    Member& m = *g->member(req.member_id);
    switch (g->state()) {
      case GroupState::kPreparingRebalance:
        schedule_heartbeat(*g, m, now, m.session_timeout_ms);
        return err::kRebalanceInProgress;
      case GroupState::kCompletingRebalance:
      case GroupState::kStable:
        schedule_heartbeat(*g, m, now, m.session_timeout_ms);
        return err::kNone;
      case GroupState::kEmpty:
      case GroupState::kDead:
        return err::kUnknownMemberId;
    }
    return err::kUnknownMemberId;
  });
}

LeaveResult Coordinator::leave_group(const LeaveRequest& req) {
  return locked([&](int64_t now, Deferred& d) { return leave(req, now, d); });
}

LeaveResult Coordinator::leave(const LeaveRequest& req, int64_t now, Deferred& d) {
  LeaveResult out;
  if (int16_t e = unavailable(req.group_id)) {
    out.error_code = e;
    return out;
  }
  if (req.group_id.empty()) {
    out.error_code = err::kInvalidGroupId;
    return out;
  }
  ClassicGroup* g = find(req.group_id);
  if (!g) {
    out.error_code = err::kUnknownMemberId;
    return out;
  }
  bool any = false;
  for (const auto& lm : req.members) {
    LeaveMemberResult r{lm.member_id, lm.group_instance_id, err::kNone};
    if (lm.member_id.empty()) {
      // Administrative removal of a static member by its instance id.
      auto existing = g->static_member_id(lm.group_instance_id);
      if (existing) {
        g->remove(*existing, d);
      } else {
        r.error_code = err::kUnknownMemberId;
      }
    } else if (g->is_pending(lm.member_id)) {
      g->remove(lm.member_id, d);
    } else {
      r.error_code = validate_member(*g, lm.member_id, lm.group_instance_id);
      if (r.error_code == err::kNone) g->remove(lm.member_id, d);
    }
    if (r.error_code == err::kNone) {
      any = true;
      spdlog::info("group {}: member {} (instance {}) left: {}", g->id(), lm.member_id,
                   lm.group_instance_id.value_or("-"), lm.reason.value_or("no reason given"));
    }
    out.members.push_back(std::move(r));
  }
  if (any) {
    switch (g->state()) {
      case GroupState::kStable:
      case GroupState::kCompletingRebalance:
        maybe_prepare_rebalance_or_complete_join(*g, now, d, "members left");
        break;
      case GroupState::kPreparingRebalance:
        maybe_complete_join_phase(*g, now, d);
        break;
      default:
        break;
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Offsets

CommitResult Coordinator::commit_offsets(const CommitRequest& req) {
  return locked([&](int64_t now, Deferred&) { return commit(req, now); });
}

int16_t Coordinator::validate_offset_commit(const ClassicGroup& g, const CommitRequest& r) const {
  if (g.is(GroupState::kDead)) return err::kCoordinatorNotAvailable;
  // Generation -1 on an Empty group: the admin client or a consumer without group management.
  if (r.generation_id < 0 && g.is(GroupState::kEmpty)) return err::kNone;
  if (r.generation_id >= 0 || !r.member_id.empty() || r.group_instance_id) {
    if (int16_t e = validate_member(g, r.member_id, r.group_instance_id); e != err::kNone) {
      return e;
    }
    if (r.generation_id != g.generation()) return err::kIllegalGeneration;
  } else if (!g.is(GroupState::kEmpty)) {
    // No member id and no generation (v0): only an empty group accepts it.
    return err::kUnknownMemberId;
  }
  // The member's assignment of this generation is not known yet.
  if (g.is(GroupState::kCompletingRebalance)) return err::kRebalanceInProgress;
  return err::kNone;
}

CommitResult Coordinator::commit(const CommitRequest& req, int64_t now) {
  CommitResult out;
  for (const auto& t : req.topics) {
    TopicErrors te{t.name, {}};
    for (const auto& p : t.partitions) te.partitions.push_back(PartitionError{p.partition, 0});
    out.topics.push_back(std::move(te));
  }
  auto fail_all = [&](int16_t e) {
    for (auto& t : out.topics) {
      for (auto& p : t.partitions) p.error_code = e;
    }
    return out;
  };
  if (int16_t e = unavailable(req.group_id)) return fail_all(e);
  ClassicGroup* g = find(req.group_id);
  bool created = false;
  if (!g) {
    if (req.generation_id >= 0 && !req.transactional) {
      // v9+ says the group is unknown; older clients only understand ILLEGAL_GENERATION.
      return fail_all(req.api_version >= 9 ? err::kGroupIdNotFound : err::kIllegalGeneration);
    }
    g = &get_or_create(req.group_id, now);  // a "simple" group, known only by its offsets
    created = true;
  }
  auto drop_if_unused = [&] {
    if (created && !g->has_offsets()) erase_group(req.group_id);
  };
  if (int16_t e = req.transactional ? err::kNone : validate_offset_commit(*g, req);
      e != err::kNone) {
    drop_if_unused();
    return fail_all(e);
  }
  // As in Kafka, a member's commit counts as a heartbeat while the group is Stable or
  // PreparingRebalance (validation above guarantees the member exists then).
  if (g->is(GroupState::kStable) || g->is(GroupState::kPreparingRebalance)) {
    if (Member* m = g->member(req.member_id))
      schedule_heartbeat(*g, *m, now, m->session_timeout_ms);
  }
  std::vector<OffsetRecord> records;
  for (size_t ti = 0; ti < req.topics.size(); ++ti) {
    const auto& t = req.topics[ti];
    for (size_t pi = 0; pi < t.partitions.size(); ++pi) {
      const auto& p = t.partitions[pi];
      if (p.metadata &&
          p.metadata->size() > static_cast<size_t>(config_.offset_metadata_max_bytes)) {
        out.topics[ti].partitions[pi].error_code = err::kOffsetMetadataTooLarge;
        continue;
      }
      OffsetValue v;
      v.offset = p.offset;
      v.leader_epoch = p.leader_epoch;
      v.metadata = p.metadata.value_or("");
      v.commit_timestamp_ms = now;
      if (req.retention_time_ms >= 0) v.expire_timestamp_ms = now + req.retention_time_ms;
      records.push_back(OffsetRecord{t.name, p.partition, std::move(v)});
    }
  }
  // Durable before acknowledged: the response goes out only after the store accepted it.
  Status s = store_->save_offsets(g->id(), records, {});
  if (!s.ok()) {
    spdlog::warn("group {}: storing {} offsets failed: {}", g->id(), records.size(),
                 s.error().to_string());
    const int16_t e = s.error().code == Errc::kInvalidArgument ? err::kInvalidCommitOffsetSize
                                                               : store_error(s.error());
    for (auto& t : out.topics) {
      for (auto& p : t.partitions) {
        if (p.error_code == err::kNone) p.error_code = e;
      }
    }
    drop_if_unused();
    return out;
  }
  for (auto& r : records) g->offsets()[r.topic][r.partition] = std::move(r.value);
  drop_if_unused();
  return out;
}

FetchResult Coordinator::fetch_offsets(const FetchRequest& req) {
  return locked([&](int64_t, Deferred&) {
    FetchResult out;
    for (const auto& fg : req.groups) {
      FetchGroupResult gr;
      gr.group_id = fg.group_id;
      if (int16_t e = unavailable(fg.group_id)) {
        gr.error_code = e;
        out.groups.push_back(std::move(gr));
        continue;
      }
      ClassicGroup* g = find(fg.group_id);
      auto value = [](int32_t partition, const OffsetValue* v) {
        FetchedPartition p;
        p.partition = partition;
        p.metadata = "";
        if (v) {
          p.offset = v->offset;
          p.leader_epoch = v->leader_epoch;
          p.metadata = v->metadata;
        }
        return p;
      };
      if (!fg.topics) {
        if (g) {
          for (const auto& [topic, parts] : g->offsets()) {
            FetchedTopic ft{topic, {}};
            for (const auto& [p, v] : parts) ft.partitions.push_back(value(p, &v));
            gr.topics.push_back(std::move(ft));
          }
        }
      } else {
        for (const auto& t : *fg.topics) {
          FetchedTopic ft{t.name, {}};
          const std::map<int32_t, OffsetValue>* parts = nullptr;
          if (g) {
            auto it = g->offsets().find(t.name);
            if (it != g->offsets().end()) parts = &it->second;
          }
          for (int32_t p : t.partitions) {
            const OffsetValue* v = nullptr;
            if (parts) {
              auto it = parts->find(p);
              if (it != parts->end()) v = &it->second;
            }
            ft.partitions.push_back(value(p, v));
          }
          gr.topics.push_back(std::move(ft));
        }
      }
      out.groups.push_back(std::move(gr));
    }
    return out;
  });
}

OffsetDeleteResult Coordinator::delete_offsets(const OffsetDeleteRequest& req) {
  return locked([&](int64_t, Deferred&) {
    OffsetDeleteResult out;
    if (int16_t e = unavailable(req.group_id)) {
      out.error_code = e;
      return out;
    }
    if (req.group_id.empty()) {
      out.error_code = err::kInvalidGroupId;
      return out;
    }
    ClassicGroup* g = find(req.group_id);
    if (!g) {
      out.error_code = err::kGroupIdNotFound;
      return out;
    }
    const bool active = g->is(GroupState::kStable) || g->is(GroupState::kPreparingRebalance) ||
                        g->is(GroupState::kCompletingRebalance);
    // Only consumer-protocol groups say what they consume; other active groups keep all.
    if (active && !g->uses_consumer_protocol()) {
      out.error_code = err::kNonEmptyGroup;
      return out;
    }
    std::vector<TopicPartition> deletes;
    for (const auto& t : req.topics) {
      TopicErrors te{t.name, {}};
      const bool subscribed = g->is_subscribed_to(t.name);
      auto it = g->offsets().find(t.name);
      for (int32_t p : t.partitions) {
        te.partitions.push_back(
            PartitionError{p, subscribed ? err::kGroupSubscribedToTopic : err::kNone});
        if (!subscribed && it != g->offsets().end() && it->second.count(p)) {
          deletes.push_back(TopicPartition{t.name, p});
        }
      }
      out.topics.push_back(std::move(te));
    }
    Status s = store_->save_offsets(g->id(), {}, deletes);
    if (!s.ok()) {
      spdlog::warn("group {}: deleting offsets failed: {}", g->id(), s.error().to_string());
      out.error_code = store_error(s.error());
      out.topics.clear();
      return out;
    }
    for (const auto& tp : deletes) {
      auto it = g->offsets().find(tp.topic);
      it->second.erase(tp.partition);
      if (it->second.empty()) g->offsets().erase(it);
    }
    return out;
  });
}

void Coordinator::expire_offsets(int64_t now) {
  std::vector<std::string> ids;
  for (const auto& [id, g] : groups_) ids.push_back(id);
  for (const auto& id : ids) {
    ClassicGroup& g = *find(id);
    // Kafka's ClassicGroup.offsetExpirationCondition: which timestamp an offset ages from.
    enum class Base { kNone, kStateTime, kCommitTime } base = Base::kNone;
    bool spare_subscribed = false;
    if (g.protocol_type()) {
      if (g.is(GroupState::kEmpty)) {
        base = g.state_timestamp_ms() >= 0 ? Base::kStateTime : Base::kCommitTime;
      } else if (g.uses_consumer_protocol() && g.subscribed_topics() && g.is(GroupState::kStable)) {
        base = Base::kCommitTime;
        spare_subscribed = true;
      }
    } else {
      base = Base::kCommitTime;  // standalone consumers: age from the last commit
    }
    std::vector<TopicPartition> expired;
    if (base != Base::kNone) {
      for (const auto& [topic, parts] : g.offsets()) {
        if (spare_subscribed && g.is_subscribed_to(topic)) continue;
        for (const auto& [p, v] : parts) {
          const int64_t from =
              base == Base::kStateTime ? g.state_timestamp_ms() : v.commit_timestamp_ms;
          const bool old = v.expire_timestamp_ms ? now >= *v.expire_timestamp_ms
                                                 : now - from >= config_.offsets_retention_ms;
          if (old) expired.push_back(TopicPartition{topic, p});
        }
      }
    }
    if (!expired.empty()) {
      Status s = store_->save_offsets(id, {}, expired);
      if (!s.ok()) {
        spdlog::warn("group {}: expiring offsets failed: {}", id, s.error().to_string());
        continue;
      }
      for (const auto& tp : expired) {
        auto it = g.offsets().find(tp.topic);
        it->second.erase(tp.partition);
        if (it->second.empty()) g.offsets().erase(it);
      }
      spdlog::info("group {}: expired {} offsets", id, expired.size());
    }
    if (g.is(GroupState::kEmpty) && !g.has_offsets() && g.pending_members().empty()) {
      Status s = store_->delete_group(id);
      if (!s.ok()) {
        spdlog::warn("group {}: deleting the expired group failed: {}", id, s.error().to_string());
        continue;
      }
      spdlog::info("group {}: empty and without offsets, removed", id);
      erase_group(id);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// ListGroups, DescribeGroups, DeleteGroups, FindCoordinator

ListGroupsResult Coordinator::list_groups(const ListGroupsRequest& req) {
  return locked([&](int64_t, Deferred&) {
    ListGroupsResult out;
    // Sharded: the groups of the shards loaded here (none loaded: an empty list).
    if (config_.shards <= 0 && !loaded_) {
      out.error_code = not_loaded_error();
      return out;
    }
    std::vector<std::string> states, types;
    for (const auto& s : req.states_filter) states.push_back(lower(s));
    for (const auto& t : req.types_filter) types.push_back(lower(t));
    auto wanted = [](const std::vector<std::string>& filter, const std::string& v) {
      return filter.empty() || std::find(filter.begin(), filter.end(), v) != filter.end();
    };
    for (const auto& [id, g] : groups_) {
      std::string state(state_name(g->state()));
      if (!wanted(states, lower(state)) || !wanted(types, "classic")) continue;
      out.groups.push_back(ListedGroup{id, g->protocol_type().value_or(""), state, "classic"});
    }
    return out;
  });
}

std::vector<DescribedGroup> Coordinator::describe_groups(const std::vector<std::string>& ids) {
  return locked([&](int64_t, Deferred&) {
    std::vector<DescribedGroup> out;
    for (const auto& id : ids) {
      DescribedGroup dg;
      dg.group_id = id;
      if (int16_t e = unavailable(id)) {
        dg.error_code = e;
        out.push_back(std::move(dg));
        continue;
      }
      ClassicGroup* g = find(id);
      if (!g) {
        dg.group_state = std::string(state_name(GroupState::kDead));
        out.push_back(std::move(dg));
        continue;
      }
      dg.group_state = std::string(state_name(g->state()));
      dg.protocol_type = g->protocol_type().value_or("");
      const bool stable = g->is(GroupState::kStable) && g->protocol_name().has_value();
      if (stable) dg.protocol_data = *g->protocol_name();
      for (const auto& [mid, m] : g->members()) {
        DescribedMember dm{mid, m.group_instance_id, m.client_id, m.client_host, {}, {}};
        if (stable) {
          if (const Bytes* md = m.metadata(*g->protocol_name())) dm.metadata = *md;
          dm.assignment = m.assignment;
        }
        dg.members.push_back(std::move(dm));
      }
      out.push_back(std::move(dg));
    }
    return out;
  });
}

std::vector<DeleteGroupResult> Coordinator::delete_groups(const std::vector<std::string>& ids) {
  return locked([&](int64_t, Deferred&) {
    std::vector<DeleteGroupResult> out;
    for (const auto& id : ids) {
      DeleteGroupResult r{id, err::kNone};
      const int16_t e = unavailable(id);
      ClassicGroup* g = e == err::kNone ? find(id) : nullptr;
      if (e != err::kNone) {
        r.error_code = e;
      } else if (!g) {
        r.error_code = err::kGroupIdNotFound;
      } else if (!g->is(GroupState::kEmpty)) {
        r.error_code = err::kNonEmptyGroup;
      } else if (Status s = store_->delete_group(id); !s.ok()) {
        spdlog::warn("group {}: delete failed: {}", id, s.error().to_string());
        r.error_code = store_error(s.error());
      } else {
        spdlog::info("group {}: deleted", id);
        erase_group(id);
      }
      out.push_back(std::move(r));
    }
    return out;
  });
}

std::vector<CoordinatorInfo> Coordinator::find_coordinator(int8_t key_type,
                                                           const std::vector<std::string>& keys) {
  std::vector<CoordinatorInfo> out;
  for (const auto& k : keys) {
    CoordinatorInfo c;
    c.key = k;
    if (key_type != kKeyTypeGroup) {
      c.error_code = err::kInvalidRequest;
      c.error_message = "only group coordinators (key type 0) are served";
    } else {
      c.node_id = config_.node_id;
      c.host = config_.host;
      c.port = config_.port;
    }
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace shale::group
