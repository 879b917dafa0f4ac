// TopicManager: the topics of the cluster and their partitions. A topic is persisted as one
// MetaStore key `<ns>/topics/<name>` holding its id (UUID v4, as Kafka 3+ assigns), its config
// overrides and the data stream id of each partition; it therefore survives restarts. At
// load()/create() each partition's stream is opened on this node (Partition::open).
//
// Threads: lookups (find, partition, list) are thread-safe and non-blocking (a shared_mutex over
// a map of immutable Topic snapshots; a change replaces the snapshot). create/remove/
// add_partitions/set_configs/load block on the MetaStore and Engine: call them on a worker
// thread. They are serialised by admin_mu_.
// Invariants: a Topic snapshot never changes after publication; Partition objects are shared
// between snapshots of the same topic; names are unique and valid (validate_topic_name).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "broker/partition.h"
#include "broker/topic_config.h"
#include "protocol/wire.h"

namespace shale::meta {
class MetaStore;
}

namespace shale::broker {

struct Topic {
  std::string name;
  protocol::Uuid id;
  std::map<std::string, std::string> configs;  // overrides only
  TopicSettings settings;
  std::vector<std::shared_ptr<Partition>> partitions;
};
using TopicPtr = std::shared_ptr<const Topic>;

// Kafka's rules: 1..249 chars of [a-zA-Z0-9._-], not "." or "..".
Status validate_topic_name(std::string_view name);
// Kafka treats '.' and '_' as the same in metric names, so it refuses names that collide.
std::string topic_collision_key(std::string_view name);
// A random UUID v4 that Kafka would accept as a topic id (not zero, not the metadata topic id,
// base64 form not starting with '-').
protocol::Uuid random_topic_id();
// The topic id as 32 lower-case hex digits (MetaStore keys).
std::string topic_id_hex(const protocol::Uuid& id);
bool parse_topic_id_hex(std::string_view s, protocol::Uuid& out);

class TopicManager {
 public:
  TopicManager(storage::Engine* engine, meta::MetaStore* meta, std::string ns,
               BrokerTopicDefaults defaults);

  // Blocking: reads every topic and opens its partitions (in cluster mode: opens none; the
  // ownership driver opens the ones this broker owns).
  Status load();

  // Cluster mode (call before load()): partitions are not opened by load/create/add_partitions;
  // `placed` is called (blocking, under the admin lock) after a topic's new partitions
  // [first, first + count) were persisted, to assign them owners; `removed` after a topic was
  // deleted.
  using PlacedHook = std::function<Status(const Topic&, int32_t first, int32_t count)>;
  using RemovedHook = std::function<void(const Topic&)>;
  void set_cluster_mode(PlacedHook placed, RemovedHook removed);
  bool cluster_mode() const { return static_cast<bool>(placed_); }

  // Blocking: re-reads topic `name` from the MetaStore (another broker created, changed or
  // deleted it) and publishes what changed: new partitions are added unopened, a deleted topic
  // is unpublished and its partitions marked deleted. Returns the topic as published now (null
  // when it does not exist).
  Result<TopicPtr> refresh(const std::string& name);
  // Publishes `p` as partition p->index() of the topic with id `topic_id` (a new Partition
  // object for a new owner period). False when the topic is gone or has no such partition.
  bool replace_partition(const protocol::Uuid& topic_id, std::shared_ptr<Partition> p);
  // The prefix of topic records (`<ns>/topics/`) and the topic name in one of its keys.
  std::string topics_prefix() const { return ns_ + "/topics/"; }

  TopicPtr find(std::string_view name) const;
  TopicPtr find(const protocol::Uuid& id) const;
  std::vector<TopicPtr> list() const;
  std::shared_ptr<Partition> partition(std::string_view topic, int32_t index) const;
  // The broker-level topic defaults, including the dynamic broker configs (a copy: they can
  // change at run time).
  BrokerTopicDefaults defaults() const;

  // Blocking: replaces one layer of dynamic broker configs (per_broker: this broker's, else
  // the cluster-wide defaults), persists it at `<ns>/broker-configs/<node_key or "default">`
  // and re-resolves the settings of every topic. Values must be validated already.
  Status set_dynamic_configs(bool per_broker, const std::string& node_key,
                             std::map<std::string, std::string> configs);
  // Blocking: reads both layers (call before load()).
  Status load_dynamic_configs(const std::string& node_key);

  // Blocking. Errors: kAlreadyExists, kInvalidArgument (name, collision), storage errors.
  Result<TopicPtr> create(const std::string& name, int32_t partitions,
                          const std::map<std::string, std::string>& configs);
  // Blocking: removes the topic record, then deletes the partitions' streams.
  Status remove(const std::string& name);
  // Blocking: grows the topic to `total` partitions.
  Result<TopicPtr> add_partitions(const std::string& name, int32_t total);
  // Blocking: replaces the topic's config overrides.
  Result<TopicPtr> set_configs(const std::string& name,
                               const std::map<std::string, std::string>& configs);

 private:
  std::string key_for(std::string_view name) const;
  Status persist(const Topic& t, int64_t expected_mod_revision);
  void publish(TopicPtr t);

  storage::Engine* engine_;
  meta::MetaStore* meta_;
  const std::string ns_;
  PlacedHook placed_;
  RemovedHook removed_;
  BrokerTopicDefaults defaults_;  // guarded by mu_ for readers; changed under admin_mu_ too

  std::mutex admin_mu_;
  mutable std::shared_mutex mu_;
  std::map<std::string, TopicPtr, std::less<>> by_name_;
  std::map<std::string, int64_t> mod_revisions_;  // guarded by admin_mu_
};

}  // namespace shale::broker
