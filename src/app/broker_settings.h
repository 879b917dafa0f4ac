// Maps the configuration table (config.h) onto the broker's and the group coordinator's
// settings structs for the keys `shale serve` does not map itself: the retention check
// interval, timestamp limits, partition snapshots, the log directory, and the group.* /
// offsets.* keys. Keys the operator set explicitly are recorded as STATIC_BROKER_CONFIG
// synonyms for DescribeConfigs.
//
// Threads: pure functions over an immutable Config.
#pragma once

#include "app/config.h"
#include "broker/broker.h"
#include "group/coordinator.h"

namespace shale::app {

void apply_broker_settings(const Config& cfg, broker::BrokerConfig& bc);
void apply_group_settings(const Config& cfg, group::CoordinatorConfig& cc);

}  // namespace shale::app
