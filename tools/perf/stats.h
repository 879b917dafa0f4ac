// Load statistics shared by all producer callbacks and consumer threads (AutoMQ Stats.java):
// period counters (reset at each sample), totals (reset at each statistics reset), interval and
// cumulative latency histograms for produce latency (<= 180 s) and end-to-end latency (<= 1 h),
// and maxSendTimeNanos (never reset), which ends the catch-up phase.
//
// Threading: message_sent/failed/received are called from librdkafka's background threads and
// consumer threads; counters are atomics, each metric's two histograms sit behind one mutex
// (held for one array increment). period()/cumulative()/reset() are called by the single
// statistics thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "perf/histogram.h"

namespace shale::perf {

struct LatencySummary {
  int64_t count = 0;
  double mean = 0;
  double min = 0, p50 = 0, p75 = 0, p90 = 0, p95 = 0, p99 = 0, p999 = 0, p9999 = 0, max = 0;
};
LatencySummary summarize(const Histogram& h);

struct PeriodStats {
  int64_t now_ns = 0;  // monotonic
  int64_t messages_sent = 0, messages_send_failed = 0, bytes_sent = 0;
  int64_t messages_received = 0, bytes_received = 0;
  int64_t total_messages_sent = 0, total_messages_received = 0;
  LatencySummary send_latency, e2e_latency;
};

struct CumulativeStats {
  int64_t now_ns = 0;  // monotonic
  int64_t total_messages_sent = 0, total_messages_send_failed = 0, total_bytes_sent = 0;
  int64_t total_messages_received = 0, total_bytes_received = 0;
  LatencySummary send_latency, e2e_latency;
  std::map<double, int64_t> send_quantiles, e2e_quantiles;
};

class Stats {
 public:
  static constexpr int64_t kMaxSendLatencyMicros = 180'000'000;
  static constexpr int64_t kMaxE2eLatencyMicros = 3'600'000'000;
  static constexpr int kSignificantDigits = 5;

  Stats();

  // Latencies are (wall_now_ns - send_ns) / 1000, truncated; negative ones are dropped and large
  // ones clamped to the histogram's highest value.
  void message_sent(int64_t bytes, int64_t send_time_ns, int64_t wall_now_ns);
  void message_failed();
  void messages_received(int64_t count, int64_t bytes, int64_t send_time_ns, int64_t wall_now_ns);

  PeriodStats period();  // resets the period counters and interval histograms
  CumulativeStats cumulative() const;
  void reset();  // everything except max_send_time_ns

  std::atomic<int64_t> max_send_time_ns{0};

 private:
  struct Metric {
    Metric(int64_t highest);
    mutable std::mutex mu;
    int64_t highest;
    std::unique_ptr<Histogram> interval, spare, total;
    void record(int64_t micros);
  };
  std::atomic<int64_t> sent_{0}, failed_{0}, bytes_sent_{0}, received_{0}, bytes_received_{0};
  std::atomic<int64_t> total_sent_{0}, total_failed_{0}, total_bytes_sent_{0};
  std::atomic<int64_t> total_received_{0}, total_bytes_received_{0};
  Metric send_, e2e_;
};

}  // namespace shale::perf
