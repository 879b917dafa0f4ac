// Logging on spdlog: one process-wide logger, configured once by the app. RateLimitedLog lets
// a hot error path log at most once per interval (malformed frames, failing object store).
// Thread-safety: spdlog's default logger is thread-safe; RateLimitedLog uses an atomic.
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>

#include <spdlog/spdlog.h>

namespace shale::log {

// Sets up the default logger ("yyyy-mm-dd hh:mm:ss.mmm LEVEL message") at the given level
// ("trace", "debug", "info", "warn", "error"). Safe to call more than once.
void init(std::string_view level = "info");

// Returns true at most once per `interval_ms`; counts the suppressed calls in between.
class RateLimiter {
 public:
  explicit RateLimiter(int64_t interval_ms) : interval_ms_(interval_ms) {}
  // When it returns true, *suppressed holds how many calls were dropped since the last one.
  bool allow(uint64_t* suppressed = nullptr);

 private:
  int64_t interval_ms_;
  std::atomic<int64_t> next_ms_{0};
  std::atomic<uint64_t> dropped_{0};
};

}  // namespace shale::log
