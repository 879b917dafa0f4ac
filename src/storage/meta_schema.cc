#include "storage/meta_schema.h"

#include <fmt/format.h>

#include "base/endian.h"

namespace shale::storage {

namespace {

constexpr uint8_t kVersion = 1;

class Writer {
 public:
  void u8(uint8_t v) { s_.push_back(static_cast<char>(v)); }
  void u32(uint32_t v) {
    uint8_t b[4];
    be::store32(b, v);
    s_.append(reinterpret_cast<char*>(b), 4);
  }
  void u64(uint64_t v) {
    uint8_t b[8];
    be::store64(b, v);
    s_.append(reinterpret_cast<char*>(b), 8);
  }
  void i64(int64_t v) { u64(static_cast<uint64_t>(v)); }
  void str(const std::string& v) {
    u32(static_cast<uint32_t>(v.size()));
    s_ += v;
  }
  std::string take() { return std::move(s_); }

 private:
  std::string s_;
};

class Reader {
 public:
  explicit Reader(const std::string& s)
      : p_(reinterpret_cast<const uint8_t*>(s.data())), n_(s.size()) {}
  bool ok() const { return ok_; }
  uint8_t u8() { return need(1) ? p_[pos_++] : 0; }
  uint32_t u32() {
    if (!need(4)) return 0;
    uint32_t v = be::load32(p_ + pos_);
    pos_ += 4;
    return v;
  }
  uint64_t u64() {
    if (!need(8)) return 0;
    uint64_t v = be::load64(p_ + pos_);
    pos_ += 8;
    return v;
  }
  int64_t i64() { return static_cast<int64_t>(u64()); }
  std::string str() {
    uint32_t n = u32();
    if (!need(n)) return {};
    std::string v(reinterpret_cast<const char*>(p_ + pos_), n);
    pos_ += n;
    return v;
  }

 private:
  bool need(size_t k) {
    if (n_ - pos_ < k) ok_ = false;
    return ok_;
  }
  const uint8_t* p_;
  size_t n_;
  size_t pos_ = 0;
  bool ok_ = true;
};

Error corrupt(const char* what) {
  return Error::make(Errc::kCorruption, std::string("bad ") + what + " record in MetaStore");
}

}  // namespace

std::string Keys::hex(int64_t v) { return fmt::format("{:016x}", static_cast<uint64_t>(v)); }

int64_t Keys::parse_id(const std::string& key) {
  auto slash = key.rfind('/');
  return static_cast<int64_t>(std::stoull(key.substr(slash + 1), nullptr, 16));
}

std::string Keys::object_name(int64_t id) const {
  std::string h = fmt::format("{:08x}", static_cast<uint32_t>(id));
  return std::string(h.rbegin(), h.rend()) + "/" + ns_ + "/" + std::to_string(id);
}

std::string encode_stream(const StreamMeta& m) {
  Writer w;
  w.u8(kVersion);
  w.i64(m.epoch);
  w.u8(static_cast<uint8_t>(m.state));
  w.u32(static_cast<uint32_t>(m.owner));
  w.i64(m.start);
  w.i64(m.end);
  w.u32(static_cast<uint32_t>(m.tags.size()));
  for (auto& [k, v] : m.tags) {
    w.str(k);
    w.str(v);
  }
  return w.take();
}

Result<StreamMeta> decode_stream(const std::string& v) {
  Reader r(v);
  StreamMeta m;
  if (r.u8() != kVersion) return corrupt("stream");
  m.epoch = r.i64();
  m.state = static_cast<StreamState>(r.u8());
  m.owner = static_cast<int32_t>(r.u32());
  m.start = r.i64();
  m.end = r.i64();
  uint32_t n = r.u32();
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    std::string k = r.str();
    m.tags[k] = r.str();
  }
  if (!r.ok()) return corrupt("stream");
  return m;
}

std::string encode_object(const ObjectMeta& m) {
  Writer w;
  w.u8(kVersion);
  w.u8(static_cast<uint8_t>(m.type));
  w.u8(static_cast<uint8_t>(m.state));
  w.u32(static_cast<uint32_t>(m.node));
  w.u64(m.size);
  w.i64(m.time_ms);
  w.i64(m.data_time_ms);
  w.u32(static_cast<uint32_t>(m.ranges.size()));
  for (auto& r : m.ranges) {
    w.i64(r.stream_id);
    w.i64(r.start);
    w.i64(r.end);
  }
  return w.take();
}

Result<ObjectMeta> decode_object(const std::string& v) {
  Reader r(v);
  ObjectMeta m;
  if (r.u8() != kVersion) return corrupt("object");
  m.type = static_cast<ObjectType>(r.u8());
  m.state = static_cast<ObjectState>(r.u8());
  m.node = static_cast<int32_t>(r.u32());
  m.size = r.u64();
  m.time_ms = r.i64();
  m.data_time_ms = r.i64();
  uint32_t n = r.u32();
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    ObjectRange x;
    x.stream_id = r.i64();
    x.start = r.i64();
    x.end = r.i64();
    m.ranges.push_back(x);
  }
  if (!r.ok()) return corrupt("object");
  return m;
}

std::string encode_range(const RangeRow& x) {
  Writer w;
  w.u8(kVersion);
  w.i64(x.stream_id);
  w.i64(x.start);
  w.i64(x.end);
  w.i64(x.object_id);
  w.u64(x.object_size);
  return w.take();
}

Result<RangeRow> decode_range(const std::string& v) {
  Reader r(v);
  RangeRow x;
  if (r.u8() != kVersion) return corrupt("range");
  x.stream_id = r.i64();
  x.start = r.i64();
  x.end = r.i64();
  x.object_id = r.i64();
  x.object_size = r.u64();
  if (!r.ok()) return corrupt("range");
  return x;
}

}  // namespace shale::storage
