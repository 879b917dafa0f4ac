// Coordinator: Kafka's classic consumer-group coordinator (Apache Kafka 4.x
// GroupMetadataManager/OffsetMetadataManager for classic groups): JoinGroup with
// MEMBER_ID_REQUIRED and static membership, SyncGroup, Heartbeat, LeaveGroup, session and
// rebalance timeouts, the initial rebalance delay, OffsetCommit/Fetch/Delete with offset
// retention, ListGroups, DescribeGroups, DeleteGroups and FindCoordinator. Behaviour and
// design notes: docs/groups.md.
//
// Threading: one Coordinator serves all groups of a broker; every method is thread-safe and
// takes one internal mutex. Methods that change durable state (commit_offsets, delete_offsets,
// delete_groups, and any call that completes a SyncGroup or empties a group, including tick())
// write to the GroupStore while holding the mutex, so they block on it: call the coordinator
// from worker threads, never from an event-loop thread. Parked JoinGroup/SyncGroup callbacks
// are never invoked while the mutex is held: they run on the calling thread after the lock is
// released (possibly before join_group()/sync_group() returns), so a callback may call back
// into the coordinator.
//
// Time: all time comes from the injected clock (wall-clock milliseconds, because commit and
// state timestamps are persisted). Timers (session, rebalance, initial delay, pending-sync and
// offset-expiration deadlines) fire when their deadline has passed at the start or end of any
// call, or in tick(). The owner calls tick() at next_deadline_ms() (or periodically); tests
// drive a fake clock and call tick(), so nothing sleeps.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <queue>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "group/classic_group.h"
#include "group/errors.h"
#include "group/group_store.h"
#include "group/types.h"

namespace shale::group {

// Kafka broker configuration keys in comments; defaults are Kafka's.
struct CoordinatorConfig {
  int32_t min_session_timeout_ms = 6000;                  // group.min.session.timeout.ms
  int32_t max_session_timeout_ms = 1800000;               // group.max.session.timeout.ms
  int32_t initial_rebalance_delay_ms = 3000;              // group.initial.rebalance.delay.ms
  int32_t max_size = 2147483647;                          // group.max.size
  int32_t new_member_join_timeout_ms = 300000;            // Kafka's fixed 5 minutes
  int64_t offsets_retention_ms = 7LL * 24 * 3600 * 1000;  // offsets.retention.minutes
  int64_t offsets_retention_check_interval_ms = 600000;   // offsets.retention.check.interval.ms
  int32_t offset_metadata_max_bytes = 4096;               // offset.metadata.max.bytes
  // What FindCoordinator answers: this broker's advertised endpoint.
  int32_t node_id = 0;
  std::string host = "127.0.0.1";
  int32_t port = 9092;
  // Cluster mode: groups are split into this many shards (Kafka's offsets.topic.num.partitions)
  // by shard_of(); only the shards given to load_shard() are served, every other group answers
  // NOT_COORDINATOR. 0: one unsharded coordinator (load()/unload()).
  int32_t shards = 0;
};

class Coordinator {
 public:
  using Clock = std::function<int64_t()>;

  // `store` must outlive the coordinator. Until load() succeeds every API answers
  // COORDINATOR_LOAD_IN_PROGRESS.
  Coordinator(CoordinatorConfig config, GroupStore* store, Clock clock = nullptr);
  ~Coordinator();
  Coordinator(const Coordinator&) = delete;
  Coordinator& operator=(const Coordinator&) = delete;

  // Reads every stored group and offset (blocking). Restored groups with members are Stable
  // and their members' sessions restart now. Fails (kInvalidArgument) if already loaded.
  Status load();
  bool loaded() const;
  // Gives the groups up (broker shutdown, or another broker takes them over): every parked
  // JoinGroup/SyncGroup is answered NOT_COORDINATOR, memory and timers are dropped, and every
  // later call answers NOT_COORDINATOR until load() runs again. Nothing is written.
  void unload();

  // Sharded mode (config.shards > 0): the shard a group belongs to — Kafka's
  // abs(groupId.hashCode()) % offsets.topic.num.partitions, so a group lands where Kafka would
  // put its __consumer_offsets partition.
  static int32_t shard_of(std::string_view group_id, int32_t shards);
  // Reads the shard's groups and offsets from the store (blocking) and serves them; a loaded
  // shard is a no-op. unload_shard answers the shard's parked calls NOT_COORDINATOR and drops
  // its groups (another broker takes them over); nothing is written.
  Status load_shard(int32_t shard);
  void unload_shard(int32_t shard);
  bool shard_loaded(int32_t shard) const;
  std::set<int32_t> loaded_shards() const;

  void join_group(JoinRequest req, JoinCallback cb);
  void sync_group(SyncRequest req, SyncCallback cb);
  int16_t heartbeat(const HeartbeatRequest& req);
  LeaveResult leave_group(const LeaveRequest& req);

  CommitResult commit_offsets(const CommitRequest& req);
  FetchResult fetch_offsets(const FetchRequest& req);
  OffsetDeleteResult delete_offsets(const OffsetDeleteRequest& req);

  ListGroupsResult list_groups(const ListGroupsRequest& req);
  std::vector<DescribedGroup> describe_groups(const std::vector<std::string>& group_ids);
  std::vector<DeleteGroupResult> delete_groups(const std::vector<std::string>& group_ids);
  // FindCoordinator v0-3 (one key) and v4+ (batched keys). Only group keys are served here.
  std::vector<CoordinatorInfo> find_coordinator(int8_t key_type,
                                                const std::vector<std::string>& keys);

  // Fires due timers and, every offsets.retention.check.interval.ms, expires old offsets.
  void tick();
  // The earliest pending deadline (may be a cancelled timer's; ticking early is harmless).
  std::optional<int64_t> next_deadline_ms();

 private:
  enum class TimerKind { kHeartbeat, kJoin, kSync };
  struct Timer {
    int64_t deadline = 0;
    uint64_t id = 0;
    TimerKind kind = TimerKind::kHeartbeat;
    std::string group_id;
    std::string member_id;
    bool operator>(const Timer& o) const {
      return deadline != o.deadline ? deadline > o.deadline : id > o.id;
    }
  };

  // Runs `f(now, deferred)` under the lock with due timers fired before and after, then runs
  // the deferred callbacks without the lock.
  template <typename F>
  auto locked(F&& f);
  void run_due_timers(int64_t now, Deferred& d);
  void fire(const Timer& t, int64_t now, Deferred& d);
  uint64_t schedule(int64_t deadline, TimerKind kind, const std::string& group,
                    const std::string& member = {});

  ClassicGroup* find(const std::string& group_id);
  ClassicGroup& get_or_create(const std::string& group_id, int64_t now);
  void erase_group(const std::string& group_id);

  // JoinGroup paths (Kafka's classicGroupJoin*).
  void join(JoinRequest& req, JoinCallback& cb, int64_t now, Deferred& d);
  void join_new_member(ClassicGroup& g, JoinRequest& req, JoinCallback& cb, int64_t now,
                       Deferred& d);
  void join_existing_member(ClassicGroup& g, JoinRequest& req, JoinCallback& cb, int64_t now,
                            Deferred& d);
  void add_member_and_rebalance(ClassicGroup& g, const std::string& member_id, JoinRequest& req,
                                JoinCallback& cb, int64_t now, Deferred& d);
  void update_static_member_and_rebalance(ClassicGroup& g, const std::string& old_id,
                                          const std::string& new_id, JoinRequest& req,
                                          JoinCallback& cb, int64_t now, Deferred& d);
  bool accept_joining_member(const ClassicGroup& g, const std::string& member_id) const;
  int16_t validate_existing_member(const ClassicGroup& g, const std::string& member_id,
                                   const std::optional<std::string>& instance) const;
  static int16_t validate_member(const ClassicGroup& g, const std::string& member_id,
                                 const std::optional<std::string>& instance);
  std::string new_member_id(const std::string& client_id,
                            const std::optional<std::string>& instance);

  // Rebalance machinery.
  // `reason` is logged, as Kafka logs why each rebalance starts.
  void maybe_prepare_rebalance_or_complete_join(ClassicGroup& g, int64_t now, Deferred& d,
                                                const std::string& reason);
  void prepare_rebalance(ClassicGroup& g, int64_t now, Deferred& d, const std::string& reason);
  void maybe_complete_join_phase(ClassicGroup& g, int64_t now, Deferred& d);
  void complete_join(ClassicGroup& g, int64_t now, Deferred& d);
  void try_complete_initial_rebalance(ClassicGroup& g, int64_t now, Deferred& d);
  void expire_pending_sync(ClassicGroup& g, int64_t now, Deferred& d);
  void expire_heartbeat(ClassicGroup& g, const std::string& member_id, int64_t now, Deferred& d);
  void remove_member_and_update(ClassicGroup& g, const std::string& member_id, int64_t now,
                                Deferred& d);
  void schedule_heartbeat(ClassicGroup& g, Member& m, int64_t now, int32_t timeout_ms);
  void set_and_propagate_assignment(ClassicGroup& g, const std::map<std::string, Bytes>& a,
                                    int64_t now, Deferred& d);
  void reset_and_propagate_assignment_error(ClassicGroup& g, int16_t error, int64_t now,
                                            Deferred& d);
  void propagate_assignment(ClassicGroup& g, int16_t error, int64_t now, Deferred& d);
  void sync(SyncRequest& req, SyncCallback& cb, int64_t now, Deferred& d);
  LeaveResult leave(const LeaveRequest& req, int64_t now, Deferred& d);

  // Offsets.
  CommitResult commit(const CommitRequest& req, int64_t now);
  int16_t validate_offset_commit(const ClassicGroup& g, const CommitRequest& req) const;
  void expire_offsets(int64_t now);

  static int16_t store_error(const Error& e);

  CoordinatorConfig config_;
  GroupStore* store_;
  Clock clock_;

  // Answer to calls while not loaded: LOAD_IN_PROGRESS before the first load(), then
  // NOT_COORDINATOR after unload().
  int16_t not_loaded_error() const {
    return unloaded_ ? err::kNotCoordinator : err::kCoordinatorLoadInProgress;
  }
  // With mu_ held: kNone when this coordinator serves the group, else the error to answer.
  int16_t unavailable(std::string_view group_id) const;
  bool any_loaded() const;  // with mu_ held

  mutable std::mutex mu_;
  bool loaded_ = false;
  bool unloaded_ = false;
  std::set<int32_t> shards_;  // sharded mode: the shards served here
  std::map<std::string, std::unique_ptr<ClassicGroup>> groups_;
  std::priority_queue<Timer, std::vector<Timer>, std::greater<Timer>> timers_;
  uint64_t next_timer_id_ = 1;
  int64_t next_expiration_check_ms_ = 0;
  std::mt19937_64 rng_;  // member-id UUIDs
};

}  // namespace shale::group
