#include "perf/result.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>

#include "perf/html_report.h"
#include "perf/json.h"
#include "perf/log.h"

namespace shale::perf {
namespace {

std::string collapse(const std::string& s) { return std::regex_replace(s, std::regex(" +"), " "); }

LatencySummary lat(double mean, double p50, double p99, double p999, double max) {
  LatencySummary l;
  l.count = 1;
  l.mean = mean;
  l.p50 = p50;
  l.p99 = p99;
  l.p999 = p999;
  l.max = max;
  return l;
}

TEST(PerfResult, PeriodLineReproducesTheTutorialSample) {
  PeriodResult r;
  r.produce_rate = 803.83;
  r.produce_throughput_bps = 50.24 * 1048576;
  r.error_rate = 0;
  r.consume_rate = 2411.49;
  r.consume_throughput_bps = 150.72 * 1048576;
  r.backlog = 0;
  r.send = lat(1519, 1217, 4947, 11263, 11263);
  r.e2e = lat(1979, 1595, 6264, 9451, 9735);
  std::string line = format_period_line(r, 230.0);
  EXPECT_EQ(collapse(" " + line),
            " 230.0s | Prod rate 803.83 msg/s / 50.24 MiB/s | Prod err 0.00 err/s | Cons rate "
            "2411.49 msg/s / 150.72 MiB/s | Backlog: 0.00 K msg | Prod Latency (ms) avg: 1.519 - "
            "50%: 1.217 - 99%: 4.947 - 99.9%: 11.263 - Max: 11.263 | E2E Latency (ms) avg: 1.979 "
            "- 50%: 1.595 - 99%: 6.264 - 99.9%: 9.451 - Max: 9.735");
  // The padded widths of PerfCommand's summary lines (docs/perf-tool.md).
  EXPECT_EQ(line.rfind(" 230.0s | Prod rate    803.83 msg/s /  50.24 MiB/s | ", 0), 0u);
  EXPECT_NE(line.find("| Backlog:   0.00 K msg |"), std::string::npos);
  EXPECT_NE(line.find("avg:     1.519 - 50%:     1.217 -"), std::string::npos);
}

TEST(PerfResult, SummaryLineReproducesTheTutorialSample) {
  CumulativeResult r;
  r.produce_rate_total = 800.78;
  r.produce_throughput_total_bps = 50.05 * 1048576;
  r.produce_count_total = 240000;
  r.produce_size_total_bytes = 14.68 * 1073741824.0;
  r.produce_error_total = 0;
  r.consume_rate_total = 2402.35;
  r.consume_throughput_total_bps = 150.15 * 1048576;
  r.consume_count_total = 720000;
  r.consume_size_total_bytes = 44.03 * 1073741824.0;
  r.send = {1, 1614, 0, 1225, 1601, 2451, 3705, 7150, 16706, 40361, 136785};
  r.e2e = {1, 2126, 0, 1574, 2013, 3230, 4718, 10634, 30488, 46863, 142817};
  EXPECT_EQ(collapse(format_summary_line(r)),
            "Summary | Prod rate 800.78 msg/s / 50.05 MiB/s | Prod total 0.24 M msg / 14.68 GiB "
            "/ 0.00 K err | Cons rate 2402.35 msg/s / 150.15 MiB/s | Cons total 0.72 M msg / "
            "44.03 GiB | Prod Latency (ms) avg: 1.614 - 50%: 1.225 - 75%: 1.601 - 90%: 2.451 - "
            "95%: 3.705 - 99%: 7.150 - 99.9%: 16.706 - 99.99%: 40.361 - Max: 136.785 | E2E "
            "Latency (ms) avg: 2.126 - 50%: 1.574 - 75%: 2.013 - 90%: 3.230 - 95%: 4.718 - 99%: "
            "10.634 - 99.9%: 30.488 - 99.99%: 46.863 - Max: 142.817");
}

TEST(PerfResult, PeriodArithmeticAndBacklog) {
  PeriodStats s;
  s.messages_sent = 1600;
  s.bytes_sent = 1600 * 1024;
  s.messages_send_failed = 2;
  s.messages_received = 3000;
  s.bytes_received = 3000 * 1024;
  s.total_messages_sent = 10000;
  s.total_messages_received = 29000;
  PeriodResult r = make_period_result(s, 2.0, 3);
  EXPECT_EQ(r.produce_rate, 800);
  EXPECT_EQ(r.produce_throughput_bps, 800 * 1024);
  EXPECT_EQ(r.error_rate, 1);
  EXPECT_EQ(r.consume_rate, 1500);
  EXPECT_EQ(r.backlog, 1000);  // 3 groups x 10000 acked - 29000 received
  s.total_messages_received = 40000;
  EXPECT_EQ(make_period_result(s, 2.0, 3).backlog, 0);  // clamped
}

TEST(PerfJson, JacksonDefaultPrettyPrinterLayout) {
  Json j = Json::object();
  Json arr = Json::array();
  arr.push(Json::number(1.0)).push(Json::number(8.35584E7));
  Json inner = Json::object();
  inner.set("x", Json::string("y\"z"));
  j.set("a", Json::integer(1))
      .set("b", std::move(arr))
      .set("c", Json::object())
      .set("d", Json::array())
      .set("e", std::move(inner))
      .set("f", Json::null())
      .set("g", Json::boolean(true));
  EXPECT_EQ(j.pretty(),
            "{\n  \"a\" : 1,\n  \"b\" : [ 1.0, 8.35584E7 ],\n  \"c\" : { },\n  \"d\" : [ ],\n"
            "  \"e\" : {\n    \"x\" : \"y\\\"z\"\n  },\n  \"f\" : null,\n  \"g\" : true\n}");
}

std::vector<std::string> top_level_keys(const std::string& json) {
  std::vector<std::string> keys;
  std::regex re("\n  \"([^\"]+)\" : ");
  for (std::sregex_iterator it(json.begin(), json.end(), re), end; it != end; ++it) {
    keys.push_back((*it)[1]);
  }
  return keys;
}

TEST(PerfJson, ResultFileFieldsInTheOriginalOrder) {
  PerfConfig c;
  c.topic_prefix = "p";
  Result r;
  r.start_ms = 1735689600000;
  PeriodResult pr;
  pr.backlog = 5;
  r.periods = {pr, pr};
  r.time_secs = {1.0, 2.0};
  r.total.send_quantiles = {{50.0, 10}, {100.0, 20}};
  std::string json = result_json(c, r).pretty();
  std::vector<std::string> want = {"config",
                                   "startMs",
                                   "produceRateTotal",
                                   "produceThroughputTotalBps",
                                   "produceCountTotal",
                                   "produceSizeTotalBytes",
                                   "produceErrorTotal",
                                   "consumeRateTotal",
                                   "consumeThroughputTotalBps",
                                   "consumeCountTotal",
                                   "consumeSizeTotalBytes"};
  for (std::string p : {"produceLatency", "endToEndLatency"}) {
    for (std::string s :
         {"Mean", "50th", "75th", "90th", "95th", "99th", "999th", "9999th", "Max"}) {
      want.push_back(p + s + "TotalMicros");
    }
  }
  for (std::string s : {"timeSecs", "produceRate", "produceThroughputBps", "errorRate",
                        "consumeRate", "consumeThroughputBps", "backlog"}) {
    want.push_back(s);
  }
  for (std::string p : {"produceLatency", "endToEndLatency"}) {
    for (std::string s :
         {"Mean", "Min", "50th", "75th", "90th", "95th", "99th", "999th", "9999th", "Max"}) {
      want.push_back(p + s + "Micros");
    }
    want.push_back(p + "QuantilesMicros");
  }
  EXPECT_EQ(top_level_keys(json), want);
  EXPECT_NE(json.find("\"backlog\" : [ 5, 5 ]"), std::string::npos);
  EXPECT_NE(json.find("\"timeSecs\" : [ 1.0, 2.0 ]"), std::string::npos);
  EXPECT_NE(
      json.find(
          "\"produceLatencyQuantilesMicros\" : {\n    \"50.0\" : 10,\n    \"100.0\" : 20\n  }"),
      std::string::npos);
  EXPECT_NE(json.find("\"endToEndLatencyQuantilesMicros\" : { }"), std::string::npos);
  EXPECT_NE(json.find("\"startMs\" : 1735689600000,"), std::string::npos);
  EXPECT_NE(json.find("\"produceCountTotal\" : 0.0,"), std::string::npos);
}

TEST(PerfJson, ConfigObjectOrder) {
  PerfConfig c;
  c.topic_prefix = "p";
  c.common_configs = {{"sasl.password", "secret"}};
  std::string json = config_json(c).pretty();
  std::vector<std::string> want = {"bootstrapServer",
                                   "commonConfigs",
                                   "topicConfigs",
                                   "producerConfigs",
                                   "consumerConfigs",
                                   "reset",
                                   "topicPrefix",
                                   "topics",
                                   "partitionsPerTopic",
                                   "producersPerTopic",
                                   "groupsPerTopic",
                                   "consumersPerGroup",
                                   "awaitTopicReady",
                                   "recordSize",
                                   "randomRatio",
                                   "randomPoolSize",
                                   "sendRate",
                                   "sendRateDuringCatchup",
                                   "maxConsumeRecordRate",
                                   "backlogDurationSeconds",
                                   "groupStartDelaySeconds",
                                   "warmupDurationMinutes",
                                   "consumersDuringCatchupPercentage",
                                   "testDurationMinutes",
                                   "reportingIntervalSeconds",
                                   "valueSchema",
                                   "valuesFile",
                                   "reuseTopics",
                                   "catchupTopicPrefix"};
  EXPECT_EQ(top_level_keys(json), want);
  EXPECT_NE(json.find("\"randomRatio\" : 0.0,"), std::string::npos);
  EXPECT_NE(json.find("\"valueSchema\" : null,"), std::string::npos);
  EXPECT_NE(json.find("\"sasl.password\" : \"secret\""), std::string::npos);  // as the original
}

TEST(PerfLog, PrefixAndFileNameInLocalTime) {
  setenv("TZ", "UTC", 1);
  tzset();
  EXPECT_EQ(log_prefix(1730909823, Level::kInfo), "2024-11-06 16:17:03 - INFO ");
  EXPECT_EQ(log_prefix(1730909823, Level::kWarn), "2024-11-06 16:17:03 - WARN ");
  EXPECT_EQ(result_file_name(1730909823), "perf-2024-11-06-16-17-03.json");
  std::string captured;
  set_log_sink([&](const std::string& l) { captured += l; });
  log_info("Saving results to x");
  set_log_sink(nullptr);
  EXPECT_TRUE(std::regex_match(captured, std::regex("\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d - "
                                                    "INFO Saving results to x\n")));
}

TEST(PerfHtml, SelfContainedWithSvgPlots) {
  PerfConfig c;
  c.topic_prefix = "p";
  Result r;
  PeriodResult pr;
  pr.produce_throughput_bps = 1048576;
  pr.send.p99 = 2000;
  r.periods = {pr, pr, pr};
  r.time_secs = {1, 2, 3};
  std::string html = html_report(c, r, {0.1, 0.2, 0.3});
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  size_t svgs = 0;
  for (size_t p = html.find("<svg"); p != std::string::npos; p = html.find("<svg", p + 1)) ++svgs;
  EXPECT_EQ(svgs, 4u);  // throughput, produce latency, E2E latency, CPU
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);  // nothing loaded from elsewhere
  EXPECT_EQ(html.find("href="), std::string::npos);
  EXPECT_NE(html.find("Produce latency"), std::string::npos);
  EXPECT_NE(html.find("End-to-end latency"), std::string::npos);
}

}  // namespace
}  // namespace shale::perf
