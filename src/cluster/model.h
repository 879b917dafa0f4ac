// Cluster model: the keys cluster mode keeps in the MetaStore and their JSON values.
//
//   <ns>/brokers/<id>             BrokerInfo, attached to the broker's lease (gone when it lapses)
//   <ns>/node_epoch/<id>          the last node epoch given to broker <id> (permanent counter)
//   <ns>/controller               {"id": <broker>}, attached to the controller's lease; its
//                                 create revision is the controller's fencing token
//   <ns>/assign/<topic_id>/<p>    Assignment (owner, leader epoch, state), permanent
//   <ns>/identity                 {"cluster_id", "object_store"} of the first broker (identity.h)
//   <ns>/wal/<id>                 the WAL URI broker <id> registered (permanent)
//   <ns>/failover/<id>            {"target", "done"}: dead broker <id>'s WAL being recovered
//
// Ids: broker ids are int32 (Kafka's node ids); topic ids are the caller's string form of the
// topic's UUID. Partition numbers in keys are decimal, so a prefix read returns them in key
// order, not numeric order (callers sort when they care).
//
// Threads: plain values and pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"

namespace shale::cluster {

class Keys {
 public:
  explicit Keys(std::string ns) : ns_(std::move(ns)) {}
  const std::string& ns() const { return ns_; }
  std::string brokers_prefix() const { return ns_ + "/brokers/"; }
  std::string broker(int32_t id) const { return brokers_prefix() + std::to_string(id); }
  std::string node_epoch(int32_t id) const { return ns_ + "/node_epoch/" + std::to_string(id); }
  std::string controller() const { return ns_ + "/controller"; }
  std::string identity() const { return ns_ + "/identity"; }
  // <ns>/failover/<id>: a dead broker's WAL being recovered (see broker/ownership.h).
  std::string failover_prefix() const { return ns_ + "/failover/"; }
  std::string failover(int32_t id) const { return failover_prefix() + std::to_string(id); }
  // <ns>/wal/<id>: the WAL URI broker <id> registered last (permanent: failover needs it after
  // the broker's lease, and its brokers/ record, are gone).
  std::string wal(int32_t id) const { return ns_ + "/wal/" + std::to_string(id); }
  std::string assign_prefix() const { return ns_ + "/assign/"; }
  std::string assign_topic_prefix(std::string_view topic_id) const {
    return assign_prefix() + std::string(topic_id) + "/";
  }
  std::string assign(std::string_view topic_id, int32_t partition) const {
    return assign_topic_prefix(topic_id) + std::to_string(partition);
  }
  // Splits an assign key into topic id and partition; nullopt when it is not one.
  std::optional<std::pair<std::string, int32_t>> parse_assign(std::string_view key) const;
  // The broker id in a brokers/ key; nullopt when it is not one.
  std::optional<int32_t> parse_broker(std::string_view key) const;

 private:
  std::string ns_;
};

struct BrokerInfo {
  int32_t id = -1;
  std::map<std::string, std::string> listeners;  // listener name → "host:port"
  std::string rack;
  std::string wal_uri;
  int64_t node_epoch = 0;     // rises each time the broker registers
  int64_t start_time_ms = 0;  // wall clock

  bool operator==(const BrokerInfo&) const = default;
};
std::string to_json(const BrokerInfo& b);
Result<BrokerInfo> broker_from_json(std::string_view json);

struct Assignment {
  // kOwned: the owner serves. kMoving: a move to `target` was asked; the owner still serves
  // until it has drained and closed the stream. kReleased: the owner has closed the stream and
  // serves nothing; only `target` may take it over (moves.h).
  enum class State { kOwned, kMoving, kReleased };
  int32_t owner = -1;
  int32_t leader_epoch = 0;  // rises with every change of owner
  State state = State::kOwned;
  int32_t target = -1;   // kMoving, kReleased: the broker it moves to
  int64_t since_ms = 0;  // wall clock of the last change

  bool operator==(const Assignment&) const = default;
};
std::string to_json(const Assignment& a);
Result<Assignment> assignment_from_json(std::string_view json);

}  // namespace shale::cluster
