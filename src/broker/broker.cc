#include "broker/broker.h"

#include <algorithm>
#include <chrono>
#include <future>
#include <memory>

#include <spdlog/spdlog.h>

namespace shale::broker {

Broker::Broker(BrokerConfig cfg, storage::Engine* engine, meta::MetaStore* meta)
    : cfg_(std::move(cfg)),
      engine_(engine),
      meta_(meta),
      topics_(engine, meta, cfg_.ns, cfg_.topic_defaults),
      producer_ids_(meta, cfg_.ns),
      sessions_(cfg_.max_fetch_sessions),
      workers_(static_cast<size_t>(cfg_.worker_threads > 0 ? cfg_.worker_threads : 1)) {
  TxnCoordinatorConfig tc;
  tc.ns = cfg_.ns;
  tc.max_timeout_ms = cfg_.txn_max_timeout_ms;
  tc.abort_check_interval_ms = cfg_.txn_abort_check_interval_ms;
  TxnHooks hooks;
  hooks.write_marker = [this](const TxnTopicPartition& tp, int64_t pid, int16_t epoch, bool commit,
                              int32_t coordinator_epoch) -> Status {
    auto part = topics_.partition(tp.topic, tp.partition);
    if (!part || part->deleted()) return ok_status();  // nothing left to mark
    auto p = std::make_shared<std::promise<Status>>();
    auto f = p->get_future();
    part->append_marker(pid, epoch, commit, coordinator_epoch,
                        [p](Status st) { p->set_value(std::move(st)); });
    return f.get();
  };
  hooks.partition_exists = [this](const TxnTopicPartition& tp) {
    return topics_.partition(tp.topic, tp.partition) != nullptr;
  };
  hooks.allocate_producer_id = [this] { return producer_ids_.allocate(); };
  txn_ = std::make_unique<TxnCoordinator>(std::move(tc), meta_, std::move(hooks));
}

Broker::~Broker() { stop(); }

Status Broker::start() {
  SHALE_TRY(topics_.load_dynamic_configs(std::to_string(cfg_.node_id)));
  SHALE_TRY(topics_.load());
  if (cfg_.retention_check_interval_ms > 0 || cfg_.snapshot_interval_ms > 0 ||
      cfg_.snapshot_interval_batches > 0) {
    retention_thread_ = std::thread([this] { maintenance_loop(); });
  }
  return ok_status();
}

namespace {

int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int64_t steady_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

void Broker::maintenance_loop() {
  // Snapshot triggers are checked at least once a second (the batch-count one needs polling).
  int64_t tick = 1000;
  if (cfg_.retention_check_interval_ms > 0) tick = std::min(tick, cfg_.retention_check_interval_ms);
  if (cfg_.snapshot_interval_ms > 0) tick = std::min(tick, cfg_.snapshot_interval_ms);
  int64_t next_retention = steady_now_ms() + cfg_.retention_check_interval_ms;
  std::unique_lock lock(retention_mu_);
  while (!retention_cv_.wait_for(lock, std::chrono::milliseconds(tick),
                                 [this] { return retention_stop_; })) {
    lock.unlock();
    if (cfg_.retention_check_interval_ms > 0 && steady_now_ms() >= next_retention) {
      enforce_retention(wall_ms());
      next_retention = steady_now_ms() + cfg_.retention_check_interval_ms;
    }
    write_snapshots(false);
    lock.lock();
  }
}

int Broker::enforce_retention(int64_t now_ms) {
  int trimmed = 0;
  for (const auto& t : topics_.list()) {
    const int64_t retention_ms = t->settings.retention_ms;
    const int64_t retention_bytes = t->settings.retention_bytes;
    if (retention_ms < 0 && retention_bytes < 0) continue;
    for (const auto& p : t->partitions) {
      if (p->deleted() || !p->serving()) continue;
      std::optional<int64_t> off;
      if (retention_ms >= 0) off = p->retention_offset(now_ms - retention_ms);
      if (retention_bytes >= 0) {
        auto by_size = p->retention_bytes_offset(retention_bytes);
        if (by_size && (!off || *by_size > *off)) off = by_size;
      }
      if (!off || *off <= p->log_start_offset()) continue;
      if (auto st = p->stream()->trim(*off); !st.ok()) {
        spdlog::warn("retention of {}-{}: trim to {} failed: {}", t->name, p->index(), *off,
                     st.error().to_string());
        continue;
      }
      ++trimmed;
    }
  }
  return trimmed;
}

int Broker::write_snapshots(bool force) {
  int written = 0;
  const int64_t now = steady_now_ms();
  for (const auto& t : topics_.list()) {
    for (const auto& p : t->partitions) {
      if (p->deleted() || !p->serving()) continue;
      const int64_t pending = p->batches_since_snapshot();
      if (pending == 0) continue;
      const bool due =
          force ||
          (cfg_.snapshot_interval_batches > 0 && pending >= cfg_.snapshot_interval_batches) ||
          (cfg_.snapshot_interval_ms > 0 &&
           now - p->snapshot_time_ms() >= cfg_.snapshot_interval_ms);
      if (!due) continue;
      auto r = p->write_snapshot();
      if (!r.ok()) {
        // Fenced or shut down streams fail here; the next open replays a longer tail.
        spdlog::warn("snapshot of {}-{} failed: {}", t->name, p->index(), r.error().to_string());
        continue;
      }
      ++written;
    }
  }
  return written;
}

void Broker::stop() {
  if (stopped_) return;
  stopped_ = true;
  {
    std::lock_guard lock(retention_mu_);
    retention_stop_ = true;
  }
  retention_cv_.notify_all();
  if (retention_thread_.joinable()) retention_thread_.join();
  txn_->stop();
  workers_.join();
  // After the network has stopped no new batches arrive: snapshot what is durable so the next
  // start replays (almost) nothing.
  write_snapshots(true);
}

}  // namespace shale::broker
