#include <gtest/gtest.h>

#include <set>

#include "objstore/retry.h"

namespace shale::objstore {
namespace {

TEST(RetryPolicy, CapDoublesUntilMax) {
  RetryPolicy p;
  p.base_delay_ms = 50;
  p.max_delay_ms = 1000;
  EXPECT_EQ(p.backoff_cap_ms(0), 50);
  EXPECT_EQ(p.backoff_cap_ms(1), 100);
  EXPECT_EQ(p.backoff_cap_ms(2), 200);
  EXPECT_EQ(p.backoff_cap_ms(4), 800);
  EXPECT_EQ(p.backoff_cap_ms(5), 1000);
  EXPECT_EQ(p.backoff_cap_ms(1000000), 1000);  // no overflow for absurd retry numbers
}

TEST(RetryPolicy, JitterStaysWithinCapAndVaries) {
  RetryPolicy p;
  std::mt19937_64 rng(7);
  std::set<int64_t> seen;
  for (int retry = 0; retry < 12; ++retry) {
    for (int i = 0; i < 200; ++i) {
      int64_t w = p.backoff_ms(retry, rng);
      ASSERT_GE(w, 0);
      ASSERT_LE(w, p.backoff_cap_ms(retry));
      seen.insert(w);
    }
  }
  EXPECT_GT(seen.size(), 100u);  // full jitter spreads retries out
}

TEST(RetryPolicy, AttemptsAndZeroDelays) {
  RetryPolicy p;
  p.max_attempts = 3;
  EXPECT_TRUE(p.may_retry(1));
  EXPECT_TRUE(p.may_retry(2));
  EXPECT_FALSE(p.may_retry(3));
  p.base_delay_ms = 0;
  std::mt19937_64 rng(1);
  EXPECT_EQ(p.backoff_ms(3, rng), 0);
}

TEST(RetryPolicy, WhichHttpStatusesAreRetried) {
  for (long s : {500L, 502L, 503L, 504L, 408L, 429L}) EXPECT_TRUE(http_status_retryable(s)) << s;
  for (long s : {200L, 206L, 400L, 403L, 404L, 409L, 412L, 416L}) {
    EXPECT_FALSE(http_status_retryable(s)) << s;
  }
}

}  // namespace
}  // namespace shale::objstore
