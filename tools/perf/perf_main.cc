#include "perf/perf_main.h"

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "perf/options.h"
#include "perf/rate_limiter.h"
#include "perf/runner.h"

namespace shale::perf {

int perf_main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  static const char* kAlnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  std::random_device rd;
  std::string suffix;
  for (int i = 0; i < 4; ++i) suffix.push_back(kAlnum[rd() % 62]);
  // Test-only hook (documented in docs/perf-tool.md): lowers the --backlog-duration minimum so
  // integration tests can run catch-up mode in seconds instead of 5 minutes.
  const char* hook = std::getenv("SHALE_PERF_MIN_BACKLOG_SECONDS");
  int min_backlog = min_backlog_from_env(hook);
  if (min_backlog < 0) {
    std::fprintf(stderr,
                 "SHALE_PERF_MIN_BACKLOG_SECONDS must be an integer from 1 to 300, got '%s'\n",
                 hook);
    return 1;
  }
  ParseOutcome o = parse_options(args, wall_ns() / 1'000'000, suffix, min_backlog);
  switch (o.kind) {
    case ParseOutcome::kHelp:
      std::fputs(o.text.c_str(), stdout);
      return 0;
    case ParseOutcome::kUsageError:
    case ParseOutcome::kConfigError:
      std::fputs(o.text.c_str(), stderr);
      return 1;
    case ParseOutcome::kRun:
      break;
  }
  return run_perf(o.config);
}

}  // namespace shale::perf
