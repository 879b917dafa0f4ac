// Clocks: wall time in milliseconds (Kafka timestamps) and a monotonic clock for timeouts.
// Thread-safety: pure functions.
#pragma once

#include <chrono>
#include <cstdint>

namespace shale::clock {

inline int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}
inline int64_t mono_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
inline int64_t mono_ms() { return mono_ns() / 1000000; }

}  // namespace shale::clock
