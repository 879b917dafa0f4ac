#include "protocol/wire.h"

#include <limits>

#include "base/varint.h"

namespace shale::protocol {

std::string Uuid::to_base64() const {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  out.reserve(22);
  uint32_t acc = 0;
  int bits = 0;
  for (uint8_t b : bytes) {
    acc = (acc << 8) | b;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out.push_back(kAlphabet[(acc >> bits) & 0x3f]);
    }
  }
  if (bits > 0) out.push_back(kAlphabet[(acc << (6 - bits)) & 0x3f]);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Reader

Status Reader::status() const {
  if (ok()) return ok_status();
  return Error::make(Errc::kCorruption, error_);
}

void Reader::fail(const char* what) {
  if (!error_.empty()) return;
  error_ = what;
  if (error_.empty()) error_ = "decode error";
  pos_ = end_;
}

void Reader::fail(std::string what) {
  if (!error_.empty()) return;
  error_ = std::move(what);
  if (error_.empty()) error_ = "decode error";
  pos_ = end_;
}

Uuid Reader::read_uuid() {
  Uuid u;
  if (remaining() < 16) {
    fail("truncated uuid");
    return u;
  }
  std::memcpy(u.bytes.data(), buf_.data() + pos_, 16);
  pos_ += 16;
  return u;
}

uint32_t Reader::read_uvarint() {
  uint32_t v = 0;
  const uint8_t* p = buf_.data() + pos_;
  const uint8_t* e = buf_.data() + end_;
  const uint8_t* q = varint::get_u32(p, e, &v);
  if (q == nullptr) {
    fail("bad or truncated unsigned varint");
    return 0;
  }
  pos_ += static_cast<size_t>(q - p);
  return v;
}

int32_t Reader::read_varint() {
  int32_t v = 0;
  const uint8_t* p = buf_.data() + pos_;
  const uint8_t* q = varint::get_s32(p, buf_.data() + end_, &v);
  if (q == nullptr) {
    fail("bad or truncated varint");
    return 0;
  }
  pos_ += static_cast<size_t>(q - p);
  return v;
}

int64_t Reader::read_varlong() {
  int64_t v = 0;
  const uint8_t* p = buf_.data() + pos_;
  const uint8_t* q = varint::get_s64(p, buf_.data() + end_, &v);
  if (q == nullptr) {
    fail("bad or truncated varlong");
    return 0;
  }
  pos_ += static_cast<size_t>(q - p);
  return v;
}

void Reader::skip(size_t n) {
  if (remaining() < n) {
    fail("truncated");
    return;
  }
  pos_ += n;
}

int64_t Reader::read_length(bool compact, bool wide) {
  int64_t n;
  if (compact) {
    n = static_cast<int64_t>(read_uvarint()) - 1;
  } else {
    n = wide ? read_i32() : read_i16();
  }
  if (!ok()) return -2;
  if (n < -1) {
    fail("negative length");
    return -2;
  }
  if (n > static_cast<int64_t>(remaining())) {
    fail("length " + std::to_string(n) + " exceeds the " + std::to_string(remaining()) +
         " bytes that remain");
    return -2;
  }
  return n;
}

void Reader::read_string(std::string& out, bool compact) {
  int64_t n = read_length(compact, false);
  if (n == -1) fail("null string in a non-nullable field");
  if (n < 0) return;
  out.assign(reinterpret_cast<const char*>(buf_.data() + pos_), static_cast<size_t>(n));
  pos_ += static_cast<size_t>(n);
}

void Reader::read_nullable_string(std::optional<std::string>& out, bool compact, bool nullable) {
  int64_t n = read_length(compact, false);
  if (n == -1) {
    if (!nullable) fail("null string in a version where the field is not nullable");
    out.reset();
    return;
  }
  if (n < 0) return;
  out.emplace(reinterpret_cast<const char*>(buf_.data() + pos_), static_cast<size_t>(n));
  pos_ += static_cast<size_t>(n);
}

void Reader::read_bytes(Buffer& out, bool compact) {
  int64_t n = read_length(compact, true);
  if (n == -1) fail("null bytes in a non-nullable field");
  if (n < 0) return;
  out = take(static_cast<size_t>(n));
}

void Reader::read_nullable_bytes(std::optional<Buffer>& out, bool compact, bool nullable) {
  int64_t n = read_length(compact, true);
  if (n == -1) {
    if (!nullable) fail("null bytes in a version where the field is not nullable");
    out.reset();
    return;
  }
  if (n < 0) return;
  out = take(static_cast<size_t>(n));
}

int32_t Reader::read_array_len(bool compact, bool nullable) {
  int64_t n = read_length(compact, true);
  if (n == -1 && !nullable) {
    fail("null array in a version where the field is not nullable");
    return -1;
  }
  if (n < -1) return -1;
  return static_cast<int32_t>(n);
}

Reader Reader::sub(size_t n) {
  Reader r;
  if (remaining() < n) {
    fail("tagged field size exceeds the remaining bytes");
    r.error_ = error_;
    return r;
  }
  r.buf_ = buf_;
  r.pos_ = pos_;
  r.end_ = pos_ + n;
  pos_ += n;
  return r;
}

// ---------------------------------------------------------------------------------------------
// Writer

Status Writer::status() const {
  if (ok()) return ok_status();
  return Error::make(Errc::kInvalidArgument, error_);
}

void Writer::fail(const char* what) {
  if (error_.empty()) error_ = (what != nullptr && *what != '\0') ? what : "encode error";
}

void Writer::fail(std::string what) {
  if (error_.empty()) error_ = what.empty() ? std::string("encode error") : std::move(what);
}

Writer& Writer::operator=(Writer&& o) noexcept {
  if (this == &o) return *this;
  own_ = std::move(o.own_);
  out_ = o.out_ == &o.own_ ? &own_ : o.out_;
  chain_ = o.chain_;
  zero_copy_min_ = o.zero_copy_min_;
  size_ = o.size_;
  error_ = std::move(o.error_);
  o.out_ = nullptr;
  o.chain_ = nullptr;
  return *this;
}

void Writer::finish() {
  if (chain_ == nullptr || own_.size() == 0) return;
  chain_->push_back(std::move(own_).freeze());
  own_ = BufferBuilder();
}

void Writer::write_buffer(const Buffer& b) {
  if (chain_ != nullptr && b.size() >= zero_copy_min_ && b.size() > 0) {
    finish();
    chain_->push_back(b);
    size_ += b.size();
    return;
  }
  write_raw(b.data(), b.size());
}

void Writer::write_uvarint(uint32_t v) {
  uint8_t tmp[varint::kMaxVarint32];
  uint8_t* e = varint::put_u32(tmp, v);
  write_raw(tmp, static_cast<size_t>(e - tmp));
}

void Writer::write_varint(int32_t v) {
  uint8_t tmp[varint::kMaxVarint32];
  uint8_t* e = varint::put_s32(tmp, v);
  write_raw(tmp, static_cast<size_t>(e - tmp));
}

void Writer::write_varlong(int64_t v) {
  uint8_t tmp[varint::kMaxVarint64];
  uint8_t* e = varint::put_s64(tmp, v);
  write_raw(tmp, static_cast<size_t>(e - tmp));
}

void Writer::write_length(int64_t n, bool compact, bool wide) {
  if (compact) {
    if (n + 1 > std::numeric_limits<uint32_t>::max()) return fail("length too large");
    write_uvarint(static_cast<uint32_t>(n + 1));
  } else if (wide) {
    if (n > std::numeric_limits<int32_t>::max()) return fail("length too large");
    write_i32(static_cast<int32_t>(n));
  } else {
    if (n > std::numeric_limits<int16_t>::max()) return fail("string longer than 32767 bytes");
    write_i16(static_cast<int16_t>(n));
  }
}

void Writer::write_string(const std::string& s, bool compact) {
  write_length(static_cast<int64_t>(s.size()), compact, false);
  write_raw(s.data(), s.size());
}

void Writer::write_nullable_string(const std::optional<std::string>& s, bool compact, bool nullable,
                                   const char* field) {
  if (!s) {
    if (!nullable) fail(std::string("null value for non-nullable field ") + field);
    write_length(-1, compact, false);
    return;
  }
  write_string(*s, compact);
}

void Writer::write_bytes(const Buffer& b, bool compact) {
  write_length(static_cast<int64_t>(b.size()), compact, true);
  write_buffer(b);
}

void Writer::write_nullable_bytes(const std::optional<Buffer>& b, bool compact, bool nullable,
                                  const char* field) {
  if (!b) {
    if (!nullable) fail(std::string("null value for non-nullable field ") + field);
    write_length(-1, compact, true);
    return;
  }
  write_bytes(*b, compact);
}

void Writer::write_array_len(int64_t n, bool compact) { write_length(n, compact, true); }

}  // namespace shale::protocol
