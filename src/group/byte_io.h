// Minimal big-endian writer and bounds-checked reader for the group module's own value formats
// and for Kafka's non-flexible ConsumerProtocol structs (int16-length strings, int32-length
// bytes, int32-count arrays). Internal to src/group/.
// Thread-safety: plain values; a Reader borrows the bytes it reads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/endian.h"

namespace shale::group::io {

class Writer {
 public:
  void i8(int8_t v) { out_.push_back(static_cast<char>(v)); }
  void i16(int16_t v) { put<2>(static_cast<uint16_t>(v)); }
  void i32(int32_t v) { put<4>(static_cast<uint32_t>(v)); }
  void i64(int64_t v) { put<8>(static_cast<uint64_t>(v)); }
  // int32 length (-1 = null), then the bytes.
  void bytes(std::string_view s) {
    i32(static_cast<int32_t>(s.size()));
    out_.append(s);
  }
  void nullable(const std::optional<std::string>& s) {
    if (!s) {
      i32(-1);
    } else {
      bytes(*s);
    }
  }
  std::string take() && { return std::move(out_); }

 private:
  template <int N>
  void put(uint64_t v) {
    uint8_t b[8];
    if constexpr (N == 2) be::store16(b, static_cast<uint16_t>(v));
    if constexpr (N == 4) be::store32(b, static_cast<uint32_t>(v));
    if constexpr (N == 8) be::store64(b, v);
    out_.append(reinterpret_cast<const char*>(b), N);
  }
  std::string out_;
};

// Every read returns false once the input is exhausted or malformed; the reader then stays
// failed, so callers may check ok() once after a sequence of reads.
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  bool ok() const { return ok_; }
  bool at_end() const { return pos_ == in_.size(); }

  bool i8(int8_t& v) {
    if (!need(1)) return false;
    v = static_cast<int8_t>(in_[pos_++]);
    return true;
  }
  bool i16(int16_t& v) {
    if (!need(2)) return false;
    v = static_cast<int16_t>(be::load16(p()));
    pos_ += 2;
    return true;
  }
  bool i32(int32_t& v) {
    if (!need(4)) return false;
    v = static_cast<int32_t>(be::load32(p()));
    pos_ += 4;
    return true;
  }
  bool i64(int64_t& v) {
    if (!need(8)) return false;
    v = static_cast<int64_t>(be::load64(p()));
    pos_ += 8;
    return true;
  }
  // int32 length-prefixed; a null (-1) fails unless nullable() is used.
  bool bytes(std::string& s) {
    std::optional<std::string> o;
    if (!nullable(o)) return false;
    if (!o) return fail();
    s = std::move(*o);
    return true;
  }
  bool nullable(std::optional<std::string>& s) {
    int32_t n;
    if (!i32(n)) return false;
    return take_string(n, s);
  }
  // int16 length-prefixed string (Kafka's non-flexible STRING / NULLABLE_STRING).
  bool short_string(std::optional<std::string>& s) {
    int16_t n;
    if (!i16(n)) return false;
    return take_string(n, s);
  }
  bool skip(size_t n) {
    if (!need(n)) return false;
    pos_ += n;
    return true;
  }

 private:
  bool take_string(int64_t n, std::optional<std::string>& s) {
    if (n == -1) {
      s.reset();
      return true;
    }
    if (n < 0 || !need(static_cast<size_t>(n))) return fail();
    s.emplace(in_.substr(pos_, static_cast<size_t>(n)));
    pos_ += static_cast<size_t>(n);
    return true;
  }
  const uint8_t* p() const { return reinterpret_cast<const uint8_t*>(in_.data() + pos_); }
  bool need(size_t n) {
    if (!ok_ || in_.size() - pos_ < n) return fail();
    return true;
  }
  bool fail() {
    ok_ = false;
    return false;
  }
  std::string_view in_;
  size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace shale::group::io
