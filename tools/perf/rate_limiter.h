// Send-rate control, as in AutoMQ's ProducerService: one global UniformRateLimiter shared by all
// sending threads (so --send-rate is a process-wide total), rebuilt every 5 s from a rate
// schedule (the warmup ramp), which forgives accumulated lag at each rebuild.
//
// Threading: UniformRateLimiter::acquire() is lock-free and called by every sending thread.
// RateSchedule is guarded by its own mutex (written by the control thread, read by the rebuild
// task).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>

namespace shale::perf {

class UniformRateLimiter {
 public:
  // Bursts at most this much missed time when the callers fall behind.
  static constexpr int64_t kMaxCatchUpNs = 10'000'000'000;

  explicit UniformRateLimiter(double rate_per_sec);
  double rate() const { return rate_; }
  int64_t interval_ns() const { return interval_ns_; }

  // Returns the intended send time (monotonic ns) of the next slot; the caller waits until then.
  // `now_ns` is the caller's monotonic clock reading (injected for tests).
  int64_t acquire(int64_t now_ns);

 private:
  double rate_;
  int64_t interval_ns_;
  std::atomic<int64_t> start_{INT64_MIN};
  std::atomic<int64_t> index_{0};
};

// Rate as a function of time: linear interpolation between the scheduled points at or before and
// at or after t; if either is missing, the default rate.
class RateSchedule {
 public:
  void set_default(double rate);
  void add_point(int64_t t_ms, double rate);
  void clear_points();
  double rate_at(int64_t t_ms) const;

 private:
  mutable std::mutex mu_;
  double default_rate_ = 1;
  std::map<int64_t, double> points_;
};

// Blocks the calling thread until the monotonic clock reaches `deadline_ns`.
void sleep_until_ns(int64_t deadline_ns);
int64_t mono_ns();
int64_t wall_ns();

}  // namespace shale::perf
