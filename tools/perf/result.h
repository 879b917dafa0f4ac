// Statistics collection loop and the result of a phase (AutoMQ StatsCollector): one periodic
// line per reporting interval, a Summary line at the end, and the per-period arrays and
// aggregates that make up the JSON result file (perf-yyyy-MM-dd-HH-mm-ss.json).
// Formatting functions are pure so tests can check widths and field order.
// Threading: collect() runs on the control thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "perf/json.h"
#include "perf/options.h"
#include "perf/stats.h"

namespace shale::perf {

struct PeriodResult {
  double produce_rate = 0, produce_throughput_bps = 0, error_rate = 0;
  double consume_rate = 0, consume_throughput_bps = 0;
  int64_t backlog = 0;
  LatencySummary send, e2e;
};
PeriodResult make_period_result(const PeriodStats& s, double elapsed_sec, int groups_per_topic);
std::string format_period_line(const PeriodResult& r, double elapsed_total_sec);

struct CumulativeResult {
  double produce_rate_total = 0, produce_throughput_total_bps = 0;
  double produce_count_total = 0, produce_size_total_bytes = 0, produce_error_total = 0;
  double consume_rate_total = 0, consume_throughput_total_bps = 0;
  double consume_count_total = 0, consume_size_total_bytes = 0;
  LatencySummary send, e2e;
  std::map<double, int64_t> send_quantiles, e2e_quantiles;
};
CumulativeResult make_cumulative_result(const CumulativeStats& s, double elapsed_total_sec);
std::string format_summary_line(const CumulativeResult& r);

struct Result {
  int64_t start_ms = 0;
  CumulativeResult total;
  std::vector<double> time_secs;
  std::vector<PeriodResult> periods;
};

// Returns true when the phase should end (checked after each period line).
using StopCondition = std::function<bool(int64_t start_ns, int64_t now_ns)>;
// Called after each period line (CPU watch, warnings).
using PeriodHook = std::function<void(const PeriodResult&, double elapsed_sec)>;

Result collect(Stats& stats, const StopCondition& stop, int64_t interval_ns, int groups_per_topic,
               const PeriodHook& hook);

Json config_json(const PerfConfig& c);
Json result_json(const PerfConfig& c, const Result& r);
// "perf-yyyy-MM-dd-HH-mm-ss.json" for the given epoch seconds, local time.
std::string result_file_name(long epoch_seconds);

}  // namespace shale::perf
