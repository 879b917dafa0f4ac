#include "perf/cpu_monitor.h"

#include <sched.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <vector>

#include "perf/rate_limiter.h"

namespace shale::perf {

std::optional<uint64_t> parse_proc_stat_ticks(const std::string& line) {
  // The command name (field 2) may contain spaces; fields are counted after its ')'.
  size_t rp = line.rfind(')');
  if (rp == std::string::npos) return std::nullopt;
  std::istringstream in(line.substr(rp + 1));
  std::vector<std::string> f;
  std::string t;
  while (in >> t) f.push_back(t);
  // After ')': state(3) ppid(4) ... utime(14) stime(15) -> indices 11 and 12.
  if (f.size() < 13) return std::nullopt;
  try {
    return std::stoull(f[11]) + std::stoull(f[12]);
  } catch (...) {
    return std::nullopt;
  }
}

namespace {
std::optional<uint64_t> read_self_ticks() {
  std::ifstream in("/proc/self/stat");
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  return parse_proc_stat_ticks(line);
}
}  // namespace

std::vector<std::string> bottleneck_warnings(std::optional<double> cpu, int budget,
                                             int64_t lag_ns) {
  std::vector<std::string> w;
  if (cpu && *cpu > 0.7 * budget) {
    w.push_back("shale perf uses " + std::to_string(std::lround(*cpu * 100)) +
                "% CPU, more than 70% of its " + std::to_string(budget) +
                "-core budget: the load generator may be the bottleneck");
  }
  if (lag_ns > 1'000'000'000) {
    w.push_back("The send loop is " + std::to_string(lag_ns / 1'000'000) +
                " ms behind the target rate (producers blocked on a full buffer, or not enough "
                "CPU)");
  }
  return w;
}

CpuMonitor::CpuMonitor() {
  cpu_set_t set;
  CPU_ZERO(&set);
  cores_ = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
  if (cores_ < 1) cores_ = 1;
  ticks_per_sec_ = sysconf(_SC_CLK_TCK);
  last_ticks_ = read_self_ticks().value_or(0);
  last_ns_ = mono_ns();
}

std::optional<double> CpuMonitor::sample() {
  auto ticks = read_self_ticks();
  int64_t now = mono_ns();
  if (!ticks || now <= last_ns_ || ticks_per_sec_ <= 0) return std::nullopt;
  double cpu_sec = static_cast<double>(*ticks - last_ticks_) / static_cast<double>(ticks_per_sec_);
  double wall_sec = static_cast<double>(now - last_ns_) / 1e9;
  last_ticks_ = *ticks;
  last_ns_ = now;
  return cpu_sec / wall_sec;
}

}  // namespace shale::perf
