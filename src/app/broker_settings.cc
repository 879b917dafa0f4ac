#include "app/broker_settings.h"

#include <filesystem>

namespace shale::app {

void apply_broker_settings(const Config& cfg, broker::BrokerConfig& bc) {
  std::error_code ec;
  auto dir = std::filesystem::absolute(cfg.get_string("data.dir"), ec);
  bc.log_dir = ec ? cfg.get_string("data.dir") : dir.lexically_normal().string();
  while (bc.log_dir.size() > 1 && bc.log_dir.back() == '/') bc.log_dir.pop_back();
  bc.retention_check_interval_ms = cfg.get_long("log.retention.check.interval.ms");
  bc.snapshot_interval_batches = cfg.get_long("shale.partition.snapshot.interval.batches");
  bc.snapshot_interval_ms = cfg.get_long("shale.partition.snapshot.interval.ms");
  bc.txn_max_timeout_ms = cfg.get_int("transaction.max.timeout.ms");
  bc.txn_abort_check_interval_ms =
      cfg.get_long("transaction.abort.timed.out.transaction.cleanup.interval.ms");
  auto& d = bc.topic_defaults;
  d.timestamp_before_max_ms = cfg.get_long("log.message.timestamp.before.max.ms");
  d.timestamp_after_max_ms = cfg.get_long("log.message.timestamp.after.max.ms");
  for (const char* k :
       {"log.message.timestamp.before.max.ms", "log.message.timestamp.after.max.ms"}) {
    if (cfg.is_set(k)) d.static_overrides[k] = std::to_string(cfg.get_long(k));
  }
  if (cfg.is_set("log.retention.check.interval.ms")) {
    d.static_overrides["log.retention.check.interval.ms"] =
        std::to_string(bc.retention_check_interval_ms);
  }
  if (cfg.is_set("log.message.timestamp.type")) {
    d.static_overrides["log.message.timestamp.type"] = cfg.get_string("log.message.timestamp.type");
  }
}

void apply_group_settings(const Config& cfg, group::CoordinatorConfig& cc) {
  cc.initial_rebalance_delay_ms = cfg.get_int("group.initial.rebalance.delay.ms");
  cc.min_session_timeout_ms = cfg.get_int("group.min.session.timeout.ms");
  cc.max_session_timeout_ms = cfg.get_int("group.max.session.timeout.ms");
  cc.max_size = cfg.get_int("group.max.size");
  cc.offsets_retention_ms = int64_t{cfg.get_int("offsets.retention.minutes")} * 60 * 1000;
  cc.offsets_retention_check_interval_ms = cfg.get_long("offsets.retention.check.interval.ms");
  cc.offset_metadata_max_bytes = cfg.get_int("offset.metadata.max.bytes");
}

}  // namespace shale::app
