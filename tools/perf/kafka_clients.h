// The Kafka side of `shale perf`: topic admin (create/delete/find topics, ListOffsets by time,
// AlterConsumerGroupOffsets), producers (sticky partition choice, `st` header, delivery
// accounting) and consumers (poll loop, one E2E sample per poll batch, pause/resume, readiness
// tracking, shared consume-rate token bucket). Only librdkafka is used: the C++ API for
// configuration, handles, callbacks and producing; its C API (reached through c_ptr()) where the
// C++ API has no equivalent: Admin API, batch-style polling without copies, header lookup.
//
// Threading: each PerfProducer is driven by exactly one sending thread (send()), while its
// delivery reports are served by its own poll thread. Each PerfConsumer owns one polling thread.
// TopicAdmin is used from the control thread only.
#pragma once

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafkacpp.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "perf/client_config.h"
#include "perf/payload.h"
#include "perf/stats.h"

namespace shale::perf {

struct PerfError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Builds a librdkafka configuration; throws PerfError naming an unknown or invalid property.
std::unique_ptr<RdKafka::Conf> make_conf(const ClientSettings& s, const std::string& client_kind);

class TopicAdmin {
 public:
  explicit TopicAdmin(const ClientSettings& admin_settings);
  ~TopicAdmin();
  // Deletes every topic whose name starts with "__automq_perf_"; returns the count (0 on error).
  int delete_perf_topics();
  // Creates topics in batches of floor(10000 / partitions); TopicExists is tolerated.
  void create_topics(const std::vector<std::string>& names, int partitions,
                     const ConfigMap& configs);
  // Existing topics whose names start with `prefix`, with their partition counts.
  std::map<std::string, int> find_topics(const std::string& prefix);
  // ListOffsets(timestamp) for one partition; the high watermark when no record is that new.
  int64_t offset_for_time(const std::string& topic, int partition, int64_t ts_ms);
  // Commits `offset` for every partition of `topic` in `group` (group must be inactive).
  // Returns "" or an error description.
  std::string alter_group_offsets(const std::string& group, const std::string& topic,
                                  int partitions, int64_t offset);

 private:
  std::unique_ptr<RdKafka::Producer> handle_;
};

// Shared by all producers: where delivery reports are counted, and probe bookkeeping.
struct DeliveryContext {
  Stats* stats = nullptr;
  std::atomic<int64_t> probes_pending{0};
  std::atomic<int64_t> probes_failed{0};
  std::atomic<int64_t> in_flight{0};
};

class PerfProducer {
 public:
  PerfProducer(const ClientSettings& s, std::string topic, int partitions, DeliveryContext* ctx);
  ~PerfProducer();
  const std::string& topic() const { return topic_; }
  int partitions() const { return partitions_; }
  // Sends one record with the `st` header taken now; errors are counted as send failures.
  void send(const std::string& payload, const std::string& key, uint64_t rnd);
  // One probe record (key "probe", value 0x01) to an explicit partition.
  void send_probe(int partition);
  // Waits up to timeout_ms for in-flight records, then stops the poll thread.
  void close(int timeout_ms);

 private:
  void produce(int partition, const std::string& payload, const std::string& key, bool probe);
  class DrCb;
  std::string topic_;
  int partitions_;
  DeliveryContext* ctx_;
  int64_t batch_size_;
  int64_t max_block_ms_;
  std::unique_ptr<DrCb> dr_cb_;
  std::unique_ptr<RdKafka::Producer> producer_;
  std::atomic<bool> stop_{false};
  std::thread poller_;
  // Sticky partitioner state, touched only by the sending thread.
  int current_partition_ = -1;
  int64_t bytes_in_batch_ = 0;
};

// Distinct (topic, partition) pairs any consumer has received a record from.
class ReadinessTracker {
 public:
  explicit ReadinessTracker(const std::vector<int>& partitions_per_topic);
  void seen(int topic_index, int partition);
  int64_t count() const { return count_.load(); }

 private:
  std::vector<std::unique_ptr<std::atomic<uint8_t>[]>> seen_;
  std::vector<int> sizes_;
  std::atomic<int64_t> count_{0};
};

// bucket4j-like greedy token bucket shared by all consumers (capacity rate/10, refill rate/s).
// Deviation: a batch larger than the capacity is charged as debt instead of failing.
class TokenBucket {
 public:
  explicit TokenBucket(int64_t rate_per_sec);
  void consume(int64_t n);

 private:
  std::mutex mu_;
  double rate_, capacity_, tokens_;
  int64_t last_ns_;
};

class PerfConsumer {
 public:
  PerfConsumer(const ClientSettings& s, const std::string& topic, int topic_index, int partitions,
               const std::string& group, Stats* stats, ReadinessTracker* ready,
               TokenBucket* bucket);
  ~PerfConsumer();
  void start();
  bool assigned() const { return assigned_.load(); }
  const std::string& topic() const { return topic_; }
  const std::string& group() const { return group_; }
  void pause() { paused_.store(true); }
  // Resumes polling; when reset_offset >= 0 every assigned partition restarts there.
  void resume(int64_t reset_offset);
  void close();

 private:
  class RebalanceCb;
  void loop();
  void handle_batch(std::vector<rd_kafka_message_t*>& batch);
  void apply_pending_offset();
  std::string topic_;
  int topic_index_;
  int partitions_;
  std::string group_;
  Stats* stats_;
  ReadinessTracker* ready_;
  TokenBucket* bucket_;
  int max_poll_records_;
  std::unique_ptr<RebalanceCb> rebalance_cb_;
  std::unique_ptr<RdKafka::KafkaConsumer> consumer_;
  std::atomic<bool> assigned_{false};
  std::atomic<bool> paused_{false};
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> pending_offset_{-1};
  std::atomic<bool> pending_seek_{false};
  std::thread thread_;
  int64_t warned_ns_ = 0;
};

}  // namespace shale::perf
