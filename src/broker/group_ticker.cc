#include "broker/group_ticker.h"

#include <algorithm>
#include <chrono>

#include "base/clock.h"

namespace shale::broker {

GroupTicker::GroupTicker(group::Coordinator& coordinator, int64_t max_interval_ms, Clock clock)
    : coordinator_(coordinator),
      max_interval_ms_(std::max<int64_t>(1, max_interval_ms)),
      clock_(clock ? std::move(clock) : Clock(&shale::clock::wall_ms)) {}

GroupTicker::~GroupTicker() { stop(); }

void GroupTicker::start() {
  std::lock_guard lock(mu_);
  if (thread_.joinable() || stopping_) return;
  thread_ = std::thread([this] { run(); });
}

void GroupTicker::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

void GroupTicker::poke() {
  {
    std::lock_guard lock(mu_);
    poked_ = true;
  }
  cv_.notify_all();
}

uint64_t GroupTicker::ticks() const {
  std::lock_guard lock(mu_);
  return ticks_;
}

void GroupTicker::run() {
  for (;;) {
    // The deadline is read outside our mutex: the coordinator takes its own lock.
    const int64_t now = clock_();
    int64_t wait_ms = max_interval_ms_;
    if (auto next = coordinator_.next_deadline_ms()) {
      wait_ms = std::clamp<int64_t>(*next - now, 0, max_interval_ms_);
    }
    const int64_t target = now + wait_ms;
    {
      std::unique_lock lock(mu_);
      if (wait_ms > 0) {
        cv_.wait_for(lock, std::chrono::milliseconds(wait_ms),
                     [this] { return stopping_ || poked_; });
      }
      if (stopping_) return;
      poked_ = false;
    }
    // Woken early by a poke: re-read the deadline, a call may have scheduled an earlier one.
    if (clock_() < target) continue;
    coordinator_.tick();
    std::lock_guard lock(mu_);
    ++ticks_;
  }
}

}  // namespace shale::broker
