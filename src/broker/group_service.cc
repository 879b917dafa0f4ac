#include "broker/group_service.h"

#include <utility>

#include <spdlog/spdlog.h>

namespace shale::broker {

GroupService::GroupService(GroupServiceConfig cfg, meta::MetaStore* meta,
                           asio::thread_pool& workers, PartitionExists partition_exists)
    : cfg_(std::move(cfg)),
      store_(meta, cfg_.meta_root),
      coordinator_(cfg_.coordinator, &store_),
      ticker_(coordinator_, cfg_.tick_interval_ms),
      handlers_(coordinator_, workers, std::move(partition_exists), [this] { ticker_.poke(); }) {}

GroupService::~GroupService() { stop(); }

Status GroupService::start() {
  // Sharded (cluster mode): shards are loaded one by one as this broker is given them.
  if (cfg_.coordinator.shards <= 0) SHALE_TRY(coordinator_.load());
  ticker_.start();
  started_ = true;
  if (cfg_.coordinator.shards <= 0)
    spdlog::info("group coordinator loaded (node {}, {}:{})", cfg_.coordinator.node_id,
                 cfg_.coordinator.host, cfg_.coordinator.port);
  return ok_status();
}

void GroupService::stop() {
  if (!started_) return;
  started_ = false;
  ticker_.stop();
  coordinator_.unload();
  for (int32_t s : coordinator_.loaded_shards()) coordinator_.unload_shard(s);
}

}  // namespace shale::broker
