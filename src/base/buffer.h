// Buffer: an immutable, reference-counted view of bytes. Slicing shares the owner, so a
// record batch read from a socket can travel to the WAL, the LogCache and a fetch response
// without copies. BufferChain is a sequence of Buffers for scatter-gather I/O.
// Thread-safety: a Buffer may be copied and read from any thread (the count is atomic); the
// bytes are never written after construction.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

namespace shale {

class Buffer {
 public:
  Buffer() = default;
  Buffer(std::shared_ptr<const void> owner, const uint8_t* data, size_t size)
      : owner_(std::move(owner)), data_(data), size_(size) {}

  // Copies n bytes into a new buffer.
  static Buffer copy(const void* data, size_t n) {
    auto mem = std::shared_ptr<uint8_t[]>(new uint8_t[n > 0 ? n : 1]);
    if (n > 0) std::memcpy(mem.get(), data, n);
    const uint8_t* p = mem.get();
    return Buffer(std::shared_ptr<const void>(mem, p), p, n);
  }
  static Buffer copy(std::string_view s) { return copy(s.data(), s.size()); }
  // Takes ownership of a vector without copying its bytes.
  static Buffer take(std::vector<uint8_t>&& v) {
    auto holder = std::make_shared<std::vector<uint8_t>>(std::move(v));
    const uint8_t* p = holder->data();
    size_t n = holder->size();
    return Buffer(std::shared_ptr<const void>(holder, p), p, n);
  }

  const uint8_t* data() const noexcept { return data_; }
  size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  const uint8_t* begin() const noexcept { return data_; }
  const uint8_t* end() const noexcept { return data_ + size_; }
  std::string_view view() const noexcept { return {reinterpret_cast<const char*>(data_), size_}; }
  // A sub-range sharing the same owner. Clamped to the buffer's bounds.
  Buffer slice(size_t offset, size_t len) const noexcept {
    if (offset > size_) offset = size_;
    if (len > size_ - offset) len = size_ - offset;
    return Buffer(owner_, data_ + offset, len);
  }
  const std::shared_ptr<const void>& owner() const noexcept { return owner_; }

 private:
  std::shared_ptr<const void> owner_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// A writable, growable byte vector that can be frozen into a Buffer without copying.
class BufferBuilder {
 public:
  explicit BufferBuilder(size_t reserve = 0) { bytes_.reserve(reserve); }
  uint8_t* grow(size_t n) {
    size_t old = bytes_.size();
    bytes_.resize(old + n);
    return bytes_.data() + old;
  }
  void append(const void* p, size_t n) {
    if (n > 0) std::memcpy(grow(n), p, n);
  }
  size_t size() const noexcept { return bytes_.size(); }
  uint8_t* data() noexcept { return bytes_.data(); }
  std::vector<uint8_t>& bytes() noexcept { return bytes_; }
  Buffer freeze() && { return Buffer::take(std::move(bytes_)); }

 private:
  std::vector<uint8_t> bytes_;
};

class BufferChain {
 public:
  void push_back(Buffer b) {
    size_ += b.size();
    parts_.push_back(std::move(b));
  }
  size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  const std::vector<Buffer>& parts() const noexcept { return parts_; }
  void clear() {
    parts_.clear();
    size_ = 0;
  }
  // Copies everything into one contiguous buffer (for cold paths and tests).
  Buffer flatten() const {
    if (parts_.size() == 1) return parts_[0];
    BufferBuilder b(size_);
    for (const auto& p : parts_) b.append(p.data(), p.size());
    return std::move(b).freeze();
  }

 private:
  std::vector<Buffer> parts_;
  size_t size_ = 0;
};

}  // namespace shale
