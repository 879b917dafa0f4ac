#include "base/crc32c.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace shale {
namespace {

// Published check values: RFC 3720 (iSCSI) appendix B.4 and the "123456789" check value.
TEST(Crc32c, CheckValue) { EXPECT_EQ(crc32c::value("123456789", 9), 0xE3069283u); }

TEST(Crc32c, Rfc3720ZerosAndOnes) {
  std::vector<uint8_t> zeros(32, 0), ones(32, 0xff);
  EXPECT_EQ(crc32c::value(zeros.data(), 32), 0x8A9136AAu);
  EXPECT_EQ(crc32c::value(ones.data(), 32), 0x62A8AB43u);
}

TEST(Crc32c, Rfc3720Incrementing) {
  std::vector<uint8_t> inc(32), dec(32);
  for (int i = 0; i < 32; ++i) {
    inc[i] = static_cast<uint8_t>(i);
    dec[i] = static_cast<uint8_t>(31 - i);
  }
  EXPECT_EQ(crc32c::value(inc.data(), 32), 0x46DD794Eu);
  EXPECT_EQ(crc32c::value(dec.data(), 32), 0x113FDB5Cu);
}

TEST(Crc32c, Rfc3720IscsiReadCommand) {
  const uint8_t data[48] = {0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                            0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00,
                            0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18, 0x28, 0x00, 0x00, 0x00,
                            0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
  EXPECT_EQ(crc32c::value(data, sizeof data), 0xD9963A56u);
}

TEST(Crc32c, EmptyIsZero) { EXPECT_EQ(crc32c::value("", 0), 0u); }

TEST(Crc32c, ExtendEqualsWhole) {
  std::string s = "The quick brown fox jumps over the lazy dog";
  uint32_t whole = crc32c::value(s.data(), s.size());
  for (size_t cut = 0; cut <= s.size(); ++cut) {
    uint32_t c = crc32c::extend(crc32c::value(s.data(), cut), s.data() + cut, s.size() - cut);
    EXPECT_EQ(c, whole) << cut;
  }
  EXPECT_EQ(whole, 0x22620404u);
}

TEST(Crc32c, PortableMatchesHardwareOnRandomData) {
  std::mt19937 rng(42);
  for (int round = 0; round < 200; ++round) {
    std::vector<uint8_t> buf(rng() % 4096);
    for (auto& b : buf) b = static_cast<uint8_t>(rng());
    size_t off = buf.empty() ? 0 : rng() % buf.size();
    EXPECT_EQ(crc32c::extend(7, buf.data() + off, buf.size() - off),
              crc32c::extend_portable(7, buf.data() + off, buf.size() - off));
  }
}

}  // namespace
}  // namespace shale
