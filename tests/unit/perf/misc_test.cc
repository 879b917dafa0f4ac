#include <gtest/gtest.h>

#include "perf/cpu_monitor.h"
#include "perf/kafka_clients.h"
#include "perf/rate_limiter.h"

namespace shale::perf {
namespace {

TEST(PerfCpu, ParsesUtimeAndStimeAfterTheCommandName) {
  std::string line =
      "1234 (my (odd) name) S 1 1234 1234 0 -1 4194304 100 0 0 0 250 50 0 0 20 0 4 0 100 "
      "1000000 200 18446744073709551615";
  EXPECT_EQ(parse_proc_stat_ticks(line), 300u);
  EXPECT_FALSE(parse_proc_stat_ticks("garbage"));
  EXPECT_FALSE(parse_proc_stat_ticks("1 (x) S 1 2"));
}

TEST(PerfCpu, SamplesOwnCpu) {
  CpuMonitor m;
  EXPECT_GE(m.core_budget(), 1);
  volatile double x = 0;
  for (int i = 0; i < 2000000; ++i) x = x + i * 0.5;
  auto s = m.sample();
  ASSERT_TRUE(s.has_value());
  EXPECT_GE(*s, 0.0);
}

TEST(PerfCpu, BottleneckWarnings) {
  EXPECT_TRUE(bottleneck_warnings(0.5, 2, 0).empty());
  EXPECT_TRUE(bottleneck_warnings(1.4, 2, 1'000'000'000).empty());  // exactly 70 %, 1 s
  EXPECT_TRUE(bottleneck_warnings(std::nullopt, 1, 0).empty());
  auto cpu = bottleneck_warnings(0.75, 1, 0);
  ASSERT_EQ(cpu.size(), 1u);
  EXPECT_EQ(cpu[0],
            "shale perf uses 75% CPU, more than 70% of its 1-core budget: the load generator may "
            "be the bottleneck");
  auto both = bottleneck_warnings(3.0, 4, 2'500'000'000);
  ASSERT_EQ(both.size(), 2u);
  EXPECT_EQ(both[1].rfind("The send loop is 2500 ms behind the target rate", 0), 0u);
}

TEST(PerfReadiness, CountsDistinctPartitions) {
  ReadinessTracker t({2, 3});
  t.seen(0, 0);
  t.seen(0, 0);
  t.seen(1, 2);
  t.seen(1, 3);  // out of range: ignored
  t.seen(2, 0);  // unknown topic: ignored
  EXPECT_EQ(t.count(), 2);
  t.seen(0, 1);
  t.seen(1, 0);
  t.seen(1, 1);
  EXPECT_EQ(t.count(), 5);
}

}  // namespace
}  // namespace shale::perf
