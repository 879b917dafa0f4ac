#include "perf/options.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

namespace shale::perf {
namespace {

ParseOutcome parse(std::vector<std::string> args, int min_backlog = 300) {
  return parse_options(args, 1735689600000, "a1B2", min_backlog);
}

// The argparse4j error line that follows the usage line.
std::string error_of(const ParseOutcome& o) {
  EXPECT_EQ(o.kind, ParseOutcome::kUsageError);
  size_t pos = o.text.find("performance-test: error: ");
  EXPECT_NE(pos, std::string::npos) << o.text;
  EXPECT_EQ(o.text.rfind("usage: performance-test", 0), 0u);
  std::string e = o.text.substr(pos + 25);
  if (!e.empty() && e.back() == '\n') e.pop_back();
  return e;
}

TEST(PerfOptions, DefaultsMatchTheOriginal) {
  auto o = parse({});
  ASSERT_EQ(o.kind, ParseOutcome::kRun);
  const auto& c = o.config;
  EXPECT_EQ(c.bootstrap_server, "localhost:9092");
  EXPECT_EQ(c.topic_prefix, "topic_1735689600000_a1B2");
  EXPECT_EQ(c.topics, 1);
  EXPECT_EQ(c.partitions_per_topic, 1);
  EXPECT_EQ(c.producers_per_topic, 1);
  EXPECT_EQ(c.groups_per_topic, 1);
  EXPECT_EQ(c.consumers_per_group, 1);
  EXPECT_TRUE(c.await_topic_ready);
  EXPECT_EQ(c.record_size, 1024);
  EXPECT_EQ(c.random_ratio, 0.0);
  EXPECT_EQ(c.random_pool_size, 1000);
  EXPECT_EQ(c.send_rate, 1000);
  EXPECT_EQ(c.send_rate_during_catchup, 1000);
  EXPECT_EQ(c.max_consume_record_rate, 1000000000);
  EXPECT_EQ(c.backlog_duration_seconds, 0);
  EXPECT_EQ(c.group_start_delay_seconds, 0);
  EXPECT_EQ(c.warmup_duration_minutes, 1);
  EXPECT_EQ(c.consumers_during_catchup_percentage, 100);
  EXPECT_EQ(c.test_duration_minutes, 5);
  EXPECT_EQ(c.reporting_interval_seconds, 1);
  EXPECT_FALSE(c.reset);
  EXPECT_FALSE(c.reuse_topics);
  EXPECT_FALSE(c.catchup_topic_prefix);
}

TEST(PerfOptions, TutorialTailReadCommandParses) {
  auto o = parse({"--bootstrap-server",
                  "h1:9092,h2:9092",
                  "--producer-configs",
                  "batch.size=0",
                  "--consumer-configs",
                  "fetch.max.wait.ms=1000",
                  "--topics",
                  "10",
                  "--partitions-per-topic",
                  "128",
                  "--producers-per-topic",
                  "1",
                  "--groups-per-topic",
                  "1",
                  "--consumers-per-group",
                  "1",
                  "--record-size",
                  "52224",
                  "--send-rate",
                  "1600",
                  "--warmup-duration",
                  "10",
                  "--test-duration",
                  "5",
                  "--reset"});
  ASSERT_EQ(o.kind, ParseOutcome::kRun) << o.text;
  EXPECT_EQ(o.config.bootstrap_server, "h1:9092,h2:9092");
  EXPECT_EQ(o.config.producer_configs, (ConfigMap{{"batch.size", "0"}}));
  EXPECT_EQ(o.config.consumer_configs, (ConfigMap{{"fetch.max.wait.ms", "1000"}}));
  EXPECT_EQ(o.config.topics, 10);
  EXPECT_EQ(o.config.partitions_per_topic, 128);
  EXPECT_EQ(o.config.record_size, 52224);
  EXPECT_EQ(o.config.send_rate, 1600);
  EXPECT_EQ(o.config.warmup_duration_minutes, 10);
  EXPECT_TRUE(o.config.reset);
}

TEST(PerfOptions, TutorialCatchUpCommandParses) {
  auto o = parse({"--topics", "10", "--groups-per-topic", "3", "--record-size", "65536",
                  "--send-rate", "800", "--backlog-duration", "600", "--group-start-delay", "30",
                  "--warmup-duration", "5"});
  ASSERT_EQ(o.kind, ParseOutcome::kRun) << o.text;
  EXPECT_EQ(o.config.backlog_duration_seconds, 600);
  EXPECT_EQ(o.config.group_start_delay_seconds, 30);
  EXPECT_EQ(o.config.groups_per_topic, 3);
}

TEST(PerfOptions, ValueSyntaxes) {
  auto o = parse({"-r1600", "--topics=3", "-n", "8", "-X", "mine", "-B=x"});
  ASSERT_EQ(o.kind, ParseOutcome::kRun) << o.text;
  EXPECT_EQ(o.config.send_rate, 1600);
  EXPECT_EQ(o.config.topics, 3);
  EXPECT_EQ(o.config.partitions_per_topic, 8);
  EXPECT_EQ(o.config.topic_prefix, "mine");
  EXPECT_EQ(o.config.bootstrap_server, "=x");  // argparse: attached short value taken verbatim
}

TEST(PerfOptions, UniqueLongPrefixesAreAccepted) {
  auto o = parse({"--partitions", "4", "--record", "10"});
  ASSERT_EQ(o.kind, ParseOutcome::kRun) << o.text;
  EXPECT_EQ(o.config.partitions_per_topic, 4);
  EXPECT_EQ(o.config.record_size, 10);
  EXPECT_EQ(error_of(parse({"--re"})),
            "ambiguous option: --re could match --reset, --reuse-topics, --record-size, "
            "--reporting-interval");
}

TEST(PerfOptions, ListsTakeTokensUntilTheNextOptionAndLastOccurrenceWins) {
  auto o = parse({"-P", "linger.ms=1", "batch.size=65536", "-t", "2", "-P", "acks=1", "-C", "a=b=c",
                  "-T", "retention.ms=1000"});
  ASSERT_EQ(o.kind, ParseOutcome::kRun) << o.text;
  EXPECT_EQ(o.config.producer_configs, (ConfigMap{{"acks", "1"}}));
  EXPECT_EQ(o.config.consumer_configs, (ConfigMap{{"a", "b=c"}}));  // split at the first '='
  EXPECT_EQ(o.config.topic_configs, (ConfigMap{{"retention.ms", "1000"}}));
  EXPECT_EQ(o.config.topics, 2);
  auto empty = parse({"-P", "-t", "2"});
  ASSERT_EQ(empty.kind, ParseOutcome::kRun);
  EXPECT_TRUE(empty.config.producer_configs.empty());
}

TEST(PerfOptions, CommonConfigsFromFileAndCommandLine) {
  std::string path = ::testing::TempDir() + "/perf_common.properties";
  {
    std::ofstream f(path);
    f << "# comment\n! also a comment\nsecurity.protocol=SASL_PLAINTEXT\n"
         "sasl.mechanism : PLAIN\nclient.id  me\nlong.value=a\\\n    b\nescaped\\=key=x\\ty\n";
  }
  auto o = parse({"-F", path, "--common-configs", "client.id=cli"});
  ASSERT_EQ(o.kind, ParseOutcome::kRun) << o.text;
  EXPECT_EQ(o.config.common_configs, (ConfigMap{{"security.protocol", "SASL_PLAINTEXT"},
                                                {"sasl.mechanism", "PLAIN"},
                                                {"client.id", "cli"},
                                                {"long.value", "ab"},
                                                {"escaped=key", "x\ty"}}));
  auto missing = parse({"-F", "/nonexistent/x.properties"});
  EXPECT_EQ(missing.kind, ParseOutcome::kConfigError);
  std::remove(path.c_str());
}

TEST(PerfOptions, ValidatorMessages) {
  EXPECT_EQ(error_of(parse({"-t", "0"})),
            "argument -t/--topics: expected a positive integer, but got 0");
  EXPECT_EQ(error_of(parse({"-n", "-1"})),
            "argument -n/--partitions-per-topic: expected a positive integer, but got -1");
  EXPECT_EQ(error_of(parse({"-g", "-1"})),
            "argument -g/--groups-per-topic: expected a non-negative integer, but got -1");
  EXPECT_EQ(error_of(parse({"-c", "0"})),
            "argument -c/--consumers-per-group: expected a positive integer, but got 0");
  EXPECT_EQ(error_of(parse({"-m", "1000000001"})),
            "argument -m/--max-consume-record-rate: expected an integer between 0 and "
            "1000000000, but got 1000000001");
  EXPECT_EQ(error_of(parse({"--consumers-during-catchup", "101"})),
            "argument --consumers-during-catchup: expected an integer between 0 and 100, but "
            "got 101");
  EXPECT_EQ(error_of(parse({"-p", "0"})),
            "argument -p/--producers-per-topic: expected a positive integer, but got 0");
  EXPECT_EQ(error_of(parse({"-s", "0"})),
            "argument -s/--record-size: expected a positive integer, but got 0");
  EXPECT_EQ(error_of(parse({"-S", "0"})),
            "argument -S/--random-pool-size: expected a positive integer, but got 0");
  EXPECT_EQ(error_of(parse({"-r", "0"})),
            "argument -r/--send-rate: expected a positive integer, but got 0");
  EXPECT_EQ(error_of(parse({"-a", "0"})),
            "argument -a/--send-rate-during-catchup: expected a positive integer, but got 0");
  EXPECT_EQ(error_of(parse({"-b", "0"})),
            "argument -b/--backlog-duration: expected an integer not less than 300, but got 0");
  EXPECT_EQ(error_of(parse({"-b", "299"})),
            "argument -b/--backlog-duration: expected an integer not less than 300, but got 299");
  EXPECT_EQ(error_of(parse({"-G", "-5"})),
            "argument -G/--group-start-delay: expected a non-negative integer, but got -5");
  EXPECT_EQ(error_of(parse({"-w", "-1"})),
            "argument -w/--warmup-duration: expected a non-negative integer, but got -1");
  EXPECT_EQ(error_of(parse({"-d", "0"})),
            "argument -d/--test-duration: expected a positive integer, but got 0");
  EXPECT_EQ(error_of(parse({"-i", "0"})),
            "argument -i/--reporting-interval: expected a positive integer, but got 0");
}

TEST(PerfOptions, ValidatorsRunOnlyOnExplicitValues) {
  // The default backlog of 0 never meets the >= 300 validator.
  EXPECT_EQ(parse({}).kind, ParseOutcome::kRun);
  EXPECT_EQ(parse({"-b", "300"}).config.backlog_duration_seconds, 300);
  // The test hook lowers the minimum.
  EXPECT_EQ(parse({"-b", "20"}, 10).config.backlog_duration_seconds, 20);
}

TEST(PerfOptions, TypeAndArityErrors) {
  EXPECT_EQ(error_of(parse({"-t", "x"})),
            "argument -t/--topics: could not convert 'x' to Integer (For input string: \"x\")");
  EXPECT_EQ(error_of(parse({"-t", "3000000000"})),
            "argument -t/--topics: could not convert '3000000000' to Integer (For input string: "
            "\"3000000000\")");
  EXPECT_EQ(error_of(parse({"-R", "abc"})),
            "argument -R/--random-ratio: could not convert 'abc' to Double (For input string: "
            "\"abc\")");
  EXPECT_EQ(error_of(parse({"-t"})), "argument -t/--topics: expected one argument");
  EXPECT_EQ(error_of(parse({"-t", "--reset"})), "argument -t/--topics: expected one argument");
  EXPECT_EQ(error_of(parse({"--await-topic-ready"})),
            "argument --await-topic-ready: expected one argument");
  EXPECT_EQ(error_of(parse({"--bogus", "1"})), "unrecognized arguments: '--bogus' '1'");
  EXPECT_EQ(error_of(parse({"--reset=yes"})), "ignored explicit argument 'yes'");
}

TEST(PerfOptions, AwaitTopicReadyIsJavaBooleanValueOf) {
  EXPECT_FALSE(parse({"--await-topic-ready", "false"}).config.await_topic_ready);
  EXPECT_TRUE(parse({"--await-topic-ready", "TRUE"}).config.await_topic_ready);
  EXPECT_FALSE(parse({"--await-topic-ready", "yes"}).config.await_topic_ready);
}

TEST(PerfOptions, SendThroughputReplacesSendRate) {
  auto o = parse({"-r", "5", "-f", "100", "-s", "65536"});
  ASSERT_EQ(o.kind, ParseOutcome::kRun);
  EXPECT_EQ(o.config.send_rate, 1600);
  EXPECT_EQ(o.config.send_rate_during_catchup, 1600);
  EXPECT_EQ(parse({"-f", "1", "-s", "3000"}).config.send_rate, 349);  // truncated
  auto zero = parse({"-f", "0.001", "-s", "65536"});
  EXPECT_EQ(zero.kind, ParseOutcome::kConfigError);
  EXPECT_EQ(parse({"-r", "10", "-a", "20"}).config.send_rate_during_catchup, 20);
}

TEST(PerfOptions, CrossOptionCheck) {
  auto o = parse({"-G", "1"});
  ASSERT_EQ(o.kind, ParseOutcome::kConfigError);
  EXPECT_EQ(o.text,
            "BACKLOG_DURATION_SECONDS(0) should not be less than GROUPS_PER_TOPIC(1) * "
            "GROUP_START_DELAY_SECONDS(1)\n");
  EXPECT_EQ(parse({"-G", "100", "-g", "3", "-b", "300"}).kind, ParseOutcome::kRun);
  EXPECT_EQ(parse({"-G", "101", "-g", "3", "-b", "300"}).kind, ParseOutcome::kConfigError);
  EXPECT_EQ(parse({"-G", "5", "-g", "0"}).kind, ParseOutcome::kRun);
}

TEST(PerfOptions, InvalidConfigItem) {
  auto o = parse({"-P", "linger.ms"});
  ASSERT_EQ(o.kind, ParseOutcome::kConfigError);
  EXPECT_EQ(o.text, "Invalid config: linger.ms\n");
}

TEST(PerfOptions, AvroOptionsAndOtherClearRejections) {
  auto avro = parse({"--value-schema", "{\"type\":\"string\"}", "--values-file", "v.json"});
  ASSERT_EQ(avro.kind, ParseOutcome::kRun);
  EXPECT_EQ(avro.config.value_schema, "{\"type\":\"string\"}");
  EXPECT_EQ(avro.config.values_file, "v.json");
  auto alone = parse({"--values-file", "v.json"});
  ASSERT_EQ(alone.kind, ParseOutcome::kConfigError);
  EXPECT_EQ(alone.text, "--values-file needs --value-schema: its lines are Avro JSON values\n");
  EXPECT_EQ(parse({"-R", "1.5"}).kind, ParseOutcome::kConfigError);
  EXPECT_EQ(parse({"-m", "5"}).kind, ParseOutcome::kConfigError);
}

TEST(PerfOptions, HelpListsEveryOption) {
  auto o = parse({"-t", "3", "--help"});
  ASSERT_EQ(o.kind, ParseOutcome::kHelp);
  for (const char* name : {"--bootstrap-server",
                           "--common-config-file",
                           "--common-configs",
                           "--topic-configs",
                           "--producer-configs",
                           "--consumer-configs",
                           "--reset",
                           "--reuse-topics",
                           "--catchup-topic-prefix",
                           "--topic-prefix",
                           "--topics",
                           "--partitions-per-topic",
                           "--groups-per-topic",
                           "--consumers-per-group",
                           "--await-topic-ready",
                           "--max-consume-record-rate",
                           "--consumers-during-catchup",
                           "--producers-per-topic",
                           "--record-size",
                           "--random-ratio",
                           "--random-pool-size",
                           "--send-rate",
                           "--send-throughput",
                           "--send-rate-during-catchup",
                           "--backlog-duration",
                           "--group-start-delay",
                           "--warmup-duration",
                           "--test-duration",
                           "--reporting-interval",
                           "--value-schema",
                           "--values-file",
                           "--html"}) {
    EXPECT_NE(o.text.find(name), std::string::npos) << name;
  }
  EXPECT_EQ(parse({"-h"}).kind, ParseOutcome::kHelp);
}

TEST(PerfOptions, MinBacklogHookOnlyLowersTheMinimum) {
  EXPECT_EQ(min_backlog_from_env(nullptr), 300);
  EXPECT_EQ(min_backlog_from_env(""), 300);
  EXPECT_EQ(min_backlog_from_env("10"), 10);
  EXPECT_EQ(min_backlog_from_env("1"), 1);
  EXPECT_EQ(min_backlog_from_env("300"), 300);
  // atoi would turn these into 0 (no minimum at all) or a larger minimum.
  EXPECT_EQ(min_backlog_from_env("0"), -1);
  EXPECT_EQ(min_backlog_from_env("abc"), -1);
  EXPECT_EQ(min_backlog_from_env("10s"), -1);
  EXPECT_EQ(min_backlog_from_env("-5"), -1);
  EXPECT_EQ(min_backlog_from_env("301"), -1);
  EXPECT_EQ(min_backlog_from_env("99999999999"), -1);
  // With the hook's value, explicit values below it still fail with the original message.
  auto o = parse({"-b", "9"}, min_backlog_from_env("10"));
  EXPECT_EQ(error_of(o),
            "argument -b/--backlog-duration: expected an integer not less than 10, but got 9");
}

}  // namespace
}  // namespace shale::perf
