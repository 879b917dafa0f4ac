#include "broker/topic_metrics.h"

#include <mutex>

namespace shale::broker {
namespace {

TopicCounters make(const metrics::Labels& labels) {
  auto& r = metrics::global();
  return TopicCounters{
      r.counter("kafka_server_brokertopicmetrics_bytes_in_total",
                "Record bytes appended (Kafka's BytesInPerSec)", labels),
      r.counter("kafka_server_brokertopicmetrics_messages_in_total",
                "Records appended (Kafka's MessagesInPerSec)", labels),
      r.counter("kafka_server_brokertopicmetrics_bytes_out_total",
                "Record bytes sent to consumers (Kafka's BytesOutPerSec)", labels),
  };
}

}  // namespace

TopicMetrics::TopicMetrics() : all_(make({})) {}

TopicMetrics& TopicMetrics::instance() {
  static TopicMetrics* m = new TopicMetrics();  // never destroyed, like the registry
  return *m;
}

TopicCounters& TopicMetrics::for_topic(const std::string& topic) {
  {
    std::shared_lock lk(mu_);
    if (auto it = by_topic_.find(topic); it != by_topic_.end()) return *it->second;
  }
  std::unique_lock lk(mu_);
  auto& slot = by_topic_[topic];
  if (!slot) slot = std::make_unique<TopicCounters>(make({{"topic", topic}}));
  return *slot;
}

}  // namespace shale::broker
