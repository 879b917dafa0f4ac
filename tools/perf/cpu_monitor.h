// Watches the tool's own CPU use (utime + stime of /proc/self/stat) so the log can warn when the
// load generator itself may be the bottleneck (the AutoMQ tutorial's advice: keep the client
// below 70 % CPU). Used by the statistics thread only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace shale::perf {

// Parses utime+stime (clock ticks) out of a /proc/<pid>/stat line; nullopt if malformed.
std::optional<uint64_t> parse_proc_stat_ticks(const std::string& stat_line);

// The warnings for one reporting period: CPU above 70 % of the core budget, or the send loop
// more than 1 s behind the rate limiter's slots. Empty when the tool is not the bottleneck.
std::vector<std::string> bottleneck_warnings(std::optional<double> cpu_cores, int core_budget,
                                             int64_t send_lag_ns);

class CpuMonitor {
 public:
  CpuMonitor();
  // Cores this process may run on (sched_getaffinity), the budget the percentage refers to.
  int core_budget() const { return cores_; }
  // CPU used since the previous call, in cores (1.0 = one core busy), or nullopt on error.
  std::optional<double> sample();

 private:
  int cores_;
  long ticks_per_sec_;
  uint64_t last_ticks_ = 0;
  int64_t last_ns_ = 0;
};

}  // namespace shale::perf
