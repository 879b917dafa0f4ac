#include "group/consumer_protocol.h"

#include "group/byte_io.h"

namespace shale::group {

Result<std::vector<std::string>> subscription_topics(std::string_view metadata) {
  io::Reader r(metadata);
  int16_t version = 0;
  int32_t n = 0;
  if (!r.i16(version) || version < 0) {
    return Error::make(Errc::kCorruption, "subscription without a valid version");
  }
  if (!r.i32(n) || n < 0) return Error::make(Errc::kCorruption, "subscription topics malformed");
  std::vector<std::string> topics;
  for (int32_t i = 0; i < n; ++i) {
    std::optional<std::string> t;
    if (!r.short_string(t) || !t) {
      return Error::make(Errc::kCorruption, "subscription topic malformed");
    }
    topics.push_back(std::move(*t));
  }
  return topics;
}

}  // namespace shale::group
