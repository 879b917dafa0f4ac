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
