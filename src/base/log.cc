#include "base/log.h"

#include <string>

#include <spdlog/sinks/stdout_color_sinks.h>

#include "base/clock.h"

namespace shale::log {

void init(std::string_view level) {
  auto lvl = spdlog::level::from_str(std::string(level));
  spdlog::set_level(lvl);
  spdlog::set_pattern("%Y-%m-%d %H:%M:%S.%e %^%l%$ %v");
}

bool RateLimiter::allow(uint64_t* suppressed) {
  int64_t now = clock::mono_ms();
  int64_t next = next_ms_.load(std::memory_order_relaxed);
  if (now >= next && next_ms_.compare_exchange_strong(next, now + interval_ms_)) {
    uint64_t d = dropped_.exchange(0);
    if (suppressed != nullptr) *suppressed = d;
    return true;
  }
  dropped_.fetch_add(1, std::memory_order_relaxed);
  return false;
}

}  // namespace shale::log
