#include "base/varint.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

namespace shale {
namespace {

TEST(Varint, ZigZagMatchesKafkaExamples) {
  // From the Kafka protocol guide / protobuf docs.
  EXPECT_EQ(varint::zigzag_encode32(0), 0u);
  EXPECT_EQ(varint::zigzag_encode32(-1), 1u);
  EXPECT_EQ(varint::zigzag_encode32(1), 2u);
  EXPECT_EQ(varint::zigzag_encode32(-2), 3u);
  EXPECT_EQ(varint::zigzag_encode32(2147483647), 4294967294u);
  EXPECT_EQ(varint::zigzag_encode32(-2147483648), 4294967295u);
}

TEST(Varint, RoundTripSigned64) {
  std::vector<int64_t> values = {0,
                                 1,
                                 -1,
                                 63,
                                 -64,
                                 64,
                                 300,
                                 -300,
                                 std::numeric_limits<int64_t>::max(),
                                 std::numeric_limits<int64_t>::min()};
  for (int64_t v : values) {
    uint8_t buf[varint::kMaxVarint64];
    uint8_t* end = varint::put_s64(buf, v);
    EXPECT_EQ(static_cast<size_t>(end - buf), varint::size_s64(v));
    int64_t out = 0;
    EXPECT_EQ(varint::get_s64(buf, end, &out), end);
    EXPECT_EQ(out, v);
  }
}

TEST(Varint, KnownEncoding300) {
  uint8_t buf[5];
  uint8_t* end = varint::put_u32(buf, 300);
  ASSERT_EQ(end - buf, 2);
  EXPECT_EQ(buf[0], 0xac);
  EXPECT_EQ(buf[1], 0x02);
}

TEST(Varint, TruncatedInputFails) {
  uint8_t buf[] = {0x80, 0x80};
  uint64_t out = 0;
  EXPECT_EQ(varint::get_u64(buf, buf + 2, &out), nullptr);
}

TEST(Varint, OverlongVarint32Fails) {
  uint8_t buf[] = {0xff, 0xff, 0xff, 0xff, 0x7f};  // 35 bits: more than 32
  uint32_t out = 0;
  EXPECT_EQ(varint::get_u32(buf, buf + 5, &out), nullptr);
  uint8_t six[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x01};
  EXPECT_EQ(varint::get_u32(six, six + 6, &out), nullptr);
}

}  // namespace
}  // namespace shale
