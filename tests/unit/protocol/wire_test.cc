#include "protocol/wire.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace shale::protocol {
namespace {

Buffer bytes(std::vector<uint8_t> v) { return Buffer::take(std::move(v)); }

template <typename F>
Buffer encode(F&& f) {
  BufferBuilder b;
  Writer w(b);
  f(w);
  EXPECT_TRUE(w.ok());
  return std::move(b).freeze();
}

TEST(Wire, FixedWidthIntegersAreBigEndian) {
  Buffer b = encode([](Writer& w) {
    w.write_i8(-2);
    w.write_i16(0x0102);
    w.write_u16(0xfffe);
    w.write_i32(-1);
    w.write_u32(0x01020304);
    w.write_i64(0x0102030405060708LL);
    w.write_bool(true);
    w.write_f64(1.5);
  });
  const std::vector<uint8_t> want = {0xfe, 1, 2,    0xff, 0xfe, 0xff, 0xff, 0xff, 0xff, 1,
                                     2,    3, 4,    1,    2,    3,    4,    5,    6,    7,
                                     8,    1, 0x3f, 0xf8, 0,    0,    0,    0,    0,    0};
  ASSERT_EQ(b.size(), want.size());
  EXPECT_EQ(std::vector<uint8_t>(b.begin(), b.end()), want);
  Reader r(b);
  EXPECT_EQ(r.read_i8(), -2);
  EXPECT_EQ(r.read_i16(), 0x0102);
  EXPECT_EQ(r.read_u16(), 0xfffe);
  EXPECT_EQ(r.read_i32(), -1);
  EXPECT_EQ(r.read_u32(), 0x01020304u);
  EXPECT_EQ(r.read_i64(), 0x0102030405060708LL);
  EXPECT_TRUE(r.read_bool());
  EXPECT_EQ(r.read_f64(), 1.5);
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.remaining(), 0u);
}

TEST(Wire, TruncatedReadFailsAndStaysFailed) {
  Reader r(bytes({0, 1, 2}));
  EXPECT_EQ(r.read_i32(), 0);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.remaining(), 0u);
  EXPECT_EQ(r.read_i8(), 0);
  EXPECT_FALSE(r.status().ok());
  EXPECT_EQ(r.status().error().code, Errc::kCorruption);
}

TEST(Wire, ClassicAndCompactStrings) {
  Buffer b = encode([](Writer& w) {
    w.write_string("abc", false);
    w.write_string("abc", true);
    w.write_nullable_string(std::nullopt, false, true, "f");
    w.write_nullable_string(std::nullopt, true, true, "f");
  });
  const std::vector<uint8_t> want = {0, 3, 'a', 'b', 'c', 4, 'a', 'b', 'c', 0xff, 0xff, 0};
  EXPECT_EQ(std::vector<uint8_t>(b.begin(), b.end()), want);
  Reader r(b);
  std::string s;
  r.read_string(s, false);
  EXPECT_EQ(s, "abc");
  r.read_string(s, true);
  EXPECT_EQ(s, "abc");
  std::optional<std::string> o = "x";
  r.read_nullable_string(o, false, true);
  EXPECT_FALSE(o.has_value());
  o = "x";
  r.read_nullable_string(o, true, true);
  EXPECT_FALSE(o.has_value());
  EXPECT_TRUE(r.ok());
}

TEST(Wire, NullStringWhereNotNullableFails) {
  Reader r(bytes({0xff, 0xff}));
  std::string s;
  r.read_string(s, false);
  EXPECT_FALSE(r.ok());
  Reader r2(bytes({0}));
  std::optional<std::string> o;
  r2.read_nullable_string(o, true, /*nullable=*/false);
  EXPECT_FALSE(r2.ok());
}

TEST(Wire, NegativeStringLengthBelowMinusOneFails) {
  Reader r(bytes({0xff, 0xfe, 'a'}));
  std::optional<std::string> o;
  r.read_nullable_string(o, false, true);
  EXPECT_FALSE(r.ok());
}

TEST(Wire, StringLongerThanRemainingFails) {
  Reader r(bytes({0, 5, 'a', 'b'}));
  std::string s;
  r.read_string(s, false);
  EXPECT_FALSE(r.ok());
}

TEST(Wire, OversizeArrayCountFailsBeforeAllocating) {
  // int32 count 0x7fffffff with 2 bytes behind it.
  Reader r(bytes({0x7f, 0xff, 0xff, 0xff, 0, 0}));
  EXPECT_EQ(r.read_array_len(false, false), -1);
  EXPECT_FALSE(r.ok());
  // Compact count: uvarint 0xffffffff (count+1) → 4294967294.
  Reader r2(bytes({0xff, 0xff, 0xff, 0xff, 0x0f}));
  r2.read_array_len(true, true);
  EXPECT_FALSE(r2.ok());
}

TEST(Wire, NullArrays) {
  Reader r(bytes({0xff, 0xff, 0xff, 0xff}));
  EXPECT_EQ(r.read_array_len(false, true), -1);
  EXPECT_TRUE(r.ok());
  Reader r2(bytes({0}));
  EXPECT_EQ(r2.read_array_len(true, false), -1);
  EXPECT_FALSE(r2.ok());
}

TEST(Wire, UnsignedVarintLimits) {
  Buffer b = encode([](Writer& w) {
    w.write_uvarint(0);
    w.write_uvarint(127);
    w.write_uvarint(128);
    w.write_uvarint(0xffffffffu);
  });
  EXPECT_EQ(b.size(), 1u + 1 + 2 + 5);
  Reader r(b);
  EXPECT_EQ(r.read_uvarint(), 0u);
  EXPECT_EQ(r.read_uvarint(), 127u);
  EXPECT_EQ(r.read_uvarint(), 128u);
  EXPECT_EQ(r.read_uvarint(), 0xffffffffu);
  EXPECT_TRUE(r.ok());
  // Six continuation bytes: too long for a 32-bit varint.
  Reader bad(bytes({0x80, 0x80, 0x80, 0x80, 0x80, 0x01}));
  bad.read_uvarint();
  EXPECT_FALSE(bad.ok());
  Reader trunc(bytes({0x80}));
  trunc.read_uvarint();
  EXPECT_FALSE(trunc.ok());
}

TEST(Wire, SignedVarints) {
  Buffer b = encode([](Writer& w) {
    w.write_varint(-1);
    w.write_varlong(-300);
  });
  Reader r(b);
  EXPECT_EQ(r.read_varint(), -1);
  EXPECT_EQ(r.read_varlong(), -300);
  EXPECT_TRUE(r.ok());
}

TEST(Wire, BytesAreZeroCopySlices) {
  Buffer b = encode([](Writer& w) { w.write_bytes(Buffer::copy("hello"), true); });
  Reader r(b);
  Buffer out;
  r.read_bytes(out, true);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(out.view(), "hello");
  EXPECT_EQ(out.data(), b.data() + 1);  // points into the frame
  EXPECT_EQ(out.owner(), b.owner());
}

TEST(Wire, SubReaderIsBoundedAndPropagatesFailure) {
  Reader r(bytes({1, 2, 3, 4}));
  Reader sub = r.sub(2);
  EXPECT_EQ(r.remaining(), 2u);
  EXPECT_EQ(sub.read_i16(), 0x0102);
  EXPECT_EQ(sub.read_i8(), 0);
  EXPECT_FALSE(sub.ok());
  r.absorb(sub);
  EXPECT_FALSE(r.ok());
  Reader r2(bytes({1}));
  Reader too_big = r2.sub(2);
  EXPECT_FALSE(r2.ok());
  EXPECT_FALSE(too_big.ok());
}

TEST(Wire, CountingWriterMatchesRealWriter) {
  auto fill = [](Writer& w) {
    w.write_string("abc", true);
    w.write_uvarint(300);
    w.write_i64(1);
    w.write_bytes(Buffer::copy("xyz"), false);
  };
  Writer c = Writer::counter();
  fill(c);
  Buffer b = encode(fill);
  EXPECT_EQ(c.size(), b.size());
}

TEST(Wire, WritingNullIntoNonNullableVersionFails) {
  BufferBuilder b;
  Writer w(b);
  w.write_nullable_string(std::nullopt, false, /*nullable=*/false, "Foo.Bar");
  EXPECT_FALSE(w.ok());
  EXPECT_NE(w.status().error().message.find("Foo.Bar"), std::string::npos);
}

TEST(Wire, ClassicStringTooLongFails) {
  BufferBuilder b;
  Writer w(b);
  w.write_string(std::string(40000, 'x'), false);
  EXPECT_FALSE(w.ok());
}

TEST(Wire, UuidBase64) {
  Uuid u;
  EXPECT_TRUE(u.is_zero());
  EXPECT_EQ(u.to_base64(), "AAAAAAAAAAAAAAAAAAAAAA");
  u.bytes[15] = 1;
  EXPECT_FALSE(u.is_zero());
  EXPECT_EQ(u.to_base64(), "AAAAAAAAAAAAAAAAAAAAAQ");
}

}  // namespace
}  // namespace shale::protocol
