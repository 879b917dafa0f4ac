// TopicMetrics: Kafka's BrokerTopicMetrics (BytesInPerSec, MessagesInPerSec, BytesOutPerSec)
// per topic, as Prometheus counters in the global registry (base/metrics.h), plus the
// all-topics totals Kafka reports without a topic tag.
//
// Threads: for_topic() is thread-safe (a shared lock on a map, taken once per topic per
// request); the counters are atomics. Entries live for the process (a deleted topic keeps its
// last counts, as counters must never go down).
#pragma once

#include <memory>
#include <shared_mutex>
#include <string>
#include <unordered_map>

#include "base/metrics.h"

namespace shale::broker {

struct TopicCounters {
  metrics::Counter& bytes_in;
  metrics::Counter& messages_in;
  metrics::Counter& bytes_out;
};

class TopicMetrics {
 public:
  static TopicMetrics& instance();
  TopicCounters& for_topic(const std::string& topic);
  // Totals over every topic.
  TopicCounters& all() { return all_; }

 private:
  TopicMetrics();
  std::shared_mutex mu_;
  std::unordered_map<std::string, std::unique_ptr<TopicCounters>> by_topic_;
  TopicCounters all_;
};

}  // namespace shale::broker
