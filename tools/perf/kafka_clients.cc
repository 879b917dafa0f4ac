#include "perf/kafka_clients.h"

#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "perf/log.h"
#include "perf/rate_limiter.h"

namespace shale::perf {
namespace {

constexpr const char* kTopicNamePrefix = "__automq_perf_";
constexpr int kAdminTimeoutMs = 120000;
// Probe records are told apart in delivery reports by this bit of the opaque (the send time in
// epoch ns needs 61 bits until the year 2043).
constexpr uint64_t kProbeFlag = uint64_t{1} << 62;

// Client logs stay out of the tool's stdout (the original sends them to client.log); errors
// still reach stderr, rate-limited.
class QuietLogger : public RdKafka::EventCb {
 public:
  void event_cb(RdKafka::Event& e) override {
    bool error = e.type() == RdKafka::Event::EVENT_ERROR ||
                 (e.type() == RdKafka::Event::EVENT_LOG &&
                  e.severity() <= RdKafka::Event::EVENT_SEVERITY_ERROR);
    if (!error) return;
    int64_t now = mono_ns();
    int64_t last = last_ns_.load();
    if (now - last < 5'000'000'000 || !last_ns_.compare_exchange_strong(last, now)) return;
    std::string msg = e.type() == RdKafka::Event::EVENT_ERROR
                          ? RdKafka::err2str(e.err()) + ": " + e.str()
                          : e.fac() + ": " + e.str();
    std::fprintf(stderr, "librdkafka: %s\n", msg.c_str());
  }

 private:
  std::atomic<int64_t> last_ns_{INT64_MIN / 2};
};
QuietLogger g_quiet_logger;

rd_kafka_event_t* wait_event(rd_kafka_queue_t* q, int timeout_ms) {
  return rd_kafka_queue_poll(q, timeout_ms);
}

}  // namespace

std::unique_ptr<RdKafka::Conf> make_conf(const ClientSettings& s, const std::string& kind) {
  std::unique_ptr<RdKafka::Conf> conf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
  std::string err;
  for (const auto& [k, v] : s.rdkafka) {
    RdKafka::Conf::ConfResult r = conf->set(k, v, err);
    if (r == RdKafka::Conf::CONF_UNKNOWN) {
      throw PerfError("Unknown " + kind + " property '" + k +
                      "': neither a Kafka Java-client property shale perf translates nor a "
                      "librdkafka property");
    }
    if (r != RdKafka::Conf::CONF_OK) {
      throw PerfError("Invalid " + kind + " property " + k + "=" + v + ": " + err);
    }
  }
  conf->set("event_cb", static_cast<RdKafka::EventCb*>(&g_quiet_logger), err);
  conf->set("log_level", "3", err);
  return conf;
}

// ---------------------------------------------------------------------------------------------
// TopicAdmin

TopicAdmin::TopicAdmin(const ClientSettings& s) {
  auto conf = make_conf(s, "admin client");
  std::string err;
  handle_.reset(RdKafka::Producer::create(conf.get(), err));
  if (!handle_) throw PerfError("Failed to create admin client: " + err);
}

TopicAdmin::~TopicAdmin() = default;

std::map<std::string, int> TopicAdmin::find_topics(const std::string& prefix) {
  RdKafka::Metadata* md = nullptr;
  RdKafka::ErrorCode e = handle_->metadata(true, nullptr, &md, kAdminTimeoutMs);
  if (e != RdKafka::ERR_NO_ERROR) {
    throw PerfError("Failed to list topics: " + RdKafka::err2str(e));
  }
  std::unique_ptr<RdKafka::Metadata> holder(md);
  std::map<std::string, int> out;
  for (const auto* t : *md->topics()) {
    if (t->topic().rfind(prefix, 0) == 0 && t->err() == RdKafka::ERR_NO_ERROR) {
      out[t->topic()] = static_cast<int>(t->partitions()->size());
    }
  }
  return out;
}

int TopicAdmin::delete_perf_topics() {
  std::map<std::string, int> topics;
  try {
    topics = find_topics(kTopicNamePrefix);
  } catch (const PerfError&) {
    return 0;
  }
  if (topics.empty()) return 0;
  rd_kafka_t* rk = handle_->c_ptr();
  std::vector<rd_kafka_DeleteTopic_t*> del;
  for (const auto& [name, _] : topics) del.push_back(rd_kafka_DeleteTopic_new(name.c_str()));
  rd_kafka_queue_t* q = rd_kafka_queue_new(rk);
  rd_kafka_AdminOptions_t* opts = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_DELETETOPICS);
  char errstr[512];
  rd_kafka_AdminOptions_set_request_timeout(opts, kAdminTimeoutMs, errstr, sizeof errstr);
  rd_kafka_DeleteTopics(rk, del.data(), del.size(), opts, q);
  int deleted = 0;
  if (rd_kafka_event_t* ev = wait_event(q, kAdminTimeoutMs + 5000)) {
    if (rd_kafka_event_error(ev) == RD_KAFKA_RESP_ERR_NO_ERROR) {
      size_t n = 0;
      const rd_kafka_topic_result_t** res =
          rd_kafka_DeleteTopics_result_topics(rd_kafka_event_DeleteTopics_result(ev), &n);
      bool ok = true;
      for (size_t i = 0; i < n; ++i) {
        if (rd_kafka_topic_result_error(res[i]) != RD_KAFKA_RESP_ERR_NO_ERROR) ok = false;
      }
      // Like the original: any execution error swallows the count.
      deleted = ok ? static_cast<int>(n) : 0;
    }
    rd_kafka_event_destroy(ev);
  }
  rd_kafka_DeleteTopic_destroy_array(del.data(), del.size());
  rd_kafka_AdminOptions_destroy(opts);
  rd_kafka_queue_destroy(q);
  return deleted;
}

void TopicAdmin::create_topics(const std::vector<std::string>& names, int partitions,
                               const ConfigMap& configs) {
  rd_kafka_t* rk = handle_->c_ptr();
  size_t per_batch = std::max<size_t>(1, static_cast<size_t>(10000 / partitions));
  char errstr[512];
  for (size_t start = 0; start < names.size(); start += per_batch) {
    size_t end = std::min(names.size(), start + per_batch);
    std::vector<rd_kafka_NewTopic_t*> nts;
    for (size_t i = start; i < end; ++i) {
      rd_kafka_NewTopic_t* nt =
          rd_kafka_NewTopic_new(names[i].c_str(), partitions, 1, errstr, sizeof errstr);
      if (!nt) throw PerfError(std::string("Invalid topic: ") + errstr);
      for (const auto& [k, v] : configs) rd_kafka_NewTopic_set_config(nt, k.c_str(), v.c_str());
      nts.push_back(nt);
    }
    rd_kafka_queue_t* q = rd_kafka_queue_new(rk);
    rd_kafka_AdminOptions_t* opts = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
    rd_kafka_AdminOptions_set_request_timeout(opts, kAdminTimeoutMs, errstr, sizeof errstr);
    rd_kafka_AdminOptions_set_operation_timeout(opts, 60000, errstr, sizeof errstr);
    rd_kafka_CreateTopics(rk, nts.data(), nts.size(), opts, q);
    std::string failure;
    rd_kafka_event_t* ev = wait_event(q, kAdminTimeoutMs + 5000);
    if (!ev) {
      failure = "timed out";
    } else if (rd_kafka_event_error(ev) != RD_KAFKA_RESP_ERR_NO_ERROR) {
      failure = rd_kafka_event_error_string(ev);
    } else {
      size_t n = 0;
      const rd_kafka_topic_result_t** res =
          rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &n);
      for (size_t i = 0; i < n; ++i) {
        rd_kafka_resp_err_t e = rd_kafka_topic_result_error(res[i]);
        if (e != RD_KAFKA_RESP_ERR_NO_ERROR && e != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
          const char* m = rd_kafka_topic_result_error_string(res[i]);
          failure = std::string(rd_kafka_topic_result_name(res[i])) + ": " +
                    (m ? m : rd_kafka_err2str(e));
          break;
        }
      }
    }
    if (ev) rd_kafka_event_destroy(ev);
    rd_kafka_NewTopic_destroy_array(nts.data(), nts.size());
    rd_kafka_AdminOptions_destroy(opts);
    rd_kafka_queue_destroy(q);
    if (!failure.empty()) throw PerfError("Failed to create topics: " + failure);
  }
}

int64_t TopicAdmin::offset_for_time(const std::string& topic, int partition, int64_t ts_ms) {
  rd_kafka_t* rk = handle_->c_ptr();
  rd_kafka_topic_partition_list_t* l = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(l, topic.c_str(), partition)->offset = ts_ms;
  rd_kafka_resp_err_t e = rd_kafka_offsets_for_times(rk, l, kAdminTimeoutMs);
  int64_t off = -1;
  if (e == RD_KAFKA_RESP_ERR_NO_ERROR && l->elems[0].err == RD_KAFKA_RESP_ERR_NO_ERROR) {
    off = l->elems[0].offset;
  } else {
    rd_kafka_resp_err_t pe = e != RD_KAFKA_RESP_ERR_NO_ERROR ? e : l->elems[0].err;
    rd_kafka_topic_partition_list_destroy(l);
    throw PerfError("Failed to list offsets of " + topic + ": " + rd_kafka_err2str(pe));
  }
  rd_kafka_topic_partition_list_destroy(l);
  if (off < 0) {
    int64_t lo = 0, hi = 0;
    e = rd_kafka_query_watermark_offsets(rk, topic.c_str(), partition, &lo, &hi, kAdminTimeoutMs);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
      throw PerfError("Failed to list offsets of " + topic + ": " + rd_kafka_err2str(e));
    }
    off = hi;
  }
  return off;
}

std::string TopicAdmin::alter_group_offsets(const std::string& group, const std::string& topic,
                                            int partitions, int64_t offset) {
  rd_kafka_t* rk = handle_->c_ptr();
  rd_kafka_topic_partition_list_t* l = rd_kafka_topic_partition_list_new(partitions);
  for (int p = 0; p < partitions; ++p) {
    rd_kafka_topic_partition_list_add(l, topic.c_str(), p)->offset = offset;
  }
  rd_kafka_AlterConsumerGroupOffsets_t* a =
      rd_kafka_AlterConsumerGroupOffsets_new(group.c_str(), l);
  rd_kafka_topic_partition_list_destroy(l);
  rd_kafka_queue_t* q = rd_kafka_queue_new(rk);
  rd_kafka_AdminOptions_t* opts =
      rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_ALTERCONSUMERGROUPOFFSETS);
  char errstr[512];
  rd_kafka_AdminOptions_set_request_timeout(opts, kAdminTimeoutMs, errstr, sizeof errstr);
  rd_kafka_AlterConsumerGroupOffsets(rk, &a, 1, opts, q);
  std::string failure;
  rd_kafka_event_t* ev = wait_event(q, kAdminTimeoutMs + 5000);
  if (!ev) {
    failure = "timed out";
  } else if (rd_kafka_event_error(ev) != RD_KAFKA_RESP_ERR_NO_ERROR) {
    failure = rd_kafka_event_error_string(ev);
  } else {
    size_t n = 0;
    const rd_kafka_group_result_t** gr = rd_kafka_AlterConsumerGroupOffsets_result_groups(
        rd_kafka_event_AlterConsumerGroupOffsets_result(ev), &n);
    for (size_t i = 0; i < n && failure.empty(); ++i) {
      if (const rd_kafka_error_t* ge = rd_kafka_group_result_error(gr[i])) {
        failure = rd_kafka_error_string(ge);
        break;
      }
      const rd_kafka_topic_partition_list_t* parts = rd_kafka_group_result_partitions(gr[i]);
      for (int k = 0; parts && k < parts->cnt; ++k) {
        if (parts->elems[k].err != RD_KAFKA_RESP_ERR_NO_ERROR) {
          failure = std::string("partition ") + std::to_string(parts->elems[k].partition) + ": " +
                    rd_kafka_err2str(parts->elems[k].err);
          break;
        }
      }
    }
  }
  if (ev) rd_kafka_event_destroy(ev);
  rd_kafka_AlterConsumerGroupOffsets_destroy(a);
  rd_kafka_AdminOptions_destroy(opts);
  rd_kafka_queue_destroy(q);
  return failure;
}

// ---------------------------------------------------------------------------------------------
// PerfProducer

class PerfProducer::DrCb : public RdKafka::DeliveryReportCb {
 public:
  explicit DrCb(DeliveryContext* ctx) : ctx_(ctx) {}
  void dr_cb(RdKafka::Message& m) override {
    uint64_t op = reinterpret_cast<uint64_t>(m.msg_opaque());
    bool probe = (op & kProbeFlag) != 0;
    int64_t st = static_cast<int64_t>(op & ~kProbeFlag);
    if (m.err() == RdKafka::ERR_NO_ERROR) {
      ctx_->stats->message_sent(static_cast<int64_t>(m.len()), st, wall_ns());
    } else {
      ctx_->stats->message_failed();
      if (probe) ctx_->probes_failed.fetch_add(1);
    }
    if (probe) ctx_->probes_pending.fetch_sub(1);
    ctx_->in_flight.fetch_sub(1, std::memory_order_relaxed);
  }

 private:
  DeliveryContext* ctx_;
};

PerfProducer::PerfProducer(const ClientSettings& s, std::string topic, int partitions,
                           DeliveryContext* ctx)
    : topic_(std::move(topic)),
      partitions_(partitions),
      ctx_(ctx),
      batch_size_(s.batch_size),
      max_block_ms_(s.max_block_ms),
      dr_cb_(std::make_unique<DrCb>(ctx)) {
  auto conf = make_conf(s, "producer");
  std::string err;
  conf->set("dr_cb", static_cast<RdKafka::DeliveryReportCb*>(dr_cb_.get()), err);
  producer_.reset(RdKafka::Producer::create(conf.get(), err));
  if (!producer_) throw PerfError("Failed to create producer: " + err);
  // Delivery reports are served here so the sending thread never polls.
  poller_ = std::thread([this] {
    while (!stop_.load(std::memory_order_relaxed)) producer_->poll(100);
  });
}

PerfProducer::~PerfProducer() { close(0); }

void PerfProducer::produce(int partition, const std::string& payload, const std::string& key,
                           bool probe) {
  const int64_t st = wall_ns();
  unsigned char hdr[8];
  encode_st_header(st, hdr);
  uint64_t op = static_cast<uint64_t>(st) | (probe ? kProbeFlag : 0);
  ctx_->in_flight.fetch_add(1, std::memory_order_relaxed);
  if (probe) ctx_->probes_pending.fetch_add(1);
  const int64_t deadline = mono_ns() + max_block_ms_ * 1'000'000;
  while (true) {
    RdKafka::Headers* headers = RdKafka::Headers::create();
    headers->add("st", hdr, sizeof hdr);
    // msgflags 0: librdkafka references the pooled payload without copying or freeing it.
    RdKafka::ErrorCode e =
        producer_->produce(topic_, partition, 0, const_cast<char*>(payload.data()), payload.size(),
                           key.data(), key.size(), 0, headers, reinterpret_cast<void*>(op));
    if (e == RdKafka::ERR_NO_ERROR) return;
    delete headers;  // not taken over on failure
    // A full queue blocks like Java's send() until max.block.ms.
    if (e == RdKafka::ERR__QUEUE_FULL && mono_ns() < deadline && !stop_.load()) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      continue;
    }
    ctx_->stats->message_failed();
    ctx_->in_flight.fetch_sub(1, std::memory_order_relaxed);
    if (probe) {
      ctx_->probes_failed.fetch_add(1);
      ctx_->probes_pending.fetch_sub(1);
    }
    return;
  }
}

void PerfProducer::send(const std::string& payload, const std::string& key, uint64_t rnd) {
  // Sticky partitioning that ignores the key, like Java's built-in partitioner: stay on one
  // partition until batch.size bytes were appended (every record when it is >= batch.size).
  if (current_partition_ < 0 || bytes_in_batch_ >= batch_size_) {
    current_partition_ = static_cast<int>(rnd % static_cast<uint64_t>(partitions_));
    bytes_in_batch_ = 0;
  }
  bytes_in_batch_ += static_cast<int64_t>(payload.size());
  produce(current_partition_, payload, key, false);
}

void PerfProducer::send_probe(int partition) {
  static const std::string kProbeKey = "probe";
  static const std::string kProbeValue(1, '\x01');
  produce(partition, kProbeValue, kProbeKey, true);
}

void PerfProducer::close(int timeout_ms) {
  if (!producer_) return;
  if (timeout_ms > 0) producer_->flush(timeout_ms);
  stop_.store(true);
  if (poller_.joinable()) poller_.join();
  producer_->poll(0);
  producer_.reset();
}

// ---------------------------------------------------------------------------------------------
// ReadinessTracker, TokenBucket

ReadinessTracker::ReadinessTracker(const std::vector<int>& sizes) : sizes_(sizes) {
  for (int n : sizes) {
    auto a = std::make_unique<std::atomic<uint8_t>[]>(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) a[static_cast<size_t>(i)].store(0);
    seen_.push_back(std::move(a));
  }
}

void ReadinessTracker::seen(int t, int p) {
  if (t < 0 || t >= static_cast<int>(sizes_.size()) || p < 0 || p >= sizes_[static_cast<size_t>(t)])
    return;
  auto& slot = seen_[static_cast<size_t>(t)][static_cast<size_t>(p)];
  if (slot.load(std::memory_order_relaxed) == 0 && slot.exchange(1) == 0) count_.fetch_add(1);
}

TokenBucket::TokenBucket(int64_t rate)
    : rate_(static_cast<double>(rate)),
      capacity_(static_cast<double>(rate / 10)),
      tokens_(capacity_),
      last_ns_(mono_ns()) {}

void TokenBucket::consume(int64_t n) {
  double wait_s = 0;
  {
    std::lock_guard lk(mu_);
    int64_t now = mono_ns();
    tokens_ = std::min(capacity_, tokens_ + rate_ * static_cast<double>(now - last_ns_) / 1e9);
    last_ns_ = now;
    tokens_ -= static_cast<double>(n);
    if (tokens_ < 0) wait_s = -tokens_ / rate_;
  }
  if (wait_s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(wait_s));
}

// ---------------------------------------------------------------------------------------------
// PerfConsumer

class PerfConsumer::RebalanceCb : public RdKafka::RebalanceCb {
 public:
  explicit RebalanceCb(PerfConsumer* owner) : owner_(owner) {}
  void rebalance_cb(RdKafka::KafkaConsumer* c, RdKafka::ErrorCode err,
                    std::vector<RdKafka::TopicPartition*>& parts) override {
    bool cooperative = c->rebalance_protocol() == "COOPERATIVE";
    if (err == RdKafka::ERR__ASSIGN_PARTITIONS) {
      int64_t pending = owner_->pending_offset_.load();
      if (pending >= 0) {
        // Catch-up resume: start where the offset reset put the group, whatever the client
        // committed on its own while it was rejoining.
        for (auto* tp : parts) tp->set_offset(pending);
      }
      if (cooperative) {
        RdKafka::Error* e = c->incremental_assign(parts);
        delete e;
      } else {
        c->assign(parts);
      }
      owner_->assigned_.store(true);
    } else {
      if (cooperative) {
        RdKafka::Error* e = c->incremental_unassign(parts);
        delete e;
      } else {
        c->unassign();
      }
    }
  }

 private:
  PerfConsumer* owner_;
};

PerfConsumer::PerfConsumer(const ClientSettings& s, const std::string& topic, int topic_index,
                           int partitions, const std::string& group, Stats* stats,
                           ReadinessTracker* ready, TokenBucket* bucket)
    : topic_(topic),
      topic_index_(topic_index),
      partitions_(partitions),
      group_(group),
      stats_(stats),
      ready_(ready),
      bucket_(bucket),
      max_poll_records_(s.max_poll_records),
      rebalance_cb_(std::make_unique<RebalanceCb>(this)) {
  ClientSettings cs = s;
  cs.rdkafka.emplace_back("group.id", group);
  auto conf = make_conf(cs, "consumer");
  std::string err;
  conf->set("rebalance_cb", static_cast<RdKafka::RebalanceCb*>(rebalance_cb_.get()), err);
  consumer_.reset(RdKafka::KafkaConsumer::create(conf.get(), err));
  if (!consumer_) throw PerfError("Failed to create consumer: " + err);
  RdKafka::ErrorCode e = consumer_->subscribe({topic});
  if (e != RdKafka::ERR_NO_ERROR) throw PerfError("Failed to subscribe: " + RdKafka::err2str(e));
}

PerfConsumer::~PerfConsumer() { close(); }

void PerfConsumer::start() {
  thread_ = std::thread([this] { loop(); });
}

void PerfConsumer::resume(int64_t reset_offset) {
  if (reset_offset >= 0) {
    pending_offset_.store(reset_offset);
    pending_seek_.store(true);
  }
  paused_.store(false);
}

void PerfConsumer::apply_pending_offset() {
  // Still a group member (the pause was shorter than max.poll.interval.ms): move the current
  // assignment to the reset offset directly.
  std::vector<RdKafka::TopicPartition*> parts;
  if (consumer_->assignment(parts) == RdKafka::ERR_NO_ERROR && !parts.empty() &&
      consumer_->rebalance_protocol() != "COOPERATIVE") {
    for (auto* tp : parts) tp->set_offset(pending_offset_.load());
    consumer_->assign(parts);
  }
  RdKafka::TopicPartition::destroy(parts);
}

void PerfConsumer::loop() {
  rd_kafka_t* rk = consumer_->c_ptr();
  std::vector<rd_kafka_message_t*> batch;
  batch.reserve(static_cast<size_t>(max_poll_records_));
  while (!stop_.load(std::memory_order_relaxed)) {
    if (paused_.load(std::memory_order_relaxed)) {
      // Like the original: stop polling (no pause()), so the member leaves the group after
      // max.poll.interval.ms.
      for (int i = 0; i < 10 && paused_.load() && !stop_.load(); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      continue;
    }
    if (pending_seek_.exchange(false)) apply_pending_offset();
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 100);
    if (!m) continue;
    batch.push_back(m);
    // Drain what is already fetched, up to max.poll.records, like one Java poll().
    while (static_cast<int>(batch.size()) < max_poll_records_) {
      rd_kafka_message_t* n = rd_kafka_consumer_poll(rk, 0);
      if (!n) break;
      batch.push_back(n);
    }
    handle_batch(batch);
    for (auto* b : batch) rd_kafka_message_destroy(b);
    batch.clear();
  }
}

void PerfConsumer::handle_batch(std::vector<rd_kafka_message_t*>& batch) {
  int64_t count = 0, bytes = 0, st = 0;
  bool have_st = false;
  for (auto* m : batch) {
    if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) continue;
    if (!have_st) {
      rd_kafka_headers_t* hdrs = nullptr;
      const void* val = nullptr;
      size_t size = 0;
      if (rd_kafka_message_headers(m, &hdrs) != RD_KAFKA_RESP_ERR_NO_ERROR ||
          rd_kafka_header_get_last(hdrs, "st", &val, &size) != RD_KAFKA_RESP_ERR_NO_ERROR ||
          !decode_st_header(val, size, &st)) {
        int64_t now = mono_ns();
        if (now - warned_ns_ > 10'000'000'000) {
          warned_ns_ = now;
          log_warn("Failed to process records of " + group_ +
                   ": a record has no 8-byte \"st\" header (written by another tool?)");
        }
        return;  // the batch is neither counted nor throttled
      }
      have_st = true;
    }
    ++count;
    bytes += static_cast<int64_t>(m->len);
    ready_->seen(topic_index_, m->partition);
  }
  if (count == 0) return;
  if (pending_offset_.load(std::memory_order_relaxed) >= 0) pending_offset_.store(-1);
  stats_->messages_received(count, bytes, st, wall_ns());
  bucket_->consume(count);
}

void PerfConsumer::close() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
  if (consumer_) {
    consumer_->close();
    consumer_.reset();
  }
}

}  // namespace shale::perf
