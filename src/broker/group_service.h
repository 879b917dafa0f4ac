// GroupService: everything `shale serve` needs for consumer groups in one object — the
// GroupStore over the broker's MetaStore, the group::Coordinator, the GroupTicker that drives
// its timers, and the GroupHandlers the dispatcher calls. Group state and committed offsets
// live in the MetaStore, so start() after a restart brings every group and offset back.
//
// Use: construct, start() (blocking: loads every stored group), register_group_handlers(
// dispatcher, service.handlers()), serve; at shutdown stop the network server, then stop().
// Threads: start()/stop() from the main thread, never from an event loop. After start() the
// handlers are used concurrently from every shard (see group_handlers.h).
// Lifetime: the MetaStore and the worker pool must outlive the service.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <asio/thread_pool.hpp>

#include "base/result.h"
#include "broker/group_handlers.h"
#include "broker/group_ticker.h"
#include "group/coordinator.h"
#include "group/meta_group_store.h"
#include "meta/meta_store.h"

namespace shale::broker {

struct GroupServiceConfig {
  // Coordinator settings, including what FindCoordinator answers (node id, advertised
  // host/port of this broker).
  group::CoordinatorConfig coordinator;
  // MetaStore key prefix of group records and offsets; must end with '/'.
  std::string meta_root = "groups/";
  // Longest sleep of the timer thread (timers fire at most this late when idle).
  int64_t tick_interval_ms = 100;
};

class GroupService {
 public:
  GroupService(GroupServiceConfig cfg, meta::MetaStore* meta, asio::thread_pool& workers,
               PartitionExists partition_exists);
  ~GroupService();
  GroupService(const GroupService&) = delete;
  GroupService& operator=(const GroupService&) = delete;

  // Loads every stored group and offset (blocking) and starts the timer thread.
  Status start();
  // Stops the timer thread and unloads the coordinator: parked JoinGroup/SyncGroup requests
  // are answered NOT_COORDINATOR. Idempotent.
  void stop();

  GroupHandlers& handlers() { return handlers_; }
  group::Coordinator& coordinator() { return coordinator_; }

 private:
  GroupServiceConfig cfg_;
  group::MetaGroupStore store_;
  group::Coordinator coordinator_;
  GroupTicker ticker_;
  GroupHandlers handlers_;
  bool started_ = false;
};

}  // namespace shale::broker
