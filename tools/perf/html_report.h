// `--html FILE`: a self-contained HTML report of the final phase (no scripts, no external
// resources): summary table plus inline SVG line plots of produce/consume throughput, produce
// latency and end-to-end latency percentiles over time, and the tool's own CPU use.
// Pure function of the result; called once by the control thread at the end of the run.
#pragma once

#include <string>
#include <vector>

#include "perf/options.h"
#include "perf/result.h"

namespace shale::perf {

struct Series {
  std::string name;
  std::string color;
  std::vector<double> y;
};

// One SVG line chart; x values are shared by all series.
std::string svg_line_chart(const std::string& title, const std::string& y_label,
                           const std::vector<double>& x, const std::vector<Series>& series);

// `cpu_cores`: the tool's CPU per period (cores), may be empty.
std::string html_report(const PerfConfig& config, const Result& result,
                        const std::vector<double>& cpu_cores);

}  // namespace shale::perf
