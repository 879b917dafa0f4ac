// Record contents (AutoMQ PerfCommand.payloads / ProducerService): the value pool, the 16 384
// preset keys (URL-safe unpadded Base64 of 7 random bytes = 10 chars) and the 8-byte big-endian
// `st` send-time header. Pools are built once before the load starts and are then read-only,
// so sending threads share them without locks and hand the bytes to librdkafka without copying.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace shale::perf {

class PayloadPool {
 public:
  // ratio 0 (randomBytes == 0): one all-zero payload; otherwise `pool_size` payloads whose first
  // (int)(record_size * ratio) bytes are random and the rest zero.
  PayloadPool(int record_size, double random_ratio, int pool_size, uint64_t seed);
  // Pre-built payloads (Avro mode: Confluent-framed values of one topic). Must not be empty.
  explicit PayloadPool(std::vector<std::string> payloads) : payloads_(std::move(payloads)) {}
  size_t size() const { return payloads_.size(); }
  const std::string& at(size_t i) const { return payloads_[i]; }
  static int random_bytes(int record_size, double random_ratio);

 private:
  std::vector<std::string> payloads_;
};

std::vector<std::string> make_keys(size_t count, uint64_t seed);
std::string base64_url_nopad(const unsigned char* data, size_t len);

void encode_st_header(int64_t send_time_ns, unsigned char out[8]);
// Returns false unless `len` == 8.
bool decode_st_header(const void* data, size_t len, int64_t* out);

}  // namespace shale::perf
