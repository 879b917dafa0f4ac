// VarintWriter / VarintReader: the small encoders behind Shale's own varint-based records (the
// partition snapshot, the transaction coordinator's records; formats in docs/formats.md). The
// reader never reads past its end: a truncated or malformed input makes every later call fail,
// so a decoder checks once at the end (done()) or at each step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/varint.h"

namespace shale {

class VarintWriter {
 public:
  void u8(uint8_t v) { s_.push_back(static_cast<char>(v)); }
  void uv(uint64_t v) {
    uint8_t buf[varint::kMaxVarint64];
    uint8_t* e = varint::put_u64(buf, v);
    s_.append(reinterpret_cast<const char*>(buf), static_cast<size_t>(e - buf));
  }
  void sv(int64_t v) { uv(varint::zigzag_encode64(v)); }
  // A length (varint) and the bytes.
  void str(std::string_view v) {
    uv(v.size());
    s_.append(v);
  }
  std::string& buffer() { return s_; }
  std::string take() { return std::move(s_); }

 private:
  std::string s_;
};

class VarintReader {
 public:
  VarintReader(const uint8_t* p, const uint8_t* end) : p_(p), end_(end) {}
  explicit VarintReader(std::string_view s)
      : p_(reinterpret_cast<const uint8_t*>(s.data())), end_(p_ + s.size()) {}
  bool u8(uint8_t& v) {
    if (p_ == nullptr || p_ >= end_) return fail();
    v = *p_++;
    return true;
  }
  bool uv(uint64_t& v) {
    if (p_ != nullptr) p_ = varint::get_u64(p_, end_, &v);
    return p_ != nullptr;
  }
  bool sv(int64_t& v) {
    if (p_ != nullptr) p_ = varint::get_s64(p_, end_, &v);
    return p_ != nullptr;
  }
  // A count that cannot exceed the bytes left (each element takes at least one byte).
  bool count(size_t& n) {
    uint64_t v = 0;
    if (!uv(v) || v > static_cast<uint64_t>(end_ - p_)) return fail();
    n = static_cast<size_t>(v);
    return true;
  }
  // A string written by VarintWriter::str.
  bool str(std::string& v) {
    size_t n = 0;
    if (!count(n)) return false;
    v.assign(reinterpret_cast<const char*>(p_), n);
    p_ += n;
    return true;
  }
  bool done() const { return p_ == end_; }

 private:
  bool fail() {
    p_ = nullptr;
    return false;
  }
  const uint8_t* p_;
  const uint8_t* end_;
};

}  // namespace shale
