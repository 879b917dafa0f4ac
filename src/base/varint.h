// Variable-length integers as the Kafka protocol encodes them: unsigned LEB128 ("unsigned
// varint", used by compact types and tagged fields) and zig-zag signed varint/varlong (used
// inside records). Decoders never read past `end` and report failure instead.
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>

namespace shale::varint {

constexpr size_t kMaxVarint32 = 5;
constexpr size_t kMaxVarint64 = 10;

inline uint32_t zigzag_encode32(int32_t v) {
  return (static_cast<uint32_t>(v) << 1) ^ static_cast<uint32_t>(v >> 31);
}
inline int32_t zigzag_decode32(uint32_t v) {
  return static_cast<int32_t>((v >> 1) ^ (~(v & 1) + 1));
}
inline uint64_t zigzag_encode64(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
inline int64_t zigzag_decode64(uint64_t v) {
  return static_cast<int64_t>((v >> 1) ^ (~(v & 1) + 1));
}

inline size_t size_u64(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}
inline size_t size_u32(uint32_t v) { return size_u64(v); }
inline size_t size_s32(int32_t v) { return size_u64(zigzag_encode32(v)); }
inline size_t size_s64(int64_t v) { return size_u64(zigzag_encode64(v)); }

// Writes v at p (which must have room for size_u64(v) bytes); returns the byte after.
inline uint8_t* put_u64(uint8_t* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<uint8_t>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<uint8_t>(v);
  return p;
}
inline uint8_t* put_u32(uint8_t* p, uint32_t v) { return put_u64(p, v); }
inline uint8_t* put_s32(uint8_t* p, int32_t v) { return put_u64(p, zigzag_encode32(v)); }
inline uint8_t* put_s64(uint8_t* p, int64_t v) { return put_u64(p, zigzag_encode64(v)); }

// Reads an unsigned varint of at most `max_bytes` bytes from [p, end). Returns the byte after
// it, or nullptr when truncated or too long.
inline const uint8_t* get_u64(const uint8_t* p, const uint8_t* end, uint64_t* out,
                              size_t max_bytes = kMaxVarint64) {
  uint64_t result = 0;
  for (size_t i = 0, shift = 0; i < max_bytes; ++i, shift += 7) {
    if (p >= end) return nullptr;
    uint8_t b = *p++;
    result |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) {
      *out = result;
      return p;
    }
  }
  return nullptr;
}
inline const uint8_t* get_u32(const uint8_t* p, const uint8_t* end, uint32_t* out) {
  uint64_t v = 0;
  p = get_u64(p, end, &v, kMaxVarint32);
  if (p == nullptr || v > 0xffffffffull) return nullptr;
  *out = static_cast<uint32_t>(v);
  return p;
}
inline const uint8_t* get_s32(const uint8_t* p, const uint8_t* end, int32_t* out) {
  uint32_t v = 0;
  p = get_u32(p, end, &v);
  if (p != nullptr) *out = zigzag_decode32(v);
  return p;
}
inline const uint8_t* get_s64(const uint8_t* p, const uint8_t* end, int64_t* out) {
  uint64_t v = 0;
  p = get_u64(p, end, &v);
  if (p != nullptr) *out = zigzag_decode64(v);
  return p;
}

}  // namespace shale::varint
