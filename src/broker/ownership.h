// Ownership: cluster mode's partition ownership on one broker (docs/cluster.md). It turns the
// assignment records (`cluster::AssignmentTable`) into open and closed partitions here, drives
// partition moves and, on the controller, failover of dead brokers.
//
//   owner = me, OWNED or MOVING, not open here  → open the stream (epoch bump), publish a new
//                                                 Partition object with the record's leader epoch
//   owner = me, MOVING → B                      → close (drain, snapshot, upload), then RELEASED
//   RELEASED → me                               → open with leader epoch + 1, then OWNED(me)
//   anything else while open here               → stop serving (another broker owns it)
//
// Controller duties (every tick, only while this broker holds the controller key; every write
// through Member::controller_commit, so a deposed controller's writes fail):
//   - partitions without a record get one (placement by owned counts);
//   - a broker that owns partitions but is not live (its lease expired or was revoked) gets a
//     failover record `<ns>/failover/<id>` {target}: the target replays the dead broker's WAL
//     (Options::recover_wal) and marks it done; then each of the dead broker's partitions is
//     RELEASED to a live broker (fewest owned first) which takes it over; the record is deleted.
//   - a RELEASED partition whose target is no longer live goes back to its owner.
// A restarted broker waits for its own failover record to go before opening its WAL (serve).
//
// Threads: one driver thread does every blocking step (store, engine); the assignment and topic
// watches only queue work for it. Getters are thread-safe and non-blocking (Metadata calls them
// on event-loop threads). reassign/cancel block (call them on a worker).
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/result.h"
#include "cluster/assignments.h"
#include "cluster/member.h"
#include "protocol/wire.h"

namespace shale::broker {

class Broker;
struct Topic;

class Ownership {
 public:
  struct Options {
    int64_t tick_ms = 200;
    // A broker this one never saw live (e.g. all brokers restarting together) is failed over
    // only after this broker has been the controller this long (the others may still be
    // registering); one that was seen live and left is failed over at once. Typically the
    // lease TTL plus a second.
    int64_t failover_grace_ms = 10000;
    // Replays broker `node`'s WAL (the URI it registered) and uploads and commits what it
    // held, as that broker would at its own restart. Blocking. Unset: failover is refused
    // (partitions of a dead broker stay unavailable until it returns).
    std::function<Status(int32_t node, const std::string& wal_uri)> recover_wal;
    // Group coordinator shards (offsets.topic.num.partitions): each is an assignment record
    // `<ns>/assign/groups/<shard>` owned and moved like a partition (set_group_shard_hooks).
    // 0: no group shards.
    int32_t group_shards = 0;
  };
  // The assignment "topic" of the group coordinator shards (not a topic id: never hex).
  static constexpr const char* kGroupShards = "groups";

  // Starts the watches and the driver. Call after the Broker is constructed and before
  // Broker::start() (it puts the TopicManager in cluster mode); kick() after the topics loaded.
  static Result<std::unique_ptr<Ownership>> start(Broker* broker, cluster::Member* member,
                                                  Options opts);
  ~Ownership();
  Ownership(const Ownership&) = delete;
  Ownership& operator=(const Ownership&) = delete;

  // Called on the driver thread when this broker becomes (true) or stops being (false) the
  // controller, and once at the first tick. Group coordination follows the controller. Set
  // before kick().
  void set_controller_hook(std::function<void(bool)> f) { controller_hook_ = std::move(f); }
  // What serves (load, blocking) or gives up (unload) one group coordinator shard here. Set
  // before kick(): the driver does nothing until the first kick().
  void set_group_shard_hooks(std::function<Status(int32_t)> load,
                             std::function<void(int32_t)> unload) {
    load_group_shard_ = std::move(load);
    unload_group_shard_ = std::move(unload);
  }

  // Reconciles every partition now (after the topics loaded).
  void kick();
  // Stops the driver (partitions stay as they are). Idempotent.
  void stop();

  struct Leader {
    int32_t id = -1;  // -1: no live owner (LEADER_NOT_AVAILABLE)
    int32_t epoch = 0;
  };
  Leader leader(const protocol::Uuid& topic_id, int32_t partition) const;
  // The broker coordinating a consumer group: the live owner of its shard (id -1: none).
  Leader group_coordinator(const std::string& group) const;
  // This broker is about to serve the partition: it owns it (OWNED or MOVING) or it is the
  // target of a RELEASED record. Produce waits briefly for the open instead of refusing.
  bool opening(const protocol::Uuid& topic_id, int32_t partition) const;
  std::map<int32_t, cluster::BrokerInfo> live() const { return member_->live(); }
  // A live broker's address on listener `listener` (its first listener when it has none of
  // that name), as every API that names brokers answers it.
  struct Endpoint {
    int32_t id = -1;
    std::string host;
    int32_t port = -1;
    std::string rack;
  };
  static std::optional<Endpoint> endpoint_of(const cluster::BrokerInfo& info,
                                             const std::string& listener);
  std::optional<Endpoint> endpoint(int32_t id, const std::string& listener) const;
  // KIP-951: for a NOT_LEADER_OR_FOLLOWER answer, the partition's live leader when it is
  // another broker than `self` (id -1 otherwise), and that leader's endpoint.
  struct Hint {
    Leader leader;
    std::optional<Endpoint> endpoint;
  };
  Hint hint(const protocol::Uuid& topic_id, int32_t partition, int32_t self,
            const std::string& listener) const;
  std::vector<Endpoint> live_endpoints(const std::string& listener) const;
  int32_t controller_id() const { return member_->controller().value_or(-1); }
  // The controller id told to clients (Metadata, DescribeCluster): the controller, or this
  // broker while it has not yet seen who that is. Every broker serves the admin requests a
  // client sends "to the controller" (as Kafka's KRaft brokers forward them), and a client
  // told -1 waits for its next metadata refresh — librdkafka's CreateTopics timed out so.
  int32_t controller_for_clients() const { return member_->controller().value_or(member_->id()); }
  int32_t node_id() const { return member_->id(); }

  // AlterPartitionReassignments. Errors: kNotFound (unknown partition), kInvalidArgument (the
  // target is not a live broker), kConflict (a take-over is under way; retry).
  Result<cluster::Assignment> reassign(const protocol::Uuid& topic_id, int32_t partition,
                                       int32_t target);
  Result<cluster::Assignment> cancel(const protocol::Uuid& topic_id, int32_t partition);
  // ListPartitionReassignments: partitions MOVING or RELEASED, by (topic id hex, partition).
  std::map<cluster::PartitionKey, cluster::Assignment> ongoing() const;

 private:
  Ownership(Broker* b, cluster::Member* m, Options o);
  Status place(const Topic& t, int32_t first, int32_t count);
  void on_assignment(const cluster::PartitionKey& k);
  void on_topic(std::string name);
  void run();
  void reconcile(const cluster::PartitionKey& k);
  void controller_duties();
  void reconcile_group_shard(int32_t shard);
  void failover_duties();
  std::set<int32_t> live_ids() const;

  Broker* b_;
  cluster::Member* member_;
  Options opts_;
  std::function<void(bool)> controller_hook_;
  std::function<Status(int32_t)> load_group_shard_;
  std::function<void(int32_t)> unload_group_shard_;
  std::optional<bool> was_controller_;
  // Driver thread only.
  std::set<int32_t> seen_live_;
  std::set<int32_t> loaded_shards_;  // group coordinator shards loaded here (driver thread)
  int64_t controller_since_ms_ = -1;
  std::map<cluster::PartitionKey, int64_t> missing_since_;  // partitions seen without a record
  // Partitions this broker released or took over: the store revision the view must reach
  // before reconcile acts on them again.
  std::map<cluster::PartitionKey, int64_t> settle_;
  std::unique_ptr<cluster::AssignmentTable> table_;
  int64_t topic_watch_ = 0;

  std::mutex mu_;
  std::condition_variable cv_;
  std::set<cluster::PartitionKey> pending_;
  std::set<std::string> topics_pending_;
  bool all_pending_ = false;
  bool stop_ = false;
  std::thread thread_;
};

// Adds `e` to a response's node_endpoints (Produce, Fetch: the generated types differ) once.
template <typename NodeEndpoints>
void add_node_endpoint(NodeEndpoints& out, const Ownership::Endpoint& e) {
  for (const auto& ne : out)
    if (ne.node_id == e.id) return;
  auto& ne = out.emplace_back();
  ne.node_id = e.id;
  ne.host = e.host;
  ne.port = e.port;
  if (!e.rack.empty()) ne.rack = e.rack;
}

}  // namespace shale::broker
