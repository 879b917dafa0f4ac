#include "meta/lease_keeper.h"

#include <algorithm>
#include <chrono>

#include "base/clock.h"
#include "base/log.h"

namespace shale::meta {

Result<std::unique_ptr<LeaseKeeper>> LeaseKeeper::start(MetaStore* store, int64_t ttl_ms,
                                                        std::function<void()> on_expired,
                                                        bool regrant) {
  int64_t sent = clock::mono_ms();
  auto id = store->grant_lease(ttl_ms);
  if (!id.ok()) return std::move(id).error();
  std::unique_ptr<LeaseKeeper> k(
      new LeaseKeeper(store, *id, ttl_ms, sent + ttl_ms, std::move(on_expired), regrant));
  k->thread_ = std::thread([p = k.get()] { p->run(); });
  return k;
}

LeaseKeeper::LeaseKeeper(MetaStore* store, int64_t lease, int64_t ttl_ms, int64_t valid_until,
                         std::function<void()> on_expired, bool regrant)
    : store_(store),
      lease_(lease),
      ttl_ms_(ttl_ms),
      valid_until_(valid_until),
      on_expired_(std::move(on_expired)),
      regrant_(regrant) {}

LeaseKeeper::~LeaseKeeper() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool LeaseKeeper::valid() const { return !expired_ && clock::mono_ms() < valid_until_.load(); }

Status LeaseKeeper::revoke() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable() && std::this_thread::get_id() != thread_.get_id()) thread_.join();
  valid_until_ = 0;
  expired_ = true;
  return store_->revoke_lease(lease_);
}

void LeaseKeeper::run() {
  const int64_t period = std::max<int64_t>(ttl_ms_ / 3, 10);
  int64_t next = clock::mono_ms() + period;
  bool lapsed_reported = false;
  auto report_lapse = [&] {
    if (!lapsed_reported) {
      lapsed_reported = true;
      if (on_expired_) on_expired_();
    }
  };
  std::unique_lock lk(mu_);
  while (!stop_) {
    const int64_t now = clock::mono_ms();
    if (now >= valid_until_.load() && !lapsed_reported) {
      // Reported when it happens, not at the next failed renewal.
      lk.unlock();
      report_lapse();
      lk.lock();
      continue;
    }
    int64_t wake = lapsed_reported ? next : std::min(next, valid_until_.load());
    if (wake > now) {
      cv_.wait_for(lk, std::chrono::milliseconds(wake - now));
      continue;
    }
    lk.unlock();
    int64_t sent = clock::mono_ms();
    auto st = store_->keep_alive(lease_.load());
    if (st.ok()) {
      valid_until_ = sent + ttl_ms_;
      lapsed_reported = false;
      next = sent + period;
    } else if (st.error().code == Errc::kNotFound) {
      SPDLOG_WARN("meta: lease {} expired", lease_.load());
      valid_until_ = 0;
      report_lapse();
      if (!regrant_) {
        expired_ = true;
        lk.lock();
        return;
      }
      sent = clock::mono_ms();
      auto id = store_->grant_lease(ttl_ms_);
      if (id.ok()) {
        SPDLOG_WARN("meta: granted lease {} in place of {}", *id, lease_.load());
        lease_ = *id;
        valid_until_ = sent + ttl_ms_;
        lapsed_reported = false;
        next = sent + period;
      } else {
        next = clock::mono_ms() + std::max<int64_t>(period / 4, 10);
      }
    } else {
      SPDLOG_WARN("meta: renewing lease {} failed: {}", lease_.load(), st.error().to_string());
      // Retry soon, but not in a tight loop.
      next = clock::mono_ms() + std::max<int64_t>(period / 4, 10);
    }
    if (clock::mono_ms() >= valid_until_.load()) report_lapse();
    lk.lock();
  }
}

}  // namespace shale::meta
