// Entry point of `shale perf` (called by src/app/perf_command.cc): parses AutoMQ-compatible
// options and runs the benchmark. Returns the process exit code.
#pragma once

namespace shale::perf {

int perf_main(int argc, char** argv);

}  // namespace shale::perf
