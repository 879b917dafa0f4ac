// Metrics: counters, gauges and histograms in one process-wide registry, exposed in the
// Prometheus text format (version 0.0.4) by the HTTP listener (http/). A thin layer over
// prometheus-cpp's core library (Debian's prometheus-cpp-dev): its Registry, Family and
// TextSerializer do the bookkeeping and the format; this header keeps the broker's call sites
// short and adds scrape-time collectors for values computed on demand (storage engine figures,
// process CPU).
//
// Use: look a child up once (registration takes a mutex and may allocate) and keep the
// reference: the hot path only does atomic adds. References stay valid for the life of the
// registry.
// Thread-safety: everything is thread-safe. Collectors run on the scraping thread and must not
// register metrics or add collectors.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

namespace shale::metrics {

using Labels = std::vector<std::pair<std::string, std::string>>;

class Counter {
 public:
  explicit Counter(prometheus::Counter& c) : c_(c) {}
  void inc(uint64_t n = 1) { c_.Increment(static_cast<double>(n)); }
  uint64_t value() const { return static_cast<uint64_t>(c_.Value()); }

 private:
  prometheus::Counter& c_;
};

class Gauge {
 public:
  explicit Gauge(prometheus::Gauge& g) : g_(g) {}
  void set(int64_t v) { g_.Set(static_cast<double>(v)); }
  void add(int64_t d) { g_.Increment(static_cast<double>(d)); }
  int64_t value() const { return static_cast<int64_t>(g_.Value()); }

 private:
  prometheus::Gauge& g_;
};

// Latency in seconds, with fixed buckets from 0.5 ms to 10 s (what a broker's request and WAL
// latencies span).
class Histogram {
 public:
  static const std::vector<double>& bounds();
  explicit Histogram(prometheus::Histogram& h) : h_(h) {}
  void observe(double seconds) { h_.Observe(seconds >= 0 ? seconds : 0); }

 private:
  prometheus::Histogram& h_;
};

// Samples a collector writes at scrape time.
class Sink {
 public:
  virtual ~Sink() = default;
  virtual void counter(const std::string& name, const std::string& help, const Labels& labels,
                       double value) = 0;
  virtual void gauge(const std::string& name, const std::string& help, const Labels& labels,
                     double value) = 0;
};
using Collector = std::function<void(Sink&)>;

class Registry {
 public:
  Counter& counter(const std::string& name, const std::string& help, const Labels& labels = {});
  Gauge& gauge(const std::string& name, const std::string& help, const Labels& labels = {});
  Histogram& histogram(const std::string& name, const std::string& help, const Labels& labels = {});
  // Returns an id for remove_collector (a collector refers to objects that may go away first).
  int add_collector(Collector c);
  void remove_collector(int id);

  // The Prometheus text exposition of every registered and collected family.
  std::string expose() const;

 private:
  std::shared_ptr<prometheus::Registry> registry_ = std::make_shared<prometheus::Registry>();
  mutable std::mutex mu_;
  // Facades over prometheus-cpp's children, by (name, labels); stable addresses.
  std::map<std::pair<std::string, Labels>, std::unique_ptr<Counter>> counters_;
  std::map<std::pair<std::string, Labels>, std::unique_ptr<Gauge>> gauges_;
  std::map<std::pair<std::string, Labels>, std::unique_ptr<Histogram>> histograms_;
  std::map<std::string, prometheus::Family<prometheus::Counter>*> counter_families_;
  std::map<std::string, prometheus::Family<prometheus::Gauge>*> gauge_families_;
  std::map<std::string, prometheus::Family<prometheus::Histogram>*> histogram_families_;
  std::map<int, Collector> collectors_;
  int next_collector_ = 1;
};

// The process-wide registry.
Registry& global();

}  // namespace shale::metrics
