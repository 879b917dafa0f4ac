#include "perf/runner.h"

#include <time.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <random>
#include <thread>

#include "perf/avro_payload.h"
#include "perf/client_config.h"
#include "perf/cpu_monitor.h"
#include "perf/html_report.h"
#include "perf/kafka_clients.h"
#include "perf/log.h"
#include "perf/number_format.h"
#include "perf/payload.h"
#include "perf/rate_limiter.h"
#include "perf/result.h"
#include "perf/schema_registry.h"

namespace shale::perf {
namespace {

constexpr int64_t kRateRebuildMs = 5000;
constexpr int64_t kReadyTimeoutMs = 120000;
constexpr int kKeyCount = 16384;

int64_t now_ms() { return wall_ns() / 1'000'000; }

std::string pad(int v, int width) {
  char b[32];
  std::snprintf(b, sizeof b, "%0*d", width, v);
  return b;
}

uint64_t splitmix(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// Producers plus their sending threads, the shared limiter and its 5-second rebuild task.
class ProducerService {
 public:
  ProducerService(std::vector<std::unique_ptr<PerfProducer>>& producers, DeliveryContext* ctx)
      : producers_(producers), ctx_(ctx) {}
  ~ProducerService() { stop(); }

  // pools[i] holds the payloads of producers_[i] (one pool for all in raw mode, one per topic
  // in Avro mode).
  void start(std::vector<const PayloadPool*> pools, const std::vector<std::string>* keys,
             double rate) {
    pools_ = std::move(pools);
    keys_ = keys;
    schedule_.set_default(rate);
    rebuild();
    size_t n = producers_.size();
    size_t cores = std::max(1u, std::thread::hardware_concurrency());
    size_t shard = std::max<size_t>(1, n / cores);
    for (size_t i = 0; i < n; i += shard) {
      size_t end = std::min(n, i + shard);
      threads_.emplace_back([this, i, end] { send_loop(i, end); });
    }
    rebuilder_ = std::thread([this] {
      std::unique_lock lk(mu_);
      while (!cv_.wait_for(lk, std::chrono::milliseconds(kRateRebuildMs),
                           [this] { return stop_.load(); })) {
        lk.unlock();
        rebuild();
        lk.lock();
      }
    });
  }

  void set_default_rate(double rate) {
    schedule_.set_default(rate);
    rebuild();
  }
  void add_rate_point(int64_t t_ms, double rate) { schedule_.add_point(t_ms, rate); }
  void rebuild() {
    double rate = schedule_.rate_at(now_ms());
    std::atomic_store(&limiter_, std::make_shared<UniformRateLimiter>(std::max(rate, 1e-3)));
  }
  // Largest lag (ns) of a sending thread behind its slot since the last call.
  int64_t take_max_lag_ns() { return max_lag_ns_.exchange(0); }
  double current_rate() const { return std::atomic_load(&limiter_)->rate(); }

  void stop() {
    if (stop_.exchange(true)) return;
    cv_.notify_all();
    if (rebuilder_.joinable()) rebuilder_.join();
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

 private:
  void send_loop(size_t begin, size_t end) {
    uint64_t seed = static_cast<uint64_t>(wall_ns()) ^ (begin * 0x9E3779B97F4A7C15ULL);
    while (!stop_.load(std::memory_order_relaxed)) {
      for (size_t i = begin; i < end && !stop_.load(std::memory_order_relaxed); ++i) {
        auto lim = std::atomic_load(&limiter_);
        int64_t now = mono_ns();
        int64_t intended = lim->acquire(now);
        if (now > intended) {
          int64_t lag = now - intended;
          int64_t cur = max_lag_ns_.load(std::memory_order_relaxed);
          while (lag > cur && !max_lag_ns_.compare_exchange_weak(cur, lag)) {
          }
        }
        // Sleep in slices so that stop() is not held up by slow (warmup) rates.
        while (!stop_.load(std::memory_order_relaxed)) {
          int64_t t = mono_ns();
          if (t >= intended) break;
          sleep_until_ns(std::min(intended, t + 100'000'000));
        }
        if (stop_.load(std::memory_order_relaxed)) break;
        uint64_t r = splitmix(seed);
        const PayloadPool* pool = pools_[i];
        const std::string& payload = pool->at(pool->size() == 1 ? 0 : (r >> 32) % pool->size());
        const std::string& key = (*keys_)[(r >> 8) % keys_->size()];
        producers_[i]->send(payload, key, splitmix(seed));
      }
    }
  }

  std::vector<std::unique_ptr<PerfProducer>>& producers_;
  DeliveryContext* ctx_;
  std::vector<const PayloadPool*> pools_;
  const std::vector<std::string>* keys_ = nullptr;
  RateSchedule schedule_;
  std::shared_ptr<UniformRateLimiter> limiter_ = std::make_shared<UniformRateLimiter>(1.0);
  std::atomic<int64_t> max_lag_ns_{0};
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::thread rebuilder_;
  std::vector<std::thread> threads_;
};

// Warns when the tool itself may be the bottleneck (tutorial advice: client CPU < 70 %).
class SelfWatch {
 public:
  explicit SelfWatch(ProducerService* producers) : producers_(producers) {}
  void on_period(const PeriodResult&, double) {
    auto cpu = cpu_.sample();
    if (cpu) cpu_history_.push_back(*cpu);
    int64_t lag = producers_ ? producers_->take_max_lag_ns() : 0;
    int64_t now = mono_ns();
    if (now - last_warn_ns_ < 10'000'000'000) return;
    auto warnings = bottleneck_warnings(cpu, cpu_.core_budget(), lag);
    if (warnings.empty()) return;
    last_warn_ns_ = now;
    for (const auto& w : warnings) log_warn(w);
  }
  void reset_history() { cpu_history_.clear(); }
  const std::vector<double>& cpu_history() const { return cpu_history_; }

 private:
  ProducerService* producers_;
  CpuMonitor cpu_;
  std::vector<double> cpu_history_;
  int64_t last_warn_ns_ = 0;
};

void wait_consumers_assigned(const std::vector<std::unique_ptr<PerfConsumer>>& consumers) {
  int64_t next_log = mono_ns() + 10'000'000'000;
  while (true) {
    size_t ok = 0;
    for (const auto& c : consumers) ok += c->assigned() ? 1 : 0;
    if (ok == consumers.size()) return;
    if (mono_ns() > next_log) {
      log_info("Waiting for consumers to be assigned... " + std::to_string(ok) + "/" +
               std::to_string(consumers.size()));
      next_log = mono_ns() + 10'000'000'000;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

void send_probe_round(std::vector<std::unique_ptr<PerfProducer>>& producers, DeliveryContext* ctx) {
  int64_t failed_before = ctx->probes_failed.load();
  for (auto& p : producers) {
    for (int part = 0; part < p->partitions(); ++part) p->send_probe(part);
  }
  while (ctx->probes_pending.load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  if (ctx->probes_failed.load() != failed_before) {
    throw PerfError("Failed to send probe records to all partitions");
  }
}

void wait_topics_ready(const PerfConfig& cfg, std::vector<std::unique_ptr<PerfProducer>>& producers,
                       DeliveryContext* ctx, ReadinessTracker* ready, Stats* stats) {
  int64_t start = now_ms();
  const int64_t expected = static_cast<int64_t>(cfg.topics) * cfg.partitions_per_topic;
  if (cfg.groups_per_topic > 0) {
    while (true) {
      send_probe_round(producers, ctx);
      int64_t received = ready->count();
      log_info("Waiting for topics to be ready... sent: " + std::to_string(expected) +
               ", received: " + std::to_string(received));
      if (received >= expected) break;
      if (now_ms() - start > kReadyTimeoutMs)
        throw PerfError("Timeout waiting for topics to be ready");
      std::this_thread::sleep_for(std::chrono::seconds(5));
    }
  } else {
    send_probe_round(producers, ctx);
    std::this_thread::sleep_for(std::chrono::seconds(30));
  }
  log_info("Topics are ready, took " + std::to_string(now_ms() - start) + " ms");
  stats->reset();
}

StopCondition after_seconds(double s) {
  return [s](int64_t start, int64_t now) { return static_cast<double>(now - start) >= s * 1e9; };
}

}  // namespace

std::string perf_topic_name(const std::string& prefix, int partitions, int index) {
  return "__automq_perf_" + prefix + "_" + pad(partitions, 4) + "_" + pad(index, 7);
}

double warmup_rate(int64_t t_ms, int64_t warmup_ms, double rate) {
  RateSchedule s;
  s.set_default(rate);
  s.add_point(0, 1.0);
  s.add_point(warmup_ms / 2, rate);
  // The limiter is rebuilt every 5 s, so the rate in force is the one of the last rebuild.
  return s.rate_at(t_ms / kRateRebuildMs * kRateRebuildMs);
}

int run_perf(const PerfConfig& cfg) {
  log_info("Starting perf test with config: " + config_json(cfg).pretty());
  ClientSettings admin_s, producer_s, consumer_s;
  for (auto [role, m, out] :
       {std::tuple{ClientRole::kAdmin, &cfg.common_configs, &admin_s},
        std::tuple{ClientRole::kProducer, &cfg.producer_configs, &producer_s},
        std::tuple{ClientRole::kConsumer, &cfg.consumer_configs, &consumer_s}}) {
    std::string err =
        translate_client_config(role, cfg.bootstrap_server, cfg.common_configs, *m, out);
    if (!err.empty()) {
      log_error("Invalid client configuration: " + err);
      return 1;
    }
  }
  if (cfg.partitions_per_topic > 128 || cfg.partitions_per_topic > 4 * cfg.send_rate) {
    log_warn("Many partitions per producer (" + std::to_string(cfg.partitions_per_topic) +
             "): records spread thinly and batch poorly; consider --partitions-per-topic <= 128, "
             "or a larger --record-size with a lower --send-rate");
  }

  Stats stats;
  DeliveryContext dctx;
  // Outlive the sending threads and every in-flight record: librdkafka references the pooled
  // payloads without copying them.
  std::vector<std::unique_ptr<PayloadPool>> pools;
  std::vector<std::string> keys;
  dctx.stats = &stats;
  std::vector<std::unique_ptr<PerfConsumer>> consumers;
  std::vector<std::unique_ptr<PerfProducer>> producers;
  std::unique_ptr<ProducerService> service;
  std::unique_ptr<ReadinessTracker> ready;
  std::unique_ptr<TokenBucket> bucket;
  int rc = 0;
  try {
    // Make sure the client property sets are valid before touching the cluster.
    make_conf(producer_s, "producer");
    make_conf(consumer_s, "consumer");
    // Avro mode: a bad schema or values file stops the run before the cluster is touched.
    std::unique_ptr<AvroSchema> avro;
    std::vector<std::string> avro_values;
    SchemaRegistryConfig registry;
    if (cfg.value_schema) {
      avro = std::make_unique<AvroSchema>(*cfg.value_schema);
      registry = schema_registry_config(cfg.producer_configs);
      if (cfg.values_file) avro_values = avro->values_from_file(*cfg.values_file);
    }
    TopicAdmin admin(admin_s);
    if (cfg.reset) {
      int64_t t0 = now_ms();
      int n = admin.delete_perf_topics();
      log_info("Deleted " + std::to_string(n) + " topics, took " + std::to_string(now_ms() - t0) +
               " ms");
    }
    // Topic selection.
    std::vector<std::string> topics;
    std::vector<int> partitions;
    bool catchup_prefix_mode = cfg.catchup_topic_prefix && !cfg.catchup_topic_prefix->empty();
    if (catchup_prefix_mode) {
      auto found = admin.find_topics("__automq_perf_" + *cfg.catchup_topic_prefix);
      if (found.empty())
        throw PerfError("No catch-up topics found with prefix: " + *cfg.catchup_topic_prefix);
      for (auto& [n, p] : found) {
        topics.push_back(n);
        partitions.push_back(p);
      }
      log_info("Found " + std::to_string(topics.size()) + " catch-up topics");
    } else {
      if (cfg.reuse_topics) {
        auto found = admin.find_topics("__automq_perf_" + cfg.topic_prefix);
        for (auto& [n, p] : found) {
          topics.push_back(n);
          partitions.push_back(p);
        }
        if (topics.empty()) {
          log_warn("No topics found with prefix " + cfg.topic_prefix + ", creating new topics");
        } else {
          log_info("Reusing " + std::to_string(topics.size()) + " topics");
        }
      }
      if (topics.empty()) {
        int64_t t0 = now_ms();
        for (int i = 0; i < cfg.topics; ++i) {
          topics.push_back(perf_topic_name(cfg.topic_prefix, cfg.partitions_per_topic, i));
          partitions.push_back(cfg.partitions_per_topic);
        }
        admin.create_topics(topics, cfg.partitions_per_topic, cfg.topic_configs);
        log_info("Created " + std::to_string(topics.size()) + " topics, took " +
                 std::to_string(now_ms() - t0) + " ms");
      }
    }

    // Consumers first (auto.offset.reset=latest), then producers.
    ready = std::make_unique<ReadinessTracker>(partitions);
    bucket = std::make_unique<TokenBucket>(cfg.max_consume_record_rate);
    int64_t t0 = now_ms();
    for (int g = 0; g < cfg.groups_per_topic; ++g) {
      for (size_t t = 0; t < topics.size(); ++t) {
        std::string group = "sub-" + topics[t] + "-" + pad(g, 3);
        for (int c = 0; c < cfg.consumers_per_group; ++c) {
          consumers.push_back(std::make_unique<PerfConsumer>(
              consumer_s, topics[t], static_cast<int>(t), partitions[t], group, &stats, ready.get(),
              bucket.get()));
        }
      }
    }
    for (auto& c : consumers) c->start();
    wait_consumers_assigned(consumers);
    log_info("Created " + std::to_string(consumers.size()) + " consumers, took " +
             std::to_string(now_ms() - t0) + " ms");
    t0 = now_ms();
    for (size_t t = 0; t < topics.size(); ++t) {
      for (int p = 0; p < cfg.producers_per_topic; ++p) {
        producers.push_back(
            std::make_unique<PerfProducer>(producer_s, topics[t], partitions[t], &dctx));
      }
    }
    log_info("Created " + std::to_string(producers.size()) + " producers, took " +
             std::to_string(now_ms() - t0) + " ms");

    if (cfg.await_topic_ready && !catchup_prefix_mode) {
      wait_topics_ready(cfg, producers, &dctx, ready.get(), &stats);
    }

    std::random_device rd;
    std::vector<const PayloadPool*> producer_pools;
    if (avro && !catchup_prefix_mode) {
      // One pool per topic, framed with the id the registry gives the subject <topic>-value.
      std::mt19937_64 rng((static_cast<uint64_t>(rd()) << 32) | rd());
      for (const auto& topic : topics) {
        int32_t id = register_schema(registry, topic + "-value", *cfg.value_schema);
        std::vector<std::string> framed;
        for (const auto& body :
             cfg.values_file ? avro_values : avro->random_values(cfg.random_pool_size, rng)) {
          framed.push_back(confluent_frame(id, body));
        }
        pools.push_back(std::make_unique<PayloadPool>(std::move(framed)));
      }
      log_info("Registered the value schema for " + std::to_string(topics.size()) + " topics; " +
               std::to_string(pools.front()->size()) + " Avro values per topic");
      for (size_t t = 0; t < topics.size(); ++t) {
        for (int p = 0; p < cfg.producers_per_topic; ++p) producer_pools.push_back(pools[t].get());
      }
    } else {
      pools.push_back(std::make_unique<PayloadPool>(cfg.record_size, cfg.random_ratio,
                                                    cfg.random_pool_size,
                                                    (static_cast<uint64_t>(rd()) << 32) | rd()));
      producer_pools.assign(producers.size(), pools.front().get());
    }
    keys = make_keys(kKeyCount, (static_cast<uint64_t>(rd()) << 32) | rd());
    service = std::make_unique<ProducerService>(producers, &dctx);
    SelfWatch watch(catchup_prefix_mode ? nullptr : service.get());
    auto hook = [&](const PeriodResult& r, double e) { watch.on_period(r, e); };
    const int64_t interval_ns =
        static_cast<int64_t>(cfg.reporting_interval_seconds) * 1'000'000'000;

    if (!catchup_prefix_mode) {
      service->start(producer_pools, &keys, cfg.send_rate);
      if (cfg.warmup_duration_minutes > 0) {
        log_info("Warming up for " + std::to_string(cfg.warmup_duration_minutes) + " minutes...");
        int64_t ws = now_ms();
        service->add_rate_point(ws, 1.0);
        service->add_rate_point(ws + static_cast<int64_t>(cfg.warmup_duration_minutes) * 60000 / 2,
                                cfg.send_rate);
        service->rebuild();
        collect(stats, after_seconds(cfg.warmup_duration_minutes * 60.0), interval_ns,
                cfg.groups_per_topic, hook);
      }
    }

    Result result;
    if (cfg.backlog_duration_seconds > 0) {
      log_info("Pausing consumers for " + std::to_string(cfg.backlog_duration_seconds) +
               " seconds to build up backlog...");
      for (auto& c : consumers) c->pause();
      int64_t backlog_start_ms = now_ms();
      collect(stats, after_seconds(cfg.backlog_duration_seconds), interval_ns, cfg.groups_per_topic,
              hook);
      const int64_t backlog_end_ns = wall_ns();
      log_info("Resetting consumer offsets and resuming...");
      // Group i restarts i * G seconds into the backlog; one partition's offset stands for all.
      std::vector<int64_t> offsets;
      for (int g = 0; g < cfg.groups_per_topic; ++g) {
        int64_t ts =
            backlog_start_ms + static_cast<int64_t>(g) * cfg.group_start_delay_seconds * 1000;
        int64_t off;
        try {
          off = admin.offset_for_time(topics[0], 0, ts);
        } catch (const PerfError& e) {
          throw PerfError(std::string("Failed to list or reset consumer offsets: ") + e.what());
        }
        offsets.push_back(off);
        for (size_t t = 0; t < topics.size(); ++t) {
          std::string group = "sub-" + topics[t] + "-" + pad(g, 3);
          // The group must be empty; members leave once max.poll.interval.ms has passed
          // without polling, so retry for a while before giving up.
          std::string err;
          for (int attempt = 0; attempt < 13; ++attempt) {
            err = admin.alter_group_offsets(group, topics[t], partitions[t], off);
            if (err.empty()) break;
            std::this_thread::sleep_for(std::chrono::seconds(5));
          }
          if (!err.empty())
            throw PerfError("Failed to list or reset consumer offsets: " + group + ": " + err);
        }
        log_info("Reset offsets of group " + std::to_string(g) + " to " + std::to_string(off) +
                 " (timestamp " + std::to_string(ts) + ")");
      }
      // Topics whose consumers resume.
      int n = static_cast<int>(std::ceil(static_cast<double>(topics.size()) *
                                         cfg.consumers_during_catchup_percentage / 100.0));
      n = std::clamp(n, 1, static_cast<int>(topics.size()));
      std::vector<std::string> shuffled = topics;
      std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(rd()));
      shuffled.resize(static_cast<size_t>(n));
      std::string list;
      for (const auto& s : shuffled) list += (list.empty() ? "" : ", ") + s;
      log_info("Resuming consumers of " + std::to_string(n) + " topics: " + list);
      int kept = 0;
      for (auto& c : consumers) {
        if (std::find(shuffled.begin(), shuffled.end(), c->topic()) == shuffled.end()) {
          ++kept;
          continue;
        }
        size_t g = static_cast<size_t>(std::atoi(c->group().substr(c->group().size() - 3).c_str()));
        c->resume(offsets[g]);
      }
      if (kept > 0) log_info(std::to_string(kept) + " consumers stay paused");
      stats.reset();
      watch.reset_history();
      service->set_default_rate(cfg.send_rate_during_catchup);
      log_info("Running catch-up test until consumers reach the end of the backlog...");
      result = collect(
          stats, [&](int64_t, int64_t) { return stats.max_send_time_ns.load() >= backlog_end_ns; },
          interval_ns, cfg.groups_per_topic, hook);
    } else {
      log_info("Running test for " + std::to_string(cfg.test_duration_minutes) + " minutes...");
      stats.reset();
      watch.reset_history();
      result = collect(stats, after_seconds(cfg.test_duration_minutes * 60.0), interval_ns,
                       cfg.groups_per_topic, hook);
    }

    std::string file = result_file_name(static_cast<long>(time(nullptr)));
    log_info("Saving results to " + file);
    {
      std::ofstream out(file);
      out << result_json(cfg, result).pretty();
      if (!out) log_error("Failed to write " + file);
    }
    if (cfg.html_file) {
      std::ofstream out(*cfg.html_file);
      out << html_report(cfg, result, watch.cpu_history());
      if (!out) {
        log_error("Failed to write " + *cfg.html_file);
      } else {
        log_info("Saved HTML report to " + *cfg.html_file);
      }
    }
  } catch (const std::exception& e) {
    log_error(e.what());
    rc = 1;
  }
  // Shutdown order of the original: send loops, producers (waiting for in-flight), consumers.
  if (service) service->stop();
  for (auto& p : producers) p->close(rc == 0 ? 30000 : 5000);
  producers.clear();
  for (auto& c : consumers) c->close();
  consumers.clear();
  return rc;
}

}  // namespace shale::perf
