// `shale perf`: the AutoMQ-compatible benchmark tool (tools/perf, library shale_perf).
#include "app/command.h"
#include "perf/perf_main.h"

namespace {
int perf_command(int argc, char** argv) { return shale::perf::perf_main(argc, argv); }
shale::app::Registrar reg({"perf", "benchmark any Kafka-compatible cluster (AutoMQ perf test)",
                           &perf_command});
}  // namespace
