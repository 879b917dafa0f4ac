// Command-line options of `shale perf`, compatible with AutoMQ's automq-perf-test.sh
// (argparse4j conventions: --name value, --name=value, -xVALUE, unique long-option prefixes,
// zero-or-more lists for -T/-P/-C, validators only on explicit values, argparse4j messages).
// parse_options() is pure (no I/O except reading the -F properties file) so tests can check
// every message.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace shale::perf {

using ConfigMap = std::map<std::string, std::string>;

// Field order is the JSON order of the result file's "config" object.
struct PerfConfig {
  std::string bootstrap_server = "localhost:9092";
  ConfigMap common_configs;
  ConfigMap topic_configs;
  ConfigMap producer_configs;
  ConfigMap consumer_configs;
  bool reset = false;
  std::string topic_prefix;
  int topics = 1;
  int partitions_per_topic = 1;
  int producers_per_topic = 1;
  int groups_per_topic = 1;
  int consumers_per_group = 1;
  bool await_topic_ready = true;
  int record_size = 1024;
  double random_ratio = 0.0;
  int random_pool_size = 1000;
  int send_rate = 1000;
  int send_rate_during_catchup = 1000;
  int max_consume_record_rate = 1'000'000'000;
  int backlog_duration_seconds = 0;
  int group_start_delay_seconds = 0;
  int warmup_duration_minutes = 1;
  int consumers_during_catchup_percentage = 100;
  int test_duration_minutes = 5;
  int reporting_interval_seconds = 1;
  std::optional<std::string> value_schema;
  std::optional<std::string> values_file;
  bool reuse_topics = false;
  std::optional<std::string> catchup_topic_prefix;
  // Shale extension, not part of the JSON config object.
  std::optional<std::string> html_file;
};

struct ParseOutcome {
  enum Kind { kRun, kHelp, kUsageError, kConfigError } kind = kRun;
  PerfConfig config;
  // kHelp: the help text (stdout, exit 0). kUsageError: "usage: ...\nperformance-test: error:
  // ...\n" (stderr, exit 1). kConfigError: one line (stderr, exit 1).
  std::string text;
};

// `now_ms` and `random_suffix` make the generated topic prefix deterministic in tests.
// `min_backlog_seconds` is the --backlog-duration minimum (300; integration tests lower it via
// SHALE_PERF_MIN_BACKLOG_SECONDS, see docs/perf-tool.md).
ParseOutcome parse_options(const std::vector<std::string>& args, int64_t now_ms,
                           const std::string& random_suffix, int min_backlog_seconds = 300);

// The value of SHALE_PERF_MIN_BACKLOG_SECONDS: unset or empty means the original minimum of
// 300 s; otherwise it must be a decimal integer in [1, 300] (the hook only lowers the minimum).
// Returns -1 for any other text, which perf_main reports as a configuration error.
int min_backlog_from_env(const char* value);

std::string usage_line();
std::string help_text();

// Java .properties syntax (comments, '='/':'/blank separators, continuation lines, escapes).
ConfigMap parse_properties(const std::string& text);

}  // namespace shale::perf
