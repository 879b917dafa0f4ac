// Broker: the context every Kafka API handler works on — configuration, node and cluster id,
// the storage Engine, the MetaStore, the TopicManager (topics, partitions, producer state),
// producer-id allocation, fetch sessions and the worker pool for blocking calls.
//
// Threads: the Broker is shared by all shards. Handlers run on shards (asio coroutines) and
// must never block there: blocking Engine/MetaStore calls go through blocking(), which runs
// them on the worker pool and resumes the coroutine on its shard. Engine callbacks run on
// engine threads and are turned into shard resumptions by await_callback (async.h).
// Lifetime: start() (blocking) before serving; stop() after the network server has stopped
// and before the Engine shuts down. The Engine and MetaStore must outlive the Broker.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <asio/awaitable.hpp>
#include <asio/thread_pool.hpp>

#include "security/sasl.h"

#include "broker/async.h"
#include "broker/fetch_session.h"
#include "broker/producer_ids.h"
#include "broker/topic_config.h"
#include "broker/topic_manager.h"
#include "broker/txn_coordinator.h"

namespace shale::broker {

class Ownership;

struct AdvertisedEndpoint {
  std::string listener = "PLAINTEXT";
  std::string host = "127.0.0.1";
  int32_t port = 9092;
};

struct BrokerConfig {
  int32_t node_id = 0;
  std::string cluster_id;
  std::string ns = "shale";  // MetaStore key namespace
  std::vector<AdvertisedEndpoint> endpoints{AdvertisedEndpoint{}};
  std::string rack;
  int32_t num_partitions = 1;  // num.partitions
  int16_t default_replication_factor =
      1;                           // default.replication.factor (accepted; storage is shared)
  bool auto_create_topics = true;  // auto.create.topics.enable
  BrokerTopicDefaults topic_defaults;
  int worker_threads = 4;
  int64_t retention_check_interval_ms = 300000;  // log.retention.check.interval.ms; <= 0: off
  size_t max_fetch_sessions = 1000;              // max.incremental.fetch.session.cache.slots
  // The one log directory DescribeLogDirs reports (data.dir); its filesystem gives the
  // total/usable bytes. Empty: DescribeLogDirs answers with no directory.
  std::string log_dir;
  // Side-data snapshots (partition_snapshot.h): a partition with new batches is snapshotted
  // when this many batches arrived since its last one, or this long after it; <= 0 disables
  // that trigger. Every partition is also snapshotted by stop().
  int64_t snapshot_interval_batches = 10000;  // shale.partition.snapshot.interval.batches
  int64_t snapshot_interval_ms = 60000;       // shale.partition.snapshot.interval.ms
  int32_t txn_max_timeout_ms = 900000;        // transaction.max.timeout.ms
  // transaction.abort.timed.out.transaction.cleanup.interval.ms
  int64_t txn_abort_check_interval_ms = 10000;
  // SASL mechanisms and PLAIN users (security/sasl.h); null = the defaults, no PLAIN users.
  std::shared_ptr<const security::SaslSettings> sasl;
};

class Broker {
 public:
  Broker(BrokerConfig cfg, storage::Engine* engine, meta::MetaStore* meta);
  ~Broker();
  Broker(const Broker&) = delete;
  Broker& operator=(const Broker&) = delete;

  // Blocking: loads the topics and opens their partitions.
  Status start();
  // Waits for queued blocking work and joins the worker pool. Idempotent.
  void stop();

  const BrokerConfig& config() const { return cfg_; }
  // Replaces the advertised endpoints once the listeners are bound (a configured port 0
  // becomes the real port). Call before the server starts; not thread-safe.
  void set_endpoints(std::vector<AdvertisedEndpoint> eps) { cfg_.endpoints = std::move(eps); }
  int32_t node_id() const { return cfg_.node_id; }
  storage::Engine& engine() { return *engine_; }
  meta::MetaStore& meta() { return *meta_; }
  TopicManager& topics() { return topics_; }
  ProducerIdManager& producer_ids() { return producer_ids_; }
  FetchSessionCache& fetch_sessions() { return sessions_; }
  // The transaction coordinator (txn_coordinator.h). Not started by start(): `shale serve`
  // starts it once the group coordinator exists (recovery may commit offsets).
  TxnCoordinator& txn() { return *txn_; }
  asio::thread_pool& workers() { return workers_; }

  // The acknowledgement gate: produce answers NOT_LEADER_OR_FOLLOWER (retriable) instead of
  // acknowledging while it returns false. `shale serve` on etcd sets it to "this broker's
  // metadata lease is surely still valid" (meta::LeaseKeeper), so a broker cut off from etcd
  // stops acknowledging before another broker may take its partitions over. Unset: always
  // acknowledge. Set before the server starts; the function must be thread-safe and cheap.
  void set_ack_gate(std::function<bool()> gate) {
    if (!gate) {
      ack_token_ = {};
      return;
    }
    ack_token_ = [g = std::move(gate)]() -> int64_t { return g() ? 1 : 0; };
  }
  // The same gate naming the lease: 0 while acknowledging is not allowed, else the lease id.
  // Produce acknowledges an append only under the lease it was made under: appends made before
  // a lapse are acknowledged once that lease is renewed, never after it was replaced.
  void set_ack_token(std::function<int64_t()> token) { ack_token_ = std::move(token); }
  int64_t ack_token() const { return ack_token_ ? ack_token_() : 1; }
  bool may_acknowledge() const { return ack_token() != 0; }

  // Cluster mode: partition ownership (ownership.h); null on one node, which owns everything.
  // Set before the server starts; the Ownership must outlive the server.
  void set_ownership(Ownership* o) { ownership_ = o; }
  Ownership* ownership() const { return ownership_; }

  // For the group APIs (OffsetCommit): does this topic-partition exist?
  bool partition_exists(std::string_view topic, int32_t partition) const {
    return topics_.partition(topic, partition) != nullptr;
  }

  // Applies retention.ms and retention.bytes to every partition now (the maintenance thread
  // calls it every retention_check_interval_ms). Blocking (Stream::trim). Returns the number of
  // partitions trimmed.
  int enforce_retention(int64_t now_ms);
  // Writes the side-data snapshot of every partition that is due (force: every partition with
  // batches since its last one). Blocking (Stream::put_meta). Returns the number written.
  int write_snapshots(bool force);

  // Runs fn() on the worker pool (it may block) and resumes the caller on its executor.
  template <typename F>
  asio::awaitable<std::invoke_result_t<F>> blocking(F fn) {
    return run_blocking(workers_, std::move(fn));
  }

 private:
  BrokerConfig cfg_;
  storage::Engine* engine_;
  meta::MetaStore* meta_;
  TopicManager topics_;
  ProducerIdManager producer_ids_;
  FetchSessionCache sessions_;
  std::unique_ptr<TxnCoordinator> txn_;
  asio::thread_pool workers_;
  bool stopped_ = false;
  std::function<int64_t()> ack_token_;
  Ownership* ownership_ = nullptr;
  // Maintenance thread (retention, snapshots): wakes every tick, or at once on stop().
  void maintenance_loop();
  std::mutex retention_mu_;
  std::condition_variable retention_cv_;
  bool retention_stop_ = false;
  std::thread retention_thread_;
};

}  // namespace shale::broker
