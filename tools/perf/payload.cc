#include "perf/payload.h"

namespace shale::perf {

int PayloadPool::random_bytes(int record_size, double random_ratio) {
  return static_cast<int>(record_size * random_ratio);
}

PayloadPool::PayloadPool(int record_size, double random_ratio, int pool_size, uint64_t seed) {
  int rnd = random_bytes(record_size, random_ratio);
  if (rnd == 0) {
    payloads_.emplace_back(static_cast<size_t>(record_size), '\0');
    return;
  }
  std::mt19937_64 gen(seed);
  payloads_.reserve(static_cast<size_t>(pool_size));
  for (int i = 0; i < pool_size; ++i) {
    std::string p(static_cast<size_t>(record_size), '\0');
    for (int b = 0; b < rnd; b += 8) {
      uint64_t r = gen();
      for (int k = 0; k < 8 && b + k < rnd; ++k)
        p[static_cast<size_t>(b + k)] = static_cast<char>(r >> (8 * k));
    }
    payloads_.push_back(std::move(p));
  }
}

std::string base64_url_nopad(const unsigned char* d, size_t len) {
  static const char* tbl = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  size_t i = 0;
  for (; i + 3 <= len; i += 3) {
    uint32_t v = (uint32_t{d[i]} << 16) | (uint32_t{d[i + 1]} << 8) | d[i + 2];
    for (int s = 18; s >= 0; s -= 6) out.push_back(tbl[(v >> s) & 63]);
  }
  if (len - i == 1) {
    uint32_t v = uint32_t{d[i]} << 16;
    out.push_back(tbl[(v >> 18) & 63]);
    out.push_back(tbl[(v >> 12) & 63]);
  } else if (len - i == 2) {
    uint32_t v = (uint32_t{d[i]} << 16) | (uint32_t{d[i + 1]} << 8);
    out.push_back(tbl[(v >> 18) & 63]);
    out.push_back(tbl[(v >> 12) & 63]);
    out.push_back(tbl[(v >> 6) & 63]);
  }
  return out;
}

std::vector<std::string> make_keys(size_t count, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::vector<std::string> keys;
  keys.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    unsigned char b[7];
    uint64_t r = gen();
    for (int k = 0; k < 7; ++k) b[k] = static_cast<unsigned char>(r >> (8 * k));
    keys.push_back(base64_url_nopad(b, 7));
  }
  return keys;
}

void encode_st_header(int64_t t, unsigned char out[8]) {
  uint64_t u = static_cast<uint64_t>(t);
  for (int i = 7; i >= 0; --i) {
    out[i] = static_cast<unsigned char>(u & 0xff);
    u >>= 8;
  }
}

bool decode_st_header(const void* data, size_t len, int64_t* out) {
  if (len != 8 || !data) return false;
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t u = 0;
  for (int i = 0; i < 8; ++i) u = (u << 8) | p[i];
  *out = static_cast<int64_t>(u);
  return true;
}

}  // namespace shale::perf
