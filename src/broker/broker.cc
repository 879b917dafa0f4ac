#include "broker/broker.h"

#include <chrono>

#include <spdlog/spdlog.h>

namespace shale::broker {

Broker::Broker(BrokerConfig cfg, storage::Engine* engine, meta::MetaStore* meta)
    : cfg_(std::move(cfg)),
      engine_(engine),
      meta_(meta),
      topics_(engine, meta, cfg_.ns, cfg_.topic_defaults),
      producer_ids_(meta, cfg_.ns),
      sessions_(cfg_.max_fetch_sessions),
      workers_(static_cast<size_t>(cfg_.worker_threads > 0 ? cfg_.worker_threads : 1)) {}

Broker::~Broker() { stop(); }

Status Broker::start() {
  SHALE_TRY(topics_.load());
  if (cfg_.retention_check_interval_ms > 0) {
    retention_thread_ = std::thread([this] {
      std::unique_lock lock(retention_mu_);
      while (!retention_cv_.wait_for(lock,
                                     std::chrono::milliseconds(cfg_.retention_check_interval_ms),
                                     [this] { return retention_stop_; })) {
        lock.unlock();
        enforce_retention(std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count());
        lock.lock();
      }
    });
  }
  return ok_status();
}

int Broker::enforce_retention(int64_t now_ms) {
  int trimmed = 0;
  for (const auto& t : topics_.list()) {
    if (t->settings.retention_ms < 0) continue;
    const int64_t cutoff = now_ms - t->settings.retention_ms;
    for (const auto& p : t->partitions) {
      if (p->deleted()) continue;
      auto off = p->retention_offset(cutoff);
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

void Broker::stop() {
  if (stopped_) return;
  stopped_ = true;
  {
    std::lock_guard lock(retention_mu_);
    retention_stop_ = true;
  }
  retention_cv_.notify_all();
  if (retention_thread_.joinable()) retention_thread_.join();
  workers_.join();
}

}  // namespace shale::broker
