#include "perf/payload.h"

#include <gtest/gtest.h>

#include <set>

namespace shale::perf {
namespace {

TEST(PerfPayload, RatioZeroIsOneAllZeroPayload) {
  PayloadPool p(52224, 0.0, 1000, 1);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p.at(0), std::string(52224, '\0'));
  // (int)(recordSize * ratio) == 0 also for tiny ratios.
  EXPECT_EQ(PayloadPool(10, 0.05, 1000, 1).size(), 1u);
}

TEST(PerfPayload, RandomPrefixAndZeroTail) {
  EXPECT_EQ(PayloadPool::random_bytes(1000, 0.3333), 333);  // truncated toward zero
  PayloadPool p(1000, 0.5, 16, 42);
  ASSERT_EQ(p.size(), 16u);
  std::set<std::string> distinct;
  for (size_t i = 0; i < p.size(); ++i) {
    const std::string& s = p.at(i);
    ASSERT_EQ(s.size(), 1000u);
    EXPECT_EQ(s.substr(500), std::string(500, '\0'));
    EXPECT_NE(s.substr(0, 500), std::string(500, '\0'));
    distinct.insert(s);
  }
  EXPECT_EQ(distinct.size(), 16u);
  PayloadPool full(64, 1.0, 2, 7);
  EXPECT_NE(full.at(0), full.at(1));
}

TEST(PerfPayload, KeysAreTenCharUrlSafeBase64) {
  auto keys = make_keys(16384, 3);
  ASSERT_EQ(keys.size(), 16384u);
  for (const auto& k : keys) {
    ASSERT_EQ(k.size(), 10u);
    for (char c : k)
      EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_');
  }
  const unsigned char v[] = {0xfb, 0xff, 0xbf, 'a', 'b', 'c', 'd'};
  EXPECT_EQ(base64_url_nopad(v, 3), "-_-_");
  EXPECT_EQ(base64_url_nopad(v + 3, 1), "YQ");
  EXPECT_EQ(base64_url_nopad(v + 3, 2), "YWI");
  EXPECT_EQ(base64_url_nopad(v, 7), "-_-_YWJjZA");
}

TEST(PerfPayload, SendTimeHeaderIsBigEndianInt64) {
  unsigned char b[8];
  encode_st_header(0x0102030405060708, b);
  const unsigned char want[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_EQ(0, memcmp(b, want, 8));
  int64_t out = 0;
  ASSERT_TRUE(decode_st_header(b, 8, &out));
  EXPECT_EQ(out, 0x0102030405060708);
  encode_st_header(-2, b);
  ASSERT_TRUE(decode_st_header(b, 8, &out));
  EXPECT_EQ(out, -2);
  EXPECT_FALSE(decode_st_header(b, 7, &out));
  EXPECT_FALSE(decode_st_header(nullptr, 8, &out));
}

}  // namespace
}  // namespace shale::perf
