#include "perf/rate_limiter.h"

#include <time.h>

#include <cerrno>
#include <cmath>

namespace shale::perf {

UniformRateLimiter::UniformRateLimiter(double rate_per_sec)
    : rate_(rate_per_sec), interval_ns_(std::llround(1e9 / rate_per_sec)) {
  if (interval_ns_ <= 0) interval_ns_ = 1;
}

int64_t UniformRateLimiter::acquire(int64_t now_ns) {
  int64_t start = start_.load(std::memory_order_acquire);
  if (start == INT64_MIN) {
    // Lazy start at the first acquire(); only one caller wins the race.
    int64_t expected = INT64_MIN;
    if (start_.compare_exchange_strong(expected, now_ns)) {
      start = now_ns;
    } else {
      start = expected;
    }
  }
  int64_t k = index_.fetch_add(1, std::memory_order_relaxed);
  int64_t intended = start + k * interval_ns_;
  if (now_ns > intended + kMaxCatchUpNs) {
    // Too far behind: skip the missed slots instead of bursting them all.
    int64_t jump = (now_ns - start) / interval_ns_ + 1;
    int64_t cur = index_.load(std::memory_order_relaxed);
    while (cur < jump && !index_.compare_exchange_weak(cur, jump + 1, std::memory_order_relaxed)) {
    }
    intended = start + jump * interval_ns_;
  }
  return intended;
}

void RateSchedule::set_default(double rate) {
  std::lock_guard lk(mu_);
  default_rate_ = rate;
}

void RateSchedule::add_point(int64_t t_ms, double rate) {
  std::lock_guard lk(mu_);
  points_[t_ms] = rate;
}

void RateSchedule::clear_points() {
  std::lock_guard lk(mu_);
  points_.clear();
}

double RateSchedule::rate_at(int64_t t) const {
  std::lock_guard lk(mu_);
  auto after = points_.lower_bound(t);   // first key >= t
  auto before = points_.upper_bound(t);  // first key > t; the one before it is <= t
  if (after == points_.end() || before == points_.begin()) return default_rate_;
  --before;
  if (after->first == before->first) return before->second;
  double frac =
      static_cast<double>(t - before->first) / static_cast<double>(after->first - before->first);
  return before->second + (after->second - before->second) * frac;
}

void sleep_until_ns(int64_t deadline_ns) {
  timespec ts{static_cast<time_t>(deadline_ns / 1'000'000'000),
              static_cast<long>(deadline_ns % 1'000'000'000)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

int64_t mono_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

int64_t wall_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace shale::perf
