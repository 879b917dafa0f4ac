#include "protocol_test_util.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "protocol/frame.h"

namespace shale::protocol {

void maybe_write_seed(MessageKind kind, int16_t key, int16_t v, const Buffer& body) {
  const char* dir = std::getenv("SHALE_FUZZ_SEED_DIR");
  if (dir == nullptr || kind == MessageKind::kOther) return;
  BufferBuilder out;
  Writer w(out);
  std::filesystem::path sub;
  if (kind == MessageKind::kRequest) {
    RequestHeader h;
    h.request_api_key = key;
    h.request_api_version = v;
    h.correlation_id = 1;
    h.client_id = "seed";
    if (!encode_request_header(w, h).ok()) return;
    sub = "fuzz_protocol_request";
  } else {
    w.write_i16(key);
    w.write_i16(v);
    sub = "fuzz_protocol_response";
  }
  w.write_raw(body.data(), body.size());
  const std::filesystem::path d = std::filesystem::path(dir) / sub;
  std::filesystem::create_directories(d);
  std::ofstream f(
      d / ("gen-" + std::string(api_name(static_cast<ApiKey>(key))) + "-v" + std::to_string(v)),
      std::ios::binary);
  f.write(reinterpret_cast<const char*>(out.data()), static_cast<std::streamsize>(out.size()));
}

}  // namespace shale::protocol
