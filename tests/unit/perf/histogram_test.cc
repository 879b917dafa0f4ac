#include "perf/histogram.h"

#include <gtest/gtest.h>

#include "perf/number_format.h"
#include "perf/stats.h"

namespace shale::perf {
namespace {

Histogram make() { return Histogram(Stats::kMaxE2eLatencyMicros, 5); }

TEST(PerfHistogram, EmptyHistogramIsAllZero) {
  Histogram h = make();
  EXPECT_EQ(h.total_count(), 0);
  EXPECT_EQ(h.mean(), 0.0);
  EXPECT_EQ(h.min(), 0);
  EXPECT_EQ(h.max(), 0);
  for (double p : {0.0, 50.0, 99.0, 99.99, 100.0}) EXPECT_EQ(h.value_at_percentile(p), 0);
  EXPECT_TRUE(h.percentile_map(100).empty());
}

TEST(PerfHistogram, LayoutOfFiveSignificantDigits) {
  // 2^18 sub-buckets; (buckets + 1) * 2^17 counts: 11 buckets up to 180 s, 15 up to 1 h.
  EXPECT_EQ(Histogram(Stats::kMaxSendLatencyMicros, 5).counts_length(), 12u * 131072u);
  EXPECT_EQ(make().counts_length(), 16u * 131072u);
  Histogram h = make();
  // Unit-wide buckets below 2^18 = 262144.
  EXPECT_EQ(h.lowest_equivalent(262143), 262143);
  EXPECT_EQ(h.highest_equivalent(262143), 262143);
  // Width 2 in [2^18, 2^19), width 4 in [2^19, 2^20).
  EXPECT_EQ(h.lowest_equivalent(262145), 262144);
  EXPECT_EQ(h.highest_equivalent(262144), 262145);
  EXPECT_EQ(h.median_equivalent(262144), 262145);
  EXPECT_EQ(h.lowest_equivalent(1000001), 1000000);
  EXPECT_EQ(h.highest_equivalent(1000000), 1000003);
  EXPECT_EQ(h.median_equivalent(1000000), 1000002);
}

TEST(PerfHistogram, OneToHundred) {
  Histogram h = make();
  for (int v = 1; v <= 100; ++v) h.record(v);
  EXPECT_EQ(h.total_count(), 100);
  EXPECT_DOUBLE_EQ(h.mean(), 50.5);
  EXPECT_EQ(h.min(), 1);
  EXPECT_EQ(h.max(), 100);
  EXPECT_EQ(h.value_at_percentile(0), 1);
  EXPECT_EQ(h.value_at_percentile(50), 50);  // ceil(nextafter(50) * 100 / 100) = 50th value
  EXPECT_EQ(h.value_at_percentile(75), 75);
  EXPECT_EQ(h.value_at_percentile(90), 90);
  EXPECT_EQ(h.value_at_percentile(99), 99);
  EXPECT_EQ(h.value_at_percentile(99.9), 100);
  EXPECT_EQ(h.value_at_percentile(100), 100);
}

TEST(PerfHistogram, CeilRankNotRounding) {
  // 3 values: p50 needs ceil(1.4999...) = 2 -> the 2nd value (HdrHistogram_c's +0.5 would
  // also say 2, but for p40 ceil(1.2)=2 where rounding would give 1).
  Histogram h = make();
  for (int v : {10, 20, 30}) h.record(v);
  EXPECT_EQ(h.value_at_percentile(50), 20);
  EXPECT_EQ(h.value_at_percentile(40), 20);
  EXPECT_EQ(h.value_at_percentile(33.3), 10);
}

TEST(PerfHistogram, OnePassPercentilesEqualSeparateQueries) {
  Histogram h = make();
  uint64_t x = 12345;
  for (int i = 0; i < 5000; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    h.record(static_cast<int64_t>((x >> 33) % 5'000'000));
  }
  std::vector<double> ps = {0, 50, 75, 90, 95, 99, 99.9, 99.99, 100};
  double mean = -1;
  auto v = h.values_at_percentiles(ps, &mean);
  for (size_t k = 0; k < ps.size(); ++k) EXPECT_EQ(v[k], h.value_at_percentile(ps[k])) << ps[k];
  EXPECT_DOUBLE_EQ(mean, h.mean());
  Histogram empty = make();
  EXPECT_EQ(empty.values_at_percentiles(ps, &mean), std::vector<int64_t>(ps.size(), 0));
  EXPECT_EQ(mean, 0.0);
}

TEST(PerfHistogram, ZeroAndWideBuckets) {
  Histogram h = make();
  h.record(0);
  h.record(1000000);
  EXPECT_EQ(h.min(), 0);
  EXPECT_EQ(h.max(), 1000003);
  EXPECT_DOUBLE_EQ(h.mean(), (0 + 1000002) / 2.0);
  EXPECT_EQ(h.value_at_percentile(0), 0);
  EXPECT_EQ(h.value_at_percentile(50), 0);
  EXPECT_EQ(h.value_at_percentile(50.1), 1000003);
  Histogram g = make();
  g.record(1000001);
  EXPECT_EQ(g.min(), 1000000);  // lowest equivalent of the minimum
}

TEST(PerfHistogram, PercentileMapKeysAreActualPercentiles) {
  Histogram h = make();
  for (int v : {1, 2, 3, 4}) h.record(v);
  auto m = h.percentile_map(100);
  std::map<double, int64_t> expected{{25.0, 1}, {50.0, 2}, {75.0, 3}, {100.0, 4}};
  EXPECT_EQ(m, expected);

  Histogram t = make();
  for (int v : {5, 6, 7}) t.record(v);
  auto m3 = t.percentile_map(100);
  ASSERT_EQ(m3.size(), 3u);
  std::vector<std::string> keys;
  for (auto& [k, v] : m3) keys.push_back(java_double(k));
  EXPECT_EQ(keys, (std::vector<std::string>{"33.333333333333336", "66.66666666666667", "100.0"}));
}

TEST(PerfHistogram, PercentileMapOfManyValuesEndsAt100WithMax) {
  Histogram h = make();
  for (int v = 1; v <= 10000; ++v) h.record(v);
  auto m = h.percentile_map(100);
  // Levels advance 0.5 up to 50, then 0.25, 0.125, ...: each level is met by the first
  // value whose cumulative percentile reaches it.
  EXPECT_EQ(m.begin()->first, 0.01);
  EXPECT_EQ(m.begin()->second, 1);
  EXPECT_EQ(m.at(0.5), 50);
  EXPECT_EQ(m.at(50.0), 5000);
  EXPECT_EQ(m.at(50.25), 5025);
  EXPECT_EQ(m.at(75.0), 7500);
  // Level 75.125 is first reached by 7513, whose actual percentile 75.13 is the key.
  EXPECT_EQ(m.count(75.125), 0u);
  EXPECT_EQ(m.at(100.0 * 7513 / 10000), 7513);
  EXPECT_EQ(m.rbegin()->first, 100.0);
  EXPECT_EQ(m.rbegin()->second, 10000);
  EXPECT_EQ(m.count(0.5), 1u);
}

TEST(PerfHistogram, ResetAndAdd) {
  Histogram a = make(), b = make();
  a.record(5);
  b.record(7);
  a.add(b);
  EXPECT_EQ(a.total_count(), 2);
  EXPECT_EQ(a.max(), 7);
  a.reset();
  EXPECT_EQ(a.total_count(), 0);
  EXPECT_EQ(a.max(), 0);
  EXPECT_EQ(a.value_at_percentile(50), 0);
}

TEST(PerfStats, LatencyTruncationClampAndDrop) {
  Stats s;
  s.message_sent(100, 1'000'000'000, 1'000'000'000 - 999);   // -999 ns -> 0 us: recorded
  s.message_sent(100, 1'000'000'000, 1'000'000'000 - 1000);  // -1 us: dropped
  s.message_sent(100, 0, 200'000'000'000'000);               // 200 s > 180 s: clamped
  auto p = s.period();
  EXPECT_EQ(p.messages_sent, 3);
  EXPECT_EQ(p.bytes_sent, 300);
  EXPECT_EQ(p.send_latency.count, 2);
  EXPECT_EQ(p.send_latency.min, 0);
  EXPECT_EQ(p.send_latency.max,
            static_cast<double>(Histogram(Stats::kMaxSendLatencyMicros, 5)
                                    .highest_equivalent(Stats::kMaxSendLatencyMicros)));
  // The period counters reset; the totals do not.
  auto p2 = s.period();
  EXPECT_EQ(p2.messages_sent, 0);
  EXPECT_EQ(p2.total_messages_sent, 3);
  EXPECT_EQ(p2.send_latency.count, 0);
  auto c = s.cumulative();
  EXPECT_EQ(c.total_messages_sent, 3);
  EXPECT_EQ(c.send_latency.count, 2);
}

TEST(PerfStats, ReceivedBatchesAndMaxSendTime) {
  Stats s;
  s.messages_received(10, 1000, 5'000'000, 7'000'000);  // one E2E sample of 2000 us
  s.messages_received(5, 500, 4'000'000, 7'000'000);
  EXPECT_EQ(s.max_send_time_ns.load(), 5'000'000);
  auto p = s.period();
  EXPECT_EQ(p.messages_received, 15);
  EXPECT_EQ(p.bytes_received, 1500);
  EXPECT_EQ(p.e2e_latency.count, 2);
  EXPECT_EQ(p.e2e_latency.max, 3000);
  s.message_failed();
  s.reset();
  auto c = s.cumulative();
  EXPECT_EQ(c.total_messages_received, 0);
  EXPECT_EQ(c.total_messages_send_failed, 0);
  EXPECT_EQ(c.e2e_latency.count, 0);
  EXPECT_EQ(s.max_send_time_ns.load(), 5'000'000);  // never reset
}

}  // namespace
}  // namespace shale::perf
