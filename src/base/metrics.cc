#include "base/metrics.h"

#include <sstream>
#include <stdexcept>

#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>

namespace shale::metrics {

namespace {

std::map<std::string, std::string> label_map(const Labels& labels) {
  return {labels.begin(), labels.end()};
}

template <typename Map>
void refuse_other_types(const std::string& name, const Map& a, const char* what_a) {
  if (a.count(name)) throw std::logic_error("metric " + name + " already registered as " + what_a);
}

}  // namespace

const std::vector<double>& Histogram::bounds() {
  static const std::vector<double> b = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                        0.1,    0.25,  0.5,    1,     2.5,  5,     10};
  return b;
}

Counter& Registry::counter(const std::string& name, const std::string& help, const Labels& labels) {
  std::lock_guard lk(mu_);
  auto& slot = counters_[{name, labels}];
  if (slot) return *slot;
  refuse_other_types(name, gauge_families_, "a gauge");
  refuse_other_types(name, histogram_families_, "a histogram");
  auto& fam = counter_families_[name];
  if (fam == nullptr) fam = &prometheus::BuildCounter().Name(name).Help(help).Register(*registry_);
  slot = std::make_unique<Counter>(fam->Add(label_map(labels)));
  return *slot;
}

Gauge& Registry::gauge(const std::string& name, const std::string& help, const Labels& labels) {
  std::lock_guard lk(mu_);
  auto& slot = gauges_[{name, labels}];
  if (slot) return *slot;
  refuse_other_types(name, counter_families_, "a counter");
  refuse_other_types(name, histogram_families_, "a histogram");
  auto& fam = gauge_families_[name];
  if (fam == nullptr) fam = &prometheus::BuildGauge().Name(name).Help(help).Register(*registry_);
  slot = std::make_unique<Gauge>(fam->Add(label_map(labels)));
  return *slot;
}

Histogram& Registry::histogram(const std::string& name, const std::string& help,
                               const Labels& labels) {
  std::lock_guard lk(mu_);
  auto& slot = histograms_[{name, labels}];
  if (slot) return *slot;
  refuse_other_types(name, counter_families_, "a counter");
  refuse_other_types(name, gauge_families_, "a gauge");
  auto& fam = histogram_families_[name];
  if (fam == nullptr) {
    fam = &prometheus::BuildHistogram().Name(name).Help(help).Register(*registry_);
  }
  slot = std::make_unique<Histogram>(fam->Add(label_map(labels), Histogram::bounds()));
  return *slot;
}

int Registry::add_collector(Collector c) {
  std::lock_guard lk(mu_);
  collectors_[next_collector_] = std::move(c);
  return next_collector_++;
}

void Registry::remove_collector(int id) {
  std::lock_guard lk(mu_);
  collectors_.erase(id);
}

namespace {

// Turns a collector's samples into prometheus-cpp metric families (one per name).
class FamilySink final : public Sink {
 public:
  void counter(const std::string& name, const std::string& help, const Labels& labels,
               double value) override {
    add(name, help, prometheus::MetricType::Counter, labels).counter.value = value;
  }
  void gauge(const std::string& name, const std::string& help, const Labels& labels,
             double value) override {
    add(name, help, prometheus::MetricType::Gauge, labels).gauge.value = value;
  }
  std::vector<prometheus::MetricFamily> families;

 private:
  prometheus::ClientMetric& add(const std::string& name, const std::string& help,
                                prometheus::MetricType type, const Labels& labels) {
    auto it = index_.find(name);
    if (it == index_.end()) {
      prometheus::MetricFamily f;
      f.name = name;
      f.help = help;
      f.type = type;
      families.push_back(std::move(f));
      it = index_.emplace(name, families.size() - 1).first;
    }
    auto& metric = families[it->second].metric.emplace_back();
    for (const auto& [k, v] : labels) metric.label.push_back({k, v});
    return metric;
  }
  std::map<std::string, size_t> index_;
};

}  // namespace

std::string Registry::expose() const {
  FamilySink collected;
  std::vector<prometheus::MetricFamily> all;
  {
    std::lock_guard lk(mu_);
    for (const auto& [id, c] : collectors_) c(collected);
    all = registry_->Collect();
  }
  for (auto& f : collected.families) all.push_back(std::move(f));
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, all);
  return out.str();
}

Registry& global() {
  static Registry* r = new Registry();  // never destroyed: threads may scrape during exit
  return *r;
}

}  // namespace shale::metrics
