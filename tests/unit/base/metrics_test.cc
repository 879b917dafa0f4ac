// base/metrics: the registry's Prometheus text exposition (HELP/TYPE once per family, labels
// escaped, histogram buckets cumulative with +Inf, _sum and _count) and scrape-time collectors.
#include "base/metrics.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

namespace shale::metrics {
namespace {

bool has_line(const std::string& text, const std::string& line) {
  return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

TEST(Metrics, CountersAndGaugesAreExposedWithTheirLabels) {
  Registry r;
  r.counter("requests_total", "Requests", {{"api", "Produce"}}).inc(3);
  r.counter("requests_total", "Requests", {{"api", "Fetch"}}).inc();
  r.gauge("open_things", "Open things").set(-2);
  const std::string t = r.expose();
  EXPECT_TRUE(has_line(t, "# HELP requests_total Requests")) << t;
  EXPECT_TRUE(has_line(t, "# TYPE requests_total counter")) << t;
  EXPECT_TRUE(has_line(t, "requests_total{api=\"Produce\"} 3")) << t;
  EXPECT_TRUE(has_line(t, "requests_total{api=\"Fetch\"} 1")) << t;
  EXPECT_TRUE(has_line(t, "# TYPE open_things gauge")) << t;
  EXPECT_TRUE(has_line(t, "open_things -2")) << t;
  // One HELP per family.
  EXPECT_EQ(t.find("# HELP requests_total"), t.rfind("# HELP requests_total"));
}

TEST(Metrics, TheSameChildIsReturnedForTheSameLabels) {
  Registry r;
  Counter& a = r.counter("c_total", "c", {{"k", "v"}});
  Counter& b = r.counter("c_total", "c", {{"k", "v"}});
  EXPECT_EQ(&a, &b);
  EXPECT_THROW(r.gauge("c_total", "c"), std::logic_error);  // one type per name
}

TEST(Metrics, LabelValuesAreEscaped) {
  Registry r;
  r.counter("x_total", "x", {{"topic", "a\"b\\c\nd"}}).inc();
  EXPECT_TRUE(has_line(r.expose(), "x_total{topic=\"a\\\"b\\\\c\\nd\"} 1")) << r.expose();
}

TEST(Metrics, HistogramBucketsAreCumulative) {
  Registry r;
  Histogram& h = r.histogram("lat_seconds", "latency", {{"api", "P"}});
  h.observe(0.0002);  // first bucket
  h.observe(0.003);   // le=0.005
  h.observe(0.003);
  h.observe(42);  // only +Inf
  const std::string t = r.expose();
  EXPECT_TRUE(has_line(t, "# TYPE lat_seconds histogram")) << t;
  EXPECT_TRUE(has_line(t, "lat_seconds_bucket{api=\"P\",le=\"0.0005\"} 1")) << t;
  EXPECT_TRUE(has_line(t, "lat_seconds_bucket{api=\"P\",le=\"0.0025\"} 1")) << t;
  EXPECT_TRUE(has_line(t, "lat_seconds_bucket{api=\"P\",le=\"0.005\"} 3")) << t;
  EXPECT_TRUE(has_line(t, "lat_seconds_bucket{api=\"P\",le=\"10\"} 3")) << t;
  EXPECT_TRUE(has_line(t, "lat_seconds_bucket{api=\"P\",le=\"+Inf\"} 4")) << t;
  EXPECT_TRUE(has_line(t, "lat_seconds_count{api=\"P\"} 4")) << t;
  EXPECT_TRUE(has_line(t, "lat_seconds_sum{api=\"P\"} 42.0062")) << t;
}

TEST(Metrics, CollectorsRunAtScrapeTimeAndCanBeRemoved) {
  Registry r;
  int scrapes = 0;
  int id = r.add_collector([&](Sink& s) {
    ++scrapes;
    s.gauge("cache_bytes", "Cache", {}, 1024);
    s.counter("puts_total", "Puts", {{"op", "put"}}, 7);
  });
  std::string t = r.expose();
  EXPECT_EQ(scrapes, 1);
  EXPECT_TRUE(has_line(t, "# TYPE cache_bytes gauge")) << t;
  EXPECT_TRUE(has_line(t, "cache_bytes 1024")) << t;
  EXPECT_TRUE(has_line(t, "puts_total{op=\"put\"} 7")) << t;
  r.remove_collector(id);
  EXPECT_EQ(r.expose().find("cache_bytes"), std::string::npos);
}

TEST(Metrics, ConcurrentIncrementsAreNotLost) {
  Registry r;
  Counter& c = r.counter("n_total", "n");
  std::vector<std::thread> ts;
  for (int i = 0; i < 4; ++i) {
    ts.emplace_back([&] {
      for (int j = 0; j < 10000; ++j) c.inc();
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(c.value(), 40000u);
}

}  // namespace
}  // namespace shale::metrics
