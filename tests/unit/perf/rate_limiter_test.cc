#include "perf/rate_limiter.h"

#include <gtest/gtest.h>

#include "perf/runner.h"

namespace shale::perf {
namespace {

TEST(PerfRateLimiter, UniformSlotsFromALazyStart) {
  UniformRateLimiter l(1600);
  EXPECT_EQ(l.interval_ns(), 625000);
  EXPECT_EQ(l.acquire(1'000'000), 1'000'000);  // starts at the first acquire
  EXPECT_EQ(l.acquire(1'000'000), 1'625'000);
  EXPECT_EQ(l.acquire(5'000'000), 2'250'000);  // a late caller still gets the next slot
  EXPECT_EQ(UniformRateLimiter(3).interval_ns(), 333333333);  // rounded
}

TEST(PerfRateLimiter, BurstsAtMostTenSecondsOfMissedSlots) {
  UniformRateLimiter l(1);  // one slot per second
  int64_t s = 1'000'000'000;
  EXPECT_EQ(l.acquire(s), s);
  // 9 s late: slots are burst (intended time in the past).
  EXPECT_EQ(l.acquire(s + 10'000'000'000), s + 1'000'000'000);
  // 20 s later than slot 2: jump to (now - start) / interval + 1 = 31.
  int64_t now = s + 30'500'000'000;
  EXPECT_EQ(l.acquire(now), s + 31'000'000'000);
  EXPECT_EQ(l.acquire(now), s + 32'000'000'000);
}

TEST(PerfRateSchedule, InterpolatesBetweenPointsElseDefault) {
  RateSchedule r;
  r.set_default(1600);
  EXPECT_EQ(r.rate_at(0), 1600);
  r.add_point(1000, 1.0);
  r.add_point(3000, 1001.0);
  EXPECT_EQ(r.rate_at(999), 1600);  // no point at or before
  EXPECT_EQ(r.rate_at(1000), 1.0);
  EXPECT_EQ(r.rate_at(2000), 501.0);
  EXPECT_EQ(r.rate_at(3000), 1001.0);
  EXPECT_EQ(r.rate_at(3001), 1600);  // no point at or after
}

TEST(PerfWarmup, RampOfTheTutorialsTenMinuteWarmup) {
  const int64_t warmup = 10 * 60 * 1000;
  EXPECT_DOUBLE_EQ(warmup_rate(0, warmup, 1600), 1.0);
  EXPECT_DOUBLE_EQ(warmup_rate(5000, warmup, 1600), 27.65);
  EXPECT_DOUBLE_EQ(warmup_rate(7400, warmup, 1600), 27.65);  // 5-second steps
  EXPECT_DOUBLE_EQ(warmup_rate(150000, warmup, 1600), 800.5);
  EXPECT_DOUBLE_EQ(warmup_rate(295000, warmup, 1600), 1573.35);
  EXPECT_DOUBLE_EQ(warmup_rate(300000, warmup, 1600), 1600);
  EXPECT_DOUBLE_EQ(warmup_rate(600000, warmup, 1600), 1600);
}

TEST(PerfTopics, NamingOfTheOriginal) {
  EXPECT_EQ(perf_topic_name("topic_1735689600000_a1B2", 128, 3),
            "__automq_perf_topic_1735689600000_a1B2_0128_0000003");
  EXPECT_EQ(perf_topic_name("x", 12345, 12345678), "__automq_perf_x_12345_12345678");
}

}  // namespace
}  // namespace shale::perf
