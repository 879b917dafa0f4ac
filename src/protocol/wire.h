// Kafka wire primitives: Reader (bounds-checked decoding from a shale::Buffer) and Writer
// (encoding into a BufferBuilder, or only counting bytes). The generated message codecs in
// protocol/generated/ are written against these two classes.
//
// Error model: both classes carry a sticky error. The first failed read (truncation, a negative
// or oversize length, a null where the version forbids it, ...) records a message and moves the
// Reader to its end, so every later read fails cheaply and loops terminate; callers check ok()
// or status() once at the end. This keeps the generated code small (compile time matters).
//
// Hostile input: array counts are checked against the bytes that remain before anything is
// allocated, and vectors grow only as elements are actually decoded, so a forged count cannot
// allocate more than the frame itself justifies.
//
// Zero copy: bytes/records fields decode to Buffer slices that share the frame's owner.
//
// Thread-safety: a Reader/Writer is used by one thread at a time; they own no shared state.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "base/buffer.h"
#include "base/result.h"

namespace shale {
// Byte-wise equality for Buffers, so generated message structs can default operator== (used to
// decide whether a tagged or version-gated field holds its default value).
inline bool operator==(const Buffer& a, const Buffer& b) noexcept {
  return a.size() == b.size() && (a.size() == 0 || std::memcmp(a.data(), b.data(), a.size()) == 0);
}
}  // namespace shale

namespace shale::protocol {

// A 128-bit Kafka UUID (topic ids, incarnation ids). All zeroes is Kafka's ZERO_UUID.
struct Uuid {
  std::array<uint8_t, 16> bytes{};
  bool operator==(const Uuid&) const = default;
  bool is_zero() const noexcept {
    for (uint8_t b : bytes)
      if (b != 0) return false;
    return true;
  }
  // Kafka prints UUIDs as URL-safe base64 without padding (22 chars).
  std::string to_base64() const;
};

class Reader {
 public:
  Reader() = default;
  explicit Reader(Buffer buf) : buf_(std::move(buf)), pos_(0), end_(buf_.size()) {}

  bool ok() const noexcept { return error_.empty(); }
  Status status() const;
  const std::string& error_message() const noexcept { return error_; }
  size_t remaining() const noexcept { return end_ - pos_; }
  size_t position() const noexcept { return pos_; }
  const Buffer& buffer() const noexcept { return buf_; }

  // Records a failure (first one wins) and makes every later read fail.
  void fail(const char* what);
  void fail(std::string what);

  int8_t read_i8() { return static_cast<int8_t>(take_fixed<1>()); }
  int16_t read_i16() { return static_cast<int16_t>(take_fixed<2>()); }
  uint16_t read_u16() { return static_cast<uint16_t>(take_fixed<2>()); }
  int32_t read_i32() { return static_cast<int32_t>(take_fixed<4>()); }
  uint32_t read_u32() { return static_cast<uint32_t>(take_fixed<4>()); }
  int64_t read_i64() { return static_cast<int64_t>(take_fixed<8>()); }
  double read_f64() {
    uint64_t bits = take_fixed<8>();
    double d;
    std::memcpy(&d, &bits, sizeof d);
    return d;
  }
  // Kafka reads any non-zero byte as true; so do we (re-encoding then writes 1).
  bool read_bool() { return take_fixed<1>() != 0; }
  Uuid read_uuid();
  uint32_t read_uvarint();
  int32_t read_varint();
  int64_t read_varlong();
  // Skips n bytes.
  void skip(size_t n);

  // Strings. `compact` selects the flexible-version encoding. The non-nullable form fails on
  // a null; the nullable form fails on a null only when `nullable` (the field is nullable in
  // this version) is false.
  void read_string(std::string& out, bool compact);
  void read_nullable_string(std::optional<std::string>& out, bool compact, bool nullable);
  void read_bytes(Buffer& out, bool compact);
  void read_nullable_bytes(std::optional<Buffer>& out, bool compact, bool nullable);
  // Array element count: -1 for null (allowed only when `nullable`), otherwise a count no
  // larger than the bytes that remain.
  int32_t read_array_len(bool compact, bool nullable);

  // A reader over the next n bytes (a tagged field's value); advances this reader past them.
  Reader sub(size_t n);
  // Adopts a failure from a sub-reader.
  void absorb(const Reader& sub) {
    if (!sub.ok() && ok()) fail(sub.error_);
  }

 private:
  template <size_t N>
  uint64_t take_fixed() {
    if (end_ - pos_ < N) {
      fail("truncated");
      return 0;
    }
    const uint8_t* p = buf_.data() + pos_;
    pos_ += N;
    uint64_t v = 0;
    for (size_t i = 0; i < N; ++i) v = (v << 8) | p[i];
    return v;
  }
  // Reads a length prefix: int16/int32 or compact uvarint (minus one). Returns -1 for null,
  // -2 after a failure; a non-negative length is guaranteed to fit in the remaining bytes.
  int64_t read_length(bool compact, bool wide);
  Buffer take(size_t n) {
    Buffer b = buf_.slice(pos_, n);
    pos_ += n;
    return b;
  }

  Buffer buf_;
  size_t pos_ = 0;
  size_t end_ = 0;
  std::string error_;
};

class Writer {
 public:
  // Appends to `out`. The builder must outlive the writer.
  explicit Writer(BufferBuilder& out) : out_(&out) {}
  // Zero-copy mode: bytes/records values of at least `zero_copy_min` bytes are not copied but
  // appended to `chain` as slices sharing their owner (a Fetch response's record batches go
  // out as they sit in the cache). Call finish() once at the end to flush the tail.
  explicit Writer(BufferChain& chain, size_t zero_copy_min = 4096)
      : out_(&own_), chain_(&chain), zero_copy_min_(zero_copy_min) {}
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;
  Writer(Writer&& o) noexcept { *this = std::move(o); }
  Writer& operator=(Writer&& o) noexcept;
  // Zero-copy mode only: moves the bytes written since the last slice into the chain.
  void finish();
  // A writer that only counts bytes (used for encoded_size and tagged-field sizes).
  static Writer counter() { return Writer(); }

  bool ok() const noexcept { return error_.empty(); }
  Status status() const;
  // Bytes written (or counted) so far by this writer.
  size_t size() const noexcept { return size_; }
  void fail(const char* what);
  void fail(std::string what);

  void write_i8(int8_t v) { put_fixed<1>(static_cast<uint8_t>(v)); }
  void write_i16(int16_t v) { put_fixed<2>(static_cast<uint16_t>(v)); }
  void write_u16(uint16_t v) { put_fixed<2>(v); }
  void write_i32(int32_t v) { put_fixed<4>(static_cast<uint32_t>(v)); }
  void write_u32(uint32_t v) { put_fixed<4>(v); }
  void write_i64(int64_t v) { put_fixed<8>(static_cast<uint64_t>(v)); }
  void write_f64(double d) {
    uint64_t bits;
    std::memcpy(&bits, &d, sizeof bits);
    put_fixed<8>(bits);
  }
  void write_bool(bool v) { put_fixed<1>(v ? 1u : 0u); }
  void write_uuid(const Uuid& u) { write_raw(u.bytes.data(), u.bytes.size()); }
  void write_uvarint(uint32_t v);
  void write_varint(int32_t v);
  void write_varlong(int64_t v);
  void write_raw(const void* p, size_t n) {
    if (out_ != nullptr) out_->append(p, n);
    size_ += n;
  }
  // Appends a Buffer's bytes: shared, not copied, in zero-copy mode when large enough.
  void write_buffer(const Buffer& b);

  // `field` names the field in error messages; `nullable` says whether null is legal in this
  // version (writing null where it is not is an error, as in Kafka's Java serializer).
  void write_string(const std::string& s, bool compact);
  void write_nullable_string(const std::optional<std::string>& s, bool compact, bool nullable,
                             const char* field);
  void write_bytes(const Buffer& b, bool compact);
  void write_nullable_bytes(const std::optional<Buffer>& b, bool compact, bool nullable,
                            const char* field);
  // n = -1 writes a null array.
  void write_array_len(int64_t n, bool compact);

 private:
  Writer() = default;
  template <size_t N>
  void put_fixed(uint64_t v) {
    if (out_ != nullptr) {
      uint8_t* p = out_->grow(N);
      for (size_t i = 0; i < N; ++i) p[i] = static_cast<uint8_t>(v >> (8 * (N - 1 - i)));
    }
    size_ += N;
  }
  void write_length(int64_t n, bool compact, bool wide);

  BufferBuilder* out_ = nullptr;
  BufferBuilder own_;             // zero-copy mode: bytes since the last slice
  BufferChain* chain_ = nullptr;  // zero-copy mode: the output
  size_t zero_copy_min_ = 0;
  size_t size_ = 0;
  std::string error_;
};

}  // namespace shale::protocol
