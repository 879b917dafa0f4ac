// Helpers for the protocol unit tests: a seeded random generator for field values and the
// encode → decode → encode round-trip check the generated tests run for every message.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>

#include "base/buffer.h"
#include "protocol/wire.h"

namespace shale::protocol {

// Random messages per (message, version); each is small, so this stays fast under ASan.
constexpr uint64_t kRoundTripSeeds = 24;

class Rng {
 public:
  explicit Rng(uint64_t seed) : gen_(seed) {}
  bool coin(int one_in) { return pick(0, one_in - 1) == 0; }
  int count() { return static_cast<int>(pick(0, 3)); }
  bool boolean() { return coin(2); }
  int8_t i8() { return static_cast<int8_t>(any()); }
  int16_t i16() { return static_cast<int16_t>(any()); }
  uint16_t u16() { return static_cast<uint16_t>(any()); }
  int32_t i32() { return static_cast<int32_t>(any()); }
  uint32_t u32() { return static_cast<uint32_t>(any()); }
  int64_t i64() { return static_cast<int64_t>(any()); }
  double f64() { return static_cast<double>(static_cast<int32_t>(any())) / 8.0; }
  Uuid uuid() {
    Uuid u;
    for (auto& b : u.bytes) b = static_cast<uint8_t>(any());
    return u;
  }
  std::string str() {
    std::string s(static_cast<size_t>(pick(0, 12)), 'a');
    for (auto& c : s) c = static_cast<char>('a' + pick(0, 25));
    return s;
  }
  Buffer bytes() {
    std::string s(static_cast<size_t>(pick(0, 40)), '\0');
    for (auto& c : s) c = static_cast<char>(any());
    return Buffer::copy(s);
  }

 private:
  // Mostly small values (including -1 and 0, which defaults use) with occasional extremes.
  uint64_t any() {
    switch (pick(0, 3)) {
      case 0:
        return static_cast<uint64_t>(static_cast<int64_t>(pick(0, 4)) - 2);
      case 1:
        return gen_();
      default:
        return pick(0, 1000);
    }
  }
  uint64_t pick(uint64_t lo, uint64_t hi) {
    return std::uniform_int_distribution<uint64_t>(lo, hi)(gen_);
  }
  std::mt19937_64 gen_;
};

// Encodes x at version v, decodes it back, re-encodes, and checks byte equality, value
// equality and encoded_size().
template <typename T>
void expect_round_trip(const T& x, int16_t v, uint64_t seed) {
  SCOPED_TRACE("version " + std::to_string(v) + " seed " + std::to_string(seed));
  BufferBuilder b1;
  Writer w1(b1);
  Status st = x.encode(w1, v);
  ASSERT_TRUE(st.ok()) << st.error().to_string();
  Buffer bytes = std::move(b1).freeze();
  EXPECT_EQ(x.encoded_size(v), bytes.size());
  T y;
  Reader r(bytes);
  Status ds = y.decode(r, v);
  ASSERT_TRUE(ds.ok()) << ds.error().to_string();
  EXPECT_EQ(r.remaining(), 0u);
  EXPECT_TRUE(x == y);
  BufferBuilder b2;
  Writer w2(b2);
  ASSERT_TRUE(y.encode(w2, v).ok());
  Buffer again = std::move(b2).freeze();
  EXPECT_EQ(bytes.view(), again.view());
}

}  // namespace shale::protocol
