#include "perf/result.h"

#include <time.h>

#include <algorithm>
#include <thread>

#include "perf/log.h"
#include "perf/number_format.h"
#include "perf/rate_limiter.h"

namespace shale::perf {
namespace {
constexpr double kNanosPerSec = 1e9;
constexpr double kMicrosPerMilli = 1000.0;
constexpr double kBytesPerMiB = 1 << 20;
constexpr double kBytesPerGiB = 1 << 30;

std::string ms(double micros) { return fmt_latency(micros / kMicrosPerMilli); }
}  // namespace

PeriodResult make_period_result(const PeriodStats& s, double elapsed, int groups) {
  PeriodResult r;
  r.produce_rate = static_cast<double>(s.messages_sent) / elapsed;
  r.produce_throughput_bps = static_cast<double>(s.bytes_sent) / elapsed;
  r.error_rate = static_cast<double>(s.messages_send_failed) / elapsed;
  r.consume_rate = static_cast<double>(s.messages_received) / elapsed;
  r.consume_throughput_bps = static_cast<double>(s.bytes_received) / elapsed;
  r.backlog = std::max<int64_t>(0, groups * s.total_messages_sent - s.total_messages_received);
  r.send = s.send_latency;
  r.e2e = s.e2e_latency;
  return r;
}

std::string format_period_line(const PeriodResult& r, double elapsed_total) {
  return fmt_duration(elapsed_total) + "s | Prod rate " + fmt_rate(r.produce_rate) + " msg/s / " +
         fmt_throughput(r.produce_throughput_bps / kBytesPerMiB) + " MiB/s | Prod err " +
         fmt_rate(r.error_rate) + " err/s | Cons rate " + fmt_rate(r.consume_rate) + " msg/s / " +
         fmt_throughput(r.consume_throughput_bps / kBytesPerMiB) +
         " MiB/s | Backlog: " + fmt_count(static_cast<double>(r.backlog) / 1000.0) +
         " K msg | Prod Latency (ms) avg: " + ms(r.send.mean) + " - 50%: " + ms(r.send.p50) +
         " - 99%: " + ms(r.send.p99) + " - 99.9%: " + ms(r.send.p999) +
         " - Max: " + ms(r.send.max) + " | E2E Latency (ms) avg: " + ms(r.e2e.mean) +
         " - 50%: " + ms(r.e2e.p50) + " - 99%: " + ms(r.e2e.p99) + " - 99.9%: " + ms(r.e2e.p999) +
         " - Max: " + ms(r.e2e.max);
}

CumulativeResult make_cumulative_result(const CumulativeStats& s, double t) {
  CumulativeResult r;
  r.produce_rate_total = static_cast<double>(s.total_messages_sent) / t;
  r.produce_throughput_total_bps = static_cast<double>(s.total_bytes_sent) / t;
  r.produce_count_total = static_cast<double>(s.total_messages_sent);
  r.produce_size_total_bytes = static_cast<double>(s.total_bytes_sent);
  r.produce_error_total = static_cast<double>(s.total_messages_send_failed);
  r.consume_rate_total = static_cast<double>(s.total_messages_received) / t;
  r.consume_throughput_total_bps = static_cast<double>(s.total_bytes_received) / t;
  r.consume_count_total = static_cast<double>(s.total_messages_received);
  r.consume_size_total_bytes = static_cast<double>(s.total_bytes_received);
  r.send = s.send_latency;
  r.e2e = s.e2e_latency;
  r.send_quantiles = s.send_quantiles;
  r.e2e_quantiles = s.e2e_quantiles;
  return r;
}

std::string format_summary_line(const CumulativeResult& r) {
  auto lat = [](const LatencySummary& l) {
    return "avg: " + ms(l.mean) + " - 50%: " + ms(l.p50) + " - 75%: " + ms(l.p75) +
           " - 90%: " + ms(l.p90) + " - 95%: " + ms(l.p95) + " - 99%: " + ms(l.p99) +
           " - 99.9%: " + ms(l.p999) + " - 99.99%: " + ms(l.p9999) + " - Max: " + ms(l.max);
  };
  return "Summary | Prod rate " + fmt_rate(r.produce_rate_total) + " msg/s / " +
         fmt_throughput(r.produce_throughput_total_bps / kBytesPerMiB) + " MiB/s | Prod total " +
         fmt_count(r.produce_count_total / 1e6) + " M msg / " +
         fmt_count(r.produce_size_total_bytes / kBytesPerGiB) + " GiB / " +
         fmt_count(r.produce_error_total / 1000.0) + " K err | Cons rate " +
         fmt_rate(r.consume_rate_total) + " msg/s / " +
         fmt_throughput(r.consume_throughput_total_bps / kBytesPerMiB) + " MiB/s | Cons total " +
         fmt_count(r.consume_count_total / 1e6) + " M msg / " +
         fmt_count(r.consume_size_total_bytes / kBytesPerGiB) + " GiB | Prod Latency (ms) " +
         lat(r.send) + " | E2E Latency (ms) " + lat(r.e2e);
}

Result collect(Stats& stats, const StopCondition& stop, int64_t interval_ns, int groups,
               const PeriodHook& hook) {
  Result result;
  const int64_t start = mono_ns();
  result.start_ms = wall_ns() / 1'000'000;
  int64_t last = start;
  while (true) {
    std::this_thread::sleep_for(std::chrono::nanoseconds(interval_ns / 1'000'000 * 1'000'000));
    PeriodStats ps = stats.period();
    double elapsed = static_cast<double>(ps.now_ns - last) / kNanosPerSec;
    double elapsed_total = static_cast<double>(ps.now_ns - start) / kNanosPerSec;
    PeriodResult pr = make_period_result(ps, elapsed, groups);
    result.time_secs.push_back(elapsed_total);
    result.periods.push_back(pr);
    log_info(format_period_line(pr, elapsed_total));
    if (hook) hook(pr, elapsed);
    if (stop(start, ps.now_ns)) {
      CumulativeStats cs = stats.cumulative();
      double t = static_cast<double>(cs.now_ns - start) / kNanosPerSec;
      result.total = make_cumulative_result(cs, t);
      log_info(format_summary_line(result.total));
      break;
    }
    last = ps.now_ns;
  }
  return result;
}

Json config_json(const PerfConfig& c) {
  auto map_json = [](const ConfigMap& m) {
    Json o = Json::object();
    for (const auto& [k, v] : m) o.set(k, Json::string(v));
    return o;
  };
  auto opt = [](const std::optional<std::string>& s) {
    return s ? Json::string(*s) : Json::null();
  };
  Json j = Json::object();
  j.set("bootstrapServer", Json::string(c.bootstrap_server))
      .set("commonConfigs", map_json(c.common_configs))
      .set("topicConfigs", map_json(c.topic_configs))
      .set("producerConfigs", map_json(c.producer_configs))
      .set("consumerConfigs", map_json(c.consumer_configs))
      .set("reset", Json::boolean(c.reset))
      .set("topicPrefix", Json::string(c.topic_prefix))
      .set("topics", Json::integer(c.topics))
      .set("partitionsPerTopic", Json::integer(c.partitions_per_topic))
      .set("producersPerTopic", Json::integer(c.producers_per_topic))
      .set("groupsPerTopic", Json::integer(c.groups_per_topic))
      .set("consumersPerGroup", Json::integer(c.consumers_per_group))
      .set("awaitTopicReady", Json::boolean(c.await_topic_ready))
      .set("recordSize", Json::integer(c.record_size))
      .set("randomRatio", Json::number(c.random_ratio))
      .set("randomPoolSize", Json::integer(c.random_pool_size))
      .set("sendRate", Json::integer(c.send_rate))
      .set("sendRateDuringCatchup", Json::integer(c.send_rate_during_catchup))
      .set("maxConsumeRecordRate", Json::integer(c.max_consume_record_rate))
      .set("backlogDurationSeconds", Json::integer(c.backlog_duration_seconds))
      .set("groupStartDelaySeconds", Json::integer(c.group_start_delay_seconds))
      .set("warmupDurationMinutes", Json::integer(c.warmup_duration_minutes))
      .set("consumersDuringCatchupPercentage", Json::integer(c.consumers_during_catchup_percentage))
      .set("testDurationMinutes", Json::integer(c.test_duration_minutes))
      .set("reportingIntervalSeconds", Json::integer(c.reporting_interval_seconds))
      .set("valueSchema", opt(c.value_schema))
      .set("valuesFile", opt(c.values_file))
      .set("reuseTopics", Json::boolean(c.reuse_topics))
      .set("catchupTopicPrefix", opt(c.catchup_topic_prefix));
  return j;
}

Json result_json(const PerfConfig& c, const Result& r) {
  Json j = Json::object();
  j.set("config", config_json(c)).set("startMs", Json::integer(r.start_ms));
  const CumulativeResult& t = r.total;
  auto num = [](double d) { return Json::number(d); };
  j.set("produceRateTotal", num(t.produce_rate_total))
      .set("produceThroughputTotalBps", num(t.produce_throughput_total_bps))
      .set("produceCountTotal", num(t.produce_count_total))
      .set("produceSizeTotalBytes", num(t.produce_size_total_bytes))
      .set("produceErrorTotal", num(t.produce_error_total))
      .set("consumeRateTotal", num(t.consume_rate_total))
      .set("consumeThroughputTotalBps", num(t.consume_throughput_total_bps))
      .set("consumeCountTotal", num(t.consume_count_total))
      .set("consumeSizeTotalBytes", num(t.consume_size_total_bytes));
  auto totals = [&](const std::string& p, const LatencySummary& l) {
    j.set(p + "MeanTotalMicros", num(l.mean))
        .set(p + "50thTotalMicros", num(l.p50))
        .set(p + "75thTotalMicros", num(l.p75))
        .set(p + "90thTotalMicros", num(l.p90))
        .set(p + "95thTotalMicros", num(l.p95))
        .set(p + "99thTotalMicros", num(l.p99))
        .set(p + "999thTotalMicros", num(l.p999))
        .set(p + "9999thTotalMicros", num(l.p9999))
        .set(p + "MaxTotalMicros", num(l.max));
  };
  totals("produceLatency", t.send);
  totals("endToEndLatency", t.e2e);
  auto arr = [&](auto getter) {
    Json a = Json::array();
    for (const auto& p : r.periods) a.push(num(getter(p)));
    return a;
  };
  Json ts = Json::array();
  for (double s : r.time_secs) ts.push(num(s));
  j.set("timeSecs", std::move(ts))
      .set("produceRate", arr([](const PeriodResult& p) { return p.produce_rate; }))
      .set("produceThroughputBps",
           arr([](const PeriodResult& p) { return p.produce_throughput_bps; }))
      .set("errorRate", arr([](const PeriodResult& p) { return p.error_rate; }))
      .set("consumeRate", arr([](const PeriodResult& p) { return p.consume_rate; }))
      .set("consumeThroughputBps",
           arr([](const PeriodResult& p) { return p.consume_throughput_bps; }));
  Json backlog = Json::array();
  for (const auto& p : r.periods) backlog.push(Json::integer(p.backlog));
  j.set("backlog", std::move(backlog));
  auto periods = [&](const std::string& pre, LatencySummary PeriodResult::*m,
                     const std::map<double, int64_t>& quantiles) {
    auto f = [&](double LatencySummary::*field) {
      Json a = Json::array();
      for (const auto& p : r.periods) a.push(num((p.*m).*field));
      return a;
    };
    j.set(pre + "MeanMicros", f(&LatencySummary::mean))
        .set(pre + "MinMicros", f(&LatencySummary::min))
        .set(pre + "50thMicros", f(&LatencySummary::p50))
        .set(pre + "75thMicros", f(&LatencySummary::p75))
        .set(pre + "90thMicros", f(&LatencySummary::p90))
        .set(pre + "95thMicros", f(&LatencySummary::p95))
        .set(pre + "99thMicros", f(&LatencySummary::p99))
        .set(pre + "999thMicros", f(&LatencySummary::p999))
        .set(pre + "9999thMicros", f(&LatencySummary::p9999))
        .set(pre + "MaxMicros", f(&LatencySummary::max));
    Json q = Json::object();
    for (const auto& [k, v] : quantiles) q.set(java_double(k), Json::integer(v));
    j.set(pre + "QuantilesMicros", std::move(q));
  };
  periods("produceLatency", &PeriodResult::send, t.send_quantiles);
  periods("endToEndLatency", &PeriodResult::e2e, t.e2e_quantiles);
  return j;
}

std::string result_file_name(long epoch_seconds) {
  return "perf-" + local_time_string(epoch_seconds, "%Y-%m-%d-%H-%M-%S") + ".json";
}

}  // namespace shale::perf
