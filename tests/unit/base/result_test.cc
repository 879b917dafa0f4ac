#include "base/result.h"

#include <gtest/gtest.h>

#include <string>

namespace shale {
namespace {

Result<int> parse_positive(int v) {
  if (v <= 0) return Error::make(Errc::kInvalidArgument, "not positive");
  return v;
}

Result<int> doubled(int v) {
  auto r = parse_positive(v);
  SHALE_TRY(r);
  return *r * 2;
}

TEST(Result, ValueAndError) {
  EXPECT_EQ(*parse_positive(3), 3);
  auto e = parse_positive(-1);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().code, Errc::kInvalidArgument);
  EXPECT_EQ(e.error().to_string(), "invalid_argument: not positive");
}

TEST(Result, TryPropagates) {
  EXPECT_EQ(*doubled(4), 8);
  EXPECT_FALSE(doubled(0).ok());
}

TEST(Result, VoidStatus) {
  Status s;
  EXPECT_TRUE(s.ok());
  Status f = Error::make(Errc::kUnavailable, "slow down", true);
  EXPECT_FALSE(f.ok());
  EXPECT_TRUE(f.error().retryable);
}

}  // namespace
}  // namespace shale
