#include "perf/log.h"

#include <time.h>

#include <cstdio>
#include <mutex>

namespace shale::perf {
namespace {
std::mutex g_mu;
std::function<void(const std::string&)> g_sink;
}  // namespace

std::string local_time_string(long epoch_seconds, const char* fmt) {
  time_t t = epoch_seconds;
  tm tmv;
  localtime_r(&t, &tmv);
  char buf[64];
  size_t n = strftime(buf, sizeof buf, fmt, &tmv);
  return std::string(buf, n);
}

std::string log_prefix(long epoch_seconds, Level level) {
  const char* lv = level == Level::kInfo ? " INFO" : level == Level::kWarn ? " WARN" : "ERROR";
  return local_time_string(epoch_seconds, "%Y-%m-%d %H:%M:%S") + " -" + lv + " ";
}

void log_line(Level level, const std::string& message) {
  std::string line = log_prefix(static_cast<long>(time(nullptr)), level) + message + "\n";
  std::lock_guard lk(g_mu);
  if (g_sink) {
    g_sink(line);
  } else {
    std::fwrite(line.data(), 1, line.size(), stdout);
    std::fflush(stdout);
  }
}

void set_log_sink(std::function<void(const std::string&)> sink) {
  std::lock_guard lk(g_mu);
  g_sink = std::move(sink);
}

}  // namespace shale::perf
