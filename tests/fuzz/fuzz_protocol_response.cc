// Input: int16 api key, int16 api version, then a response body (after the response header).
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "base/endian.h"
#include "fuzz_util.h"
#include "protocol/generated/visit.h"

using namespace shale;
using namespace shale::protocol;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  const auto key = static_cast<int16_t>(be::load16(data));
  const auto version = static_cast<int16_t>(be::load16(data + 2));
  Buffer body = Buffer::copy(data + 4, size - 4);
  visit_response(key, [&]<typename T>(std::type_identity<T>) {
    if (version < T::kMinVersion || version > T::kMaxVersion) return;
    fuzz::check_stable<T>(body, version);
  });
  return 0;
}
