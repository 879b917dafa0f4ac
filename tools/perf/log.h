// The tool's log lines on stdout, in the layout of AutoMQ's perf-log4j.properties:
// "yyyy-MM-dd HH:mm:ss -" then the level right-aligned in 5 chars, a space and the message
// ("2024-11-06 16:17:03 - INFO 230.0s | ..."). Thread-safe: one mutex around each whole line.
// A test can redirect the sink with set_log_sink().
#pragma once

#include <functional>
#include <string>

namespace shale::perf {

enum class Level { kInfo, kWarn, kError };

void log_line(Level level, const std::string& message);
inline void log_info(const std::string& m) { log_line(Level::kInfo, m); }
inline void log_warn(const std::string& m) { log_line(Level::kWarn, m); }
inline void log_error(const std::string& m) { log_line(Level::kError, m); }

// Formats the prefix for a given epoch-seconds time in local time (exposed for tests).
std::string log_prefix(long epoch_seconds, Level level);
// Replaces the stdout sink (nullptr restores it). The sink receives whole lines with '\n'.
void set_log_sink(std::function<void(const std::string&)> sink);
// Local time formatted with strftime `fmt` (e.g. "%Y-%m-%d-%H-%M-%S" for the result file name).
std::string local_time_string(long epoch_seconds, const char* fmt);

}  // namespace shale::perf
