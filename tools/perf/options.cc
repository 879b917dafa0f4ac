#include "perf/options.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>

namespace shale::perf {
namespace {

enum class Kind { kString, kInt, kDouble, kBool, kFlag, kList, kHelp };

struct Spec {
  const char* short_name;  // may be nullptr
  const char* long_name;
  const char* metavar;
  Kind kind;
  const char* help;
  const char* default_text;  // nullptr: no "(default: ...)"
  // Validator on explicit integer values: returns an error message or "".
  std::function<std::string(long long)> check;
};

std::string positive(long long v) {
  return v > 0 ? "" : "expected a positive integer, but got " + std::to_string(v);
}
std::string non_negative(long long v) {
  return v >= 0 ? "" : "expected a non-negative integer, but got " + std::to_string(v);
}
std::function<std::string(long long)> between(long long a, long long b) {
  return [a, b](long long v) {
    return v >= a && v <= b ? ""
                            : "expected an integer between " + std::to_string(a) + " and " +
                                  std::to_string(b) + ", but got " + std::to_string(v);
  };
}
std::function<std::string(long long)> not_less(long long m) {
  return [m](long long v) {
    return v >= m ? ""
                  : "expected an integer not less than " + std::to_string(m) + ", but got " +
                        std::to_string(v);
  };
}

std::vector<Spec> specs(int min_backlog) {
  return {
      {"-h", "--help", nullptr, Kind::kHelp, "show this help message and exit", nullptr, {}},
      {"-B",
       "--bootstrap-server",
       "BOOTSTRAP_SERVER",
       Kind::kString,
       "The bootstrap servers of the Kafka-compatible cluster.",
       "localhost:9092",
       {}},
      {"-F",
       "--common-config-file",
       "COMMON_CONFIG_FILE",
       Kind::kString,
       "A Java .properties file of client properties for the admin client, producers and "
       "consumers.",
       nullptr,
       {}},
      {nullptr,
       "--common-configs",
       "COMMON_CONFIG",
       Kind::kList,
       "Client properties (k=v) for the admin client, producers and consumers, e.g. "
       "authentication. Applied after --common-config-file.",
       nullptr,
       {}},
      {"-T",
       "--topic-configs",
       "TOPIC_CONFIG",
       Kind::kList,
       "The topic configurations (k=v).",
       nullptr,
       {}},
      {"-P",
       "--producer-configs",
       "PRODUCER_CONFIG",
       Kind::kList,
       "The producer configurations (k=v).",
       nullptr,
       {}},
      {"-C",
       "--consumer-configs",
       "CONSUMER_CONFIG",
       Kind::kList,
       "The consumer configurations (k=v).",
       nullptr,
       {}},
      {nullptr,
       "--reset",
       nullptr,
       Kind::kFlag,
       "Delete all topics whose names start with __automq_perf_ before the test.",
       "false",
       {}},
      {nullptr,
       "--reuse-topics",
       nullptr,
       Kind::kFlag,
       "Reuse the existing topics __automq_perf_<TOPIC_PREFIX>* instead of creating new ones.",
       "false",
       {}},
      {nullptr,
       "--catchup-topic-prefix",
       "CATCHUP_TOPIC_PREFIX",
       Kind::kString,
       "Consume the existing topics __automq_perf_<CATCHUP_TOPIC_PREFIX>* without producing.",
       nullptr,
       {}},
      {"-X",
       "--topic-prefix",
       "TOPIC_PREFIX",
       Kind::kString,
       "The topic prefix (default: topic_<epoch ms>_<4 random characters>).",
       nullptr,
       {}},
      {"-t", "--topics", "TOPICS", Kind::kInt, "The number of topics.", "1", positive},
      {"-n", "--partitions-per-topic", "PARTITIONS_PER_TOPIC", Kind::kInt,
       "The number of partitions per topic.", "1", positive},
      {"-g", "--groups-per-topic", "GROUPS_PER_TOPIC", Kind::kInt,
       "The number of consumer groups per topic.", "1", non_negative},
      {"-c", "--consumers-per-group", "CONSUMERS_PER_GROUP", Kind::kInt,
       "The number of consumers per group.", "1", positive},
      {nullptr,
       "--await-topic-ready",
       "AWAIT_TOPIC_READY",
       Kind::kBool,
       "Probe every partition before the test (true/false).",
       "true",
       {}},
      {"-m", "--max-consume-record-rate", "MAX_CONSUME_RECORD_RATE", Kind::kInt,
       "The max rate of consuming records per second, shared by all consumers.", "1000000000",
       between(0, 1'000'000'000)},
      {nullptr, "--consumers-during-catchup", "CONSUMERS_DURING_CATCHUP", Kind::kInt,
       "The percentage of topics whose consumers read during the catch-up phase.", "100",
       between(0, 100)},
      {"-p", "--producers-per-topic", "PRODUCERS_PER_TOPIC", Kind::kInt,
       "The number of producers per topic.", "1", positive},
      {"-s", "--record-size", "RECORD_SIZE", Kind::kInt, "The record size in bytes.", "1024",
       positive},
      {"-R",
       "--random-ratio",
       "RANDOM_RATIO",
       Kind::kDouble,
       "The ratio of random payloads. The value should be between 0.0 and 1.0.",
       "0.0",
       {}},
      {"-S", "--random-pool-size", "RANDOM_POOL_SIZE", Kind::kInt,
       "The count of random payloads. Only used when random ratio is greater than 0.0.", "1000",
       positive},
      {"-r", "--send-rate", "SEND_RATE", Kind::kInt, "The total send rate in messages per second.",
       "1000", positive},
      {"-f",
       "--send-throughput",
       "SEND_THROUGHPUT",
       Kind::kDouble,
       "The total send throughput in MB/s. Overrides --send-rate.",
       nullptr,
       {}},
      {"-a", "--send-rate-during-catchup", "SEND_RATE_DURING_CATCHUP", Kind::kInt,
       "The send rate in messages per second during the catch-up phase (default: SEND_RATE).",
       nullptr, positive},
      {"-b", "--backlog-duration", "BACKLOG_DURATION_SECONDS", Kind::kInt,
       "The backlog duration in seconds, and zero means no backlog. Should not be less than "
       "GROUPS_PER_TOPIC * GROUP_START_DELAY_SECONDS.",
       "0", not_less(min_backlog)},
      {"-G", "--group-start-delay", "GROUP_START_DELAY_SECONDS", Kind::kInt,
       "The group start delay in seconds.", "0", non_negative},
      {"-w", "--warmup-duration", "WARMUP_DURATION_MINUTES", Kind::kInt,
       "The warmup duration in minutes.", "1", non_negative},
      {"-d", "--test-duration", "TEST_DURATION_MINUTES", Kind::kInt,
       "The test duration in minutes.", "5", positive},
      {"-i", "--reporting-interval", "REPORTING_INTERVAL_SECONDS", Kind::kInt,
       "The reporting interval in seconds.", "1", positive},
      {nullptr,
       "--value-schema",
       "VALUE_SCHEMA",
       Kind::kString,
       "The Avro schema of the record values; values are sent in the Confluent wire format "
       "with the schema id from -P schema.registry.url.",
       nullptr,
       {}},
      {nullptr,
       "--values-file",
       "VALUES_FILE",
       Kind::kString,
       "A file of Avro JSON values, one per line, for --value-schema (default: random values).",
       nullptr,
       {}},
      {nullptr,
       "--html",
       "HTML_FILE",
       Kind::kString,
       "Also write a self-contained HTML report with throughput and latency plots.",
       nullptr,
       {}},
  };
}

std::string textual_name(const Spec& s) {
  return s.short_name ? std::string(s.short_name) + "/" + s.long_name : s.long_name;
}

bool looks_like_negative_number(const std::string& t) {
  if (t.size() < 2 || t[0] != '-') return false;
  char* end = nullptr;
  std::strtod(t.c_str(), &end);
  return end && *end == '\0';
}

bool looks_like_option(const std::string& t) {
  return t.size() > 1 && t[0] == '-' && !looks_like_negative_number(t);
}

// Java Integer.valueOf: optional sign and decimal digits, within int32.
bool parse_java_int(const std::string& s, long long* out) {
  if (s.empty()) return false;
  size_t i = (s[0] == '+' || s[0] == '-') ? 1 : 0;
  if (i == s.size()) return false;
  for (size_t j = i; j < s.size(); ++j) {
    if (s[j] < '0' || s[j] > '9') return false;
  }
  errno = 0;
  long long v = std::strtoll(s.c_str(), nullptr, 10);
  if (errno == ERANGE || v < INT_MIN || v > INT_MAX) return false;
  *out = v;
  return true;
}

bool parse_java_double(const std::string& s, double* out) {
  std::string t = s;
  while (!t.empty() && (t.back() == 'd' || t.back() == 'D' || t.back() == 'f' || t.back() == 'F'))
    t.pop_back();
  if (t.empty() || std::isspace(static_cast<unsigned char>(t[0]))) return false;
  char* end = nullptr;
  double v = std::strtod(t.c_str(), &end);
  if (!end || *end != '\0') return false;
  *out = v;
  return true;
}

struct Parsed {
  std::map<std::string, std::string> scalars;             // long name -> value
  std::map<std::string, std::vector<std::string>> lists;  // long name -> items
  std::map<std::string, bool> flags;
};

std::string alnum_prefix_default(int64_t now_ms, const std::string& suffix) {
  return "topic_" + std::to_string(now_ms) + "_" + suffix;
}

}  // namespace

std::string usage_line() {
  // Wrapped at 80 columns with continuation lines aligned after the program name, as
  // argparse4j prints it.
  const std::string head = "usage: performance-test";
  const std::string indent(head.size() + 1, ' ');
  std::string u = head, line = head;
  for (const auto& s : specs(300)) {
    std::string item = std::string("[") + (s.short_name ? s.short_name : s.long_name);
    if (s.kind == Kind::kList) {
      item += " [" + std::string(s.metavar) + " [" + s.metavar + " ...]]";
    } else if (s.metavar && s.kind != Kind::kFlag && s.kind != Kind::kHelp) {
      item += " " + std::string(s.metavar);
    }
    item += "]";
    if (line.size() + 1 + item.size() > 80 && line.size() > indent.size()) {
      u += "\n" + indent + item;
      line = indent + item;
    } else {
      u += " " + item;
      line += " " + item;
    }
  }
  return u + "\n";
}

std::string help_text() {
  std::string h = usage_line();
  h += "\nThis tool is used to run performance tests.\n\nnamed arguments:\n";
  for (const auto& s : specs(300)) {
    std::string names;
    std::string mv;
    if (s.kind == Kind::kList) {
      mv = " [" + std::string(s.metavar) + " [" + s.metavar + " ...]]";
    } else if (s.metavar && s.kind != Kind::kFlag && s.kind != Kind::kHelp) {
      mv = std::string(" ") + s.metavar;
    }
    if (s.short_name) names = std::string(s.short_name) + mv + ", ";
    names += std::string(s.long_name) + mv;
    std::string line = "  " + names;
    std::string text = s.help;
    if (s.default_text) text += std::string(" (default: ") + s.default_text + ")";
    if (line.size() < 24) {
      line += std::string(25 - line.size(), ' ') + text + "\n";
    } else {
      line += "\n" + std::string(25, ' ') + text + "\n";
    }
    h += line;
  }
  return h;
}

ConfigMap parse_properties(const std::string& text) {
  ConfigMap out;
  std::vector<std::string> logical;
  {
    std::istringstream in(text);
    std::string line, acc;
    bool cont = false;
    while (std::getline(in, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      size_t b = line.find_first_not_of(" \t\f");
      std::string t = b == std::string::npos ? "" : line.substr(b);
      if (!cont && (t.empty() || t[0] == '#' || t[0] == '!')) continue;
      size_t bs = 0;
      for (size_t i = t.size(); i > 0 && t[i - 1] == '\\'; --i) ++bs;
      bool next_cont = bs % 2 == 1;
      if (next_cont) t.pop_back();
      acc += t;
      cont = next_cont;
      if (!cont) {
        logical.push_back(acc);
        acc.clear();
      }
    }
    if (cont) logical.push_back(acc);
  }
  auto unescape = [](const std::string& s) {
    std::string r;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] != '\\' || i + 1 == s.size()) {
        r.push_back(s[i]);
        continue;
      }
      char c = s[++i];
      switch (c) {
        case 't':
          r.push_back('\t');
          break;
        case 'n':
          r.push_back('\n');
          break;
        case 'r':
          r.push_back('\r');
          break;
        case 'f':
          r.push_back('\f');
          break;
        case 'u':
          if (i + 4 < s.size()) {
            unsigned cp =
                static_cast<unsigned>(std::strtoul(s.substr(i + 1, 4).c_str(), nullptr, 16));
            i += 4;
            if (cp < 0x80) {
              r.push_back(static_cast<char>(cp));
            } else if (cp < 0x800) {
              r.push_back(static_cast<char>(0xC0 | (cp >> 6)));
              r.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
            } else {
              r.push_back(static_cast<char>(0xE0 | (cp >> 12)));
              r.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
              r.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
            }
          }
          break;
        default:
          r.push_back(c);
      }
    }
    return r;
  };
  for (const auto& l : logical) {
    size_t i = 0;
    while (i < l.size()) {
      char c = l[i];
      if (c == '\\') {
        i += 2;
        continue;
      }
      if (c == '=' || c == ':' || c == ' ' || c == '\t' || c == '\f') break;
      ++i;
    }
    std::string key = l.substr(0, std::min(i, l.size()));
    size_t j = i;
    while (j < l.size() && (l[j] == ' ' || l[j] == '\t' || l[j] == '\f')) ++j;
    if (j < l.size() && (l[j] == '=' || l[j] == ':')) ++j;
    while (j < l.size() && (l[j] == ' ' || l[j] == '\t' || l[j] == '\f')) ++j;
    out[unescape(key)] = unescape(j < l.size() ? l.substr(j) : "");
  }
  return out;
}

int min_backlog_from_env(const char* value) {
  if (value == nullptr || *value == '\0') return 300;
  std::string v(value);
  if (v.size() > 3 ||
      !std::all_of(v.begin(), v.end(), [](unsigned char ch) { return std::isdigit(ch) != 0; })) {
    return -1;
  }
  int n = std::atoi(v.c_str());
  return n >= 1 && n <= 300 ? n : -1;
}

ParseOutcome parse_options(const std::vector<std::string>& args, int64_t now_ms,
                           const std::string& random_suffix, int min_backlog_seconds) {
  ParseOutcome res;
  const auto table = specs(min_backlog_seconds);
  auto usage_error = [&](const std::string& msg) {
    res.kind = ParseOutcome::kUsageError;
    res.text = usage_line() + "performance-test: error: " + msg + "\n";
    return res;
  };
  auto config_error = [&](const std::string& msg) {
    res.kind = ParseOutcome::kConfigError;
    res.text = msg + "\n";
    return res;
  };

  Parsed p;
  std::vector<std::string> unrecognized;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& tok = args[i];
    if (!looks_like_option(tok)) {
      unrecognized.push_back(tok);
      continue;
    }
    const Spec* spec = nullptr;
    std::optional<std::string> attached;
    if (tok.rfind("--", 0) == 0) {
      std::string name = tok;
      size_t eq = tok.find('=');
      if (eq != std::string::npos) {
        name = tok.substr(0, eq);
        attached = tok.substr(eq + 1);
      }
      std::vector<const Spec*> matches;
      for (const auto& s : table) {
        if (name == s.long_name) {
          matches = {&s};
          break;
        }
        if (std::string(s.long_name).rfind(name, 0) == 0) matches.push_back(&s);
      }
      if (matches.size() > 1) {
        std::string m;
        for (const auto* s : matches) m += (m.empty() ? "" : ", ") + std::string(s->long_name);
        return usage_error("ambiguous option: " + name + " could match " + m);
      }
      if (matches.empty()) {
        unrecognized.push_back(tok);
        continue;
      }
      spec = matches[0];
    } else {
      std::string name = tok.substr(0, 2);
      for (const auto& s : table) {
        if (s.short_name && name == s.short_name) spec = &s;
      }
      if (!spec) {
        unrecognized.push_back(tok);
        continue;
      }
      if (tok.size() > 2) attached = tok.substr(2);
    }
    const std::string lname = spec->long_name;
    switch (spec->kind) {
      case Kind::kHelp:
        res.kind = ParseOutcome::kHelp;
        res.text = help_text();
        return res;
      case Kind::kFlag:
        if (attached) return usage_error("ignored explicit argument '" + *attached + "'");
        p.flags[lname] = true;
        break;
      case Kind::kList: {
        std::vector<std::string> items;
        if (attached) {
          items.push_back(*attached);
        } else {
          while (i + 1 < args.size() && !looks_like_option(args[i + 1])) items.push_back(args[++i]);
        }
        p.lists[lname] = items;  // argparse4j store: the last occurrence wins
        break;
      }
      default: {
        std::string v;
        if (attached) {
          v = *attached;
        } else if (i + 1 < args.size() && !looks_like_option(args[i + 1])) {
          v = args[++i];
        } else {
          return usage_error("argument " + textual_name(*spec) + ": expected one argument");
        }
        if (spec->kind == Kind::kInt) {
          long long n = 0;
          if (!parse_java_int(v, &n)) {
            return usage_error("argument " + textual_name(*spec) + ": could not convert '" + v +
                               "' to Integer (For input string: \"" + v + "\")");
          }
          if (spec->check) {
            std::string err = spec->check(n);
            if (!err.empty()) return usage_error("argument " + textual_name(*spec) + ": " + err);
          }
        } else if (spec->kind == Kind::kDouble) {
          double d = 0;
          if (!parse_java_double(v, &d)) {
            return usage_error("argument " + textual_name(*spec) + ": could not convert '" + v +
                               "' to Double (For input string: \"" + v + "\")");
          }
        }
        p.scalars[lname] = v;
      }
    }
  }
  if (!unrecognized.empty()) {
    std::string u;
    for (const auto& t : unrecognized) u += (u.empty() ? "'" : " '") + t + "'";
    return usage_error("unrecognized arguments: " + u);
  }

  PerfConfig& c = res.config;
  auto get = [&](const char* n) -> const std::string* {
    auto it = p.scalars.find(n);
    return it == p.scalars.end() ? nullptr : &it->second;
  };
  auto get_int = [&](const char* n, int* dst) {
    if (auto* v = get(n)) *dst = static_cast<int>(std::strtoll(v->c_str(), nullptr, 10));
  };
  if (auto* v = get("--bootstrap-server")) c.bootstrap_server = *v;
  if (auto* v = get("--common-config-file")) {
    std::ifstream f(*v);
    if (!f) return config_error("Failed to load common config file: " + *v);
    std::stringstream ss;
    ss << f.rdbuf();
    c.common_configs = parse_properties(ss.str());
  }
  auto parse_list = [&](const char* n, ConfigMap* dst) -> std::string {
    auto it = p.lists.find(n);
    if (it == p.lists.end()) return "";
    for (const auto& item : it->second) {
      size_t eq = item.find('=');
      if (eq == std::string::npos) return "Invalid config: " + item;
      (*dst)[item.substr(0, eq)] = item.substr(eq + 1);
    }
    return "";
  };
  for (auto [name, dst] : {std::pair{"--common-configs", &c.common_configs},
                           std::pair{"--topic-configs", &c.topic_configs},
                           std::pair{"--producer-configs", &c.producer_configs},
                           std::pair{"--consumer-configs", &c.consumer_configs}}) {
    std::string err = parse_list(name, dst);
    if (!err.empty()) return config_error(err);
  }
  c.reset = p.flags.count("--reset") > 0;
  c.reuse_topics = p.flags.count("--reuse-topics") > 0;
  if (auto* v = get("--catchup-topic-prefix")) c.catchup_topic_prefix = *v;
  if (auto* v = get("--topic-prefix")) {
    c.topic_prefix = *v;
  } else {
    c.topic_prefix = alnum_prefix_default(now_ms, random_suffix);
  }
  get_int("--topics", &c.topics);
  get_int("--partitions-per-topic", &c.partitions_per_topic);
  get_int("--groups-per-topic", &c.groups_per_topic);
  get_int("--consumers-per-group", &c.consumers_per_group);
  if (auto* v = get("--await-topic-ready")) {
    std::string l = *v;
    for (auto& ch : l) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    c.await_topic_ready = l == "true";  // Java Boolean.valueOf
  }
  get_int("--max-consume-record-rate", &c.max_consume_record_rate);
  get_int("--consumers-during-catchup", &c.consumers_during_catchup_percentage);
  get_int("--producers-per-topic", &c.producers_per_topic);
  get_int("--record-size", &c.record_size);
  if (auto* v = get("--random-ratio")) parse_java_double(*v, &c.random_ratio);
  get_int("--random-pool-size", &c.random_pool_size);
  get_int("--send-rate", &c.send_rate);
  if (auto* v = get("--send-throughput")) {
    double f = 0;
    parse_java_double(*v, &f);
    double r = f * 1024 * 1024 / c.record_size;
    c.send_rate = r >= INT_MAX ? INT_MAX : r <= INT_MIN ? INT_MIN : static_cast<int>(r);
  }
  c.send_rate_during_catchup = c.send_rate;
  get_int("--send-rate-during-catchup", &c.send_rate_during_catchup);
  get_int("--backlog-duration", &c.backlog_duration_seconds);
  get_int("--group-start-delay", &c.group_start_delay_seconds);
  get_int("--warmup-duration", &c.warmup_duration_minutes);
  get_int("--test-duration", &c.test_duration_minutes);
  get_int("--reporting-interval", &c.reporting_interval_seconds);
  if (auto* v = get("--value-schema")) c.value_schema = *v;
  if (auto* v = get("--values-file")) c.values_file = *v;
  if (auto* v = get("--html")) c.html_file = *v;

  if (static_cast<long long>(c.backlog_duration_seconds) <
      static_cast<long long>(c.groups_per_topic) * c.group_start_delay_seconds) {
    return config_error("BACKLOG_DURATION_SECONDS(" + std::to_string(c.backlog_duration_seconds) +
                        ") should not be less than GROUPS_PER_TOPIC(" +
                        std::to_string(c.groups_per_topic) + ") * GROUP_START_DELAY_SECONDS(" +
                        std::to_string(c.group_start_delay_seconds) + ")");
  }
  // Deliberate deviations: the Java tool crashes later on these; shale perf says why up front.
  // (The Java tool silently sends raw payloads when --values-file comes without a schema.)
  if (c.values_file && !c.value_schema) {
    return config_error("--values-file needs --value-schema: its lines are Avro JSON values");
  }
  if (c.send_rate <= 0) {
    return config_error("--send-throughput gives a send rate of " + std::to_string(c.send_rate) +
                        " msg/s at --record-size " + std::to_string(c.record_size) +
                        "; it must be at least 1 msg/s");
  }
  if (c.random_ratio < 0 || c.random_ratio > 1 || std::isnan(c.random_ratio)) {
    return config_error("--random-ratio must be between 0.0 and 1.0, but got " +
                        std::to_string(c.random_ratio));
  }
  if (c.max_consume_record_rate < 10) {
    return config_error(
        "--max-consume-record-rate must be at least 10 (the shared token bucket holds rate/10 "
        "tokens), but got " +
        std::to_string(c.max_consume_record_rate));
  }
  return res;
}

}  // namespace shale::perf
