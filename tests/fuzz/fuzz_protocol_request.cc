// Input: a request frame without its size prefix (header + body), as a broker receives it.
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "fuzz_util.h"
#include "protocol/frame.h"
#include "protocol/generated/visit.h"

using namespace shale;
using namespace shale::protocol;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Buffer frame = Buffer::copy(data, size);
  Reader r(frame);
  RequestHeader h;
  if (!decode_request_header(r, h).ok()) return 0;
  Buffer body = frame.slice(r.position(), frame.size());
  visit_request(h.request_api_key, [&]<typename T>(std::type_identity<T>) {
    fuzz::check_stable<T>(body, h.request_api_version);
  });
  return 0;
}
