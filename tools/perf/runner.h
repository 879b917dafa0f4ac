// The run algorithm of AutoMQ's PerfCommand (docs/perf-tool.md): topics, consumers first,
// then producers, readiness probe, warmup ramp, tail-read or catch-up phase, result file.
// Runs on the calling (control) thread; owns every client, sending thread and consumer thread
// it starts, and stops them all before returning.
#pragma once

#include "perf/options.h"

namespace shale::perf {

// Returns the process exit code. Errors after option parsing are logged and give 1.
int run_perf(const PerfConfig& config);

// Topic name of the original: __automq_perf_<prefix>_<partitions %04d>_<index %07d>.
std::string perf_topic_name(const std::string& prefix, int partitions, int index);

// Warmup ramp: the rate in force t_ms after warmup start (linear from 1 msg/s to `rate` over
// the first half, then `rate`), as the 5-second rebuilds sample it.
double warmup_rate(int64_t t_ms, int64_t warmup_ms, double rate);

}  // namespace shale::perf
