#include "perf/stats.h"

#include <utility>

#include "perf/rate_limiter.h"

namespace shale::perf {

LatencySummary summarize(const Histogram& h) {
  LatencySummary s;
  s.count = h.total_count();
  s.min = static_cast<double>(h.min());
  auto v = h.values_at_percentiles({50, 75, 90, 95, 99, 99.9, 99.99}, &s.mean);
  s.p50 = static_cast<double>(v[0]);
  s.p75 = static_cast<double>(v[1]);
  s.p90 = static_cast<double>(v[2]);
  s.p95 = static_cast<double>(v[3]);
  s.p99 = static_cast<double>(v[4]);
  s.p999 = static_cast<double>(v[5]);
  s.p9999 = static_cast<double>(v[6]);
  s.max = static_cast<double>(h.max());
  return s;
}

Stats::Metric::Metric(int64_t h)
    : highest(h),
      interval(std::make_unique<Histogram>(h, kSignificantDigits)),
      spare(std::make_unique<Histogram>(h, kSignificantDigits)),
      total(std::make_unique<Histogram>(h, kSignificantDigits)) {}

void Stats::Metric::record(int64_t micros) {
  if (micros < 0) return;
  if (micros > highest) micros = highest;
  std::lock_guard lk(mu);
  interval->record(micros);
  total->record(micros);
}

Stats::Stats() : send_(kMaxSendLatencyMicros), e2e_(kMaxE2eLatencyMicros) {}

void Stats::message_sent(int64_t bytes, int64_t send_time_ns, int64_t wall_now_ns) {
  sent_.fetch_add(1, std::memory_order_relaxed);
  bytes_sent_.fetch_add(bytes, std::memory_order_relaxed);
  total_sent_.fetch_add(1, std::memory_order_relaxed);
  total_bytes_sent_.fetch_add(bytes, std::memory_order_relaxed);
  send_.record((wall_now_ns - send_time_ns) / 1000);
}

void Stats::message_failed() {
  failed_.fetch_add(1, std::memory_order_relaxed);
  total_failed_.fetch_add(1, std::memory_order_relaxed);
}

void Stats::messages_received(int64_t count, int64_t bytes, int64_t send_time_ns,
                              int64_t wall_now_ns) {
  received_.fetch_add(count, std::memory_order_relaxed);
  bytes_received_.fetch_add(bytes, std::memory_order_relaxed);
  total_received_.fetch_add(count, std::memory_order_relaxed);
  total_bytes_received_.fetch_add(bytes, std::memory_order_relaxed);
  e2e_.record((wall_now_ns - send_time_ns) / 1000);
  int64_t cur = max_send_time_ns.load(std::memory_order_relaxed);
  while (send_time_ns > cur && !max_send_time_ns.compare_exchange_weak(cur, send_time_ns)) {
  }
}

PeriodStats Stats::period() {
  PeriodStats p;
  p.now_ns = mono_ns();
  p.messages_sent = sent_.exchange(0);
  p.messages_send_failed = failed_.exchange(0);
  p.bytes_sent = bytes_sent_.exchange(0);
  p.messages_received = received_.exchange(0);
  p.bytes_received = bytes_received_.exchange(0);
  p.total_messages_sent = total_sent_.load();
  p.total_messages_received = total_received_.load();
  for (auto [m, out] : {std::pair{&send_, &p.send_latency}, std::pair{&e2e_, &p.e2e_latency}}) {
    {
      std::lock_guard lk(m->mu);
      std::swap(m->interval, m->spare);
    }
    // Only this thread touches `spare` between swaps.
    *out = summarize(*m->spare);
    m->spare->reset();
  }
  return p;
}

CumulativeStats Stats::cumulative() const {
  CumulativeStats c;
  c.now_ns = mono_ns();
  c.total_messages_sent = total_sent_.load();
  c.total_messages_send_failed = total_failed_.load();
  c.total_bytes_sent = total_bytes_sent_.load();
  c.total_messages_received = total_received_.load();
  c.total_bytes_received = total_bytes_received_.load();
  {
    std::lock_guard lk(send_.mu);
    c.send_latency = summarize(*send_.total);
    c.send_quantiles = send_.total->percentile_map(100);
  }
  {
    std::lock_guard lk(e2e_.mu);
    c.e2e_latency = summarize(*e2e_.total);
    c.e2e_quantiles = e2e_.total->percentile_map(100);
  }
  return c;
}

void Stats::reset() {
  for (auto* a : {&sent_, &failed_, &bytes_sent_, &received_, &bytes_received_, &total_sent_,
                  &total_failed_, &total_bytes_sent_, &total_received_, &total_bytes_received_}) {
    a->store(0);
  }
  for (auto* m : {&send_, &e2e_}) {
    std::lock_guard lk(m->mu);
    m->interval->reset();
    m->total->reset();
  }
}

}  // namespace shale::perf
