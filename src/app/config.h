// Broker configuration: one table of keys (name, type, default, documentation, range and
// validator) from which parsing, validation, `shale serve --help` and docs/configuration.md are
// all produced. Input is a Kafka-style server.properties file plus `--override key=value`.
//
// Adding a key: add one row to the table in config.cc (keys that Kafka or AutoMQ have keep
// their names, types and defaults), read it with Config::get_*(), then regenerate the docs with
// `shale serve --print-config-docs > docs/configuration.md` (a unit test checks they match).
//
// Threads: a Config is built once at start-up and is immutable afterwards; read it from any
// thread. Invariants: a loaded Config holds a valid value for every key in the table; get_*() on
// a name not in the table or of another type is a programmer error (throws std::logic_error).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace shale::app {

enum class ConfigType { kString, kInt, kLong, kBool, kList };

struct ConfigKey {
  const char* name;
  ConfigType type;
  // As written in server.properties. "${data.dir}" is replaced by the value of data.dir.
  const char* default_value;
  const char* group;  // section in the docs
  const char* doc;
  int64_t min = INT64_MIN;  // inclusive range for kInt / kLong
  int64_t max = INT64_MAX;
  // Further check of a type-correct value: returns "" if fine, else the reason.
  std::string (*validate)(std::string_view value) = nullptr;
};

// The table, in documentation order.
const std::vector<ConfigKey>& config_keys();
const ConfigKey* find_config_key(std::string_view name);

// One entry of `listeners` / `advertised.listeners`: NAME://host:port.
struct Listener {
  std::string name;
  std::string host;  // without brackets for IPv6; empty = all interfaces
  uint16_t port = 0;
  std::string to_string() const;
};
Result<std::vector<Listener>> parse_listeners(std::string_view text);
// max.connections.per.ip.overrides: "<ip>:<count>,..." -> ip -> count.
Result<std::map<std::string, int32_t>> parse_ip_overrides(std::string_view text);
// listener.security.protocol.map: listener name -> PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL.
Result<std::map<std::string, std::string>> parse_protocol_map(std::string_view text);

// key -> value, plus where each came from (for error messages).
struct Properties {
  std::map<std::string, std::string> values;
  std::map<std::string, std::string> origin;  // "server.properties:12", "--override"
};

// Java Properties syntax: `key=value`, `key: value` or `key value`; `#`/`!` comments; a line
// ending in a backslash continues; escapes \t \n \r \f \uXXXX and \<char>. Last one wins.
Result<Properties> parse_properties(std::string_view text, std::string_view origin);
Result<Properties> read_properties_file(const std::filesystem::path& path);
// `key=value` from the command line.
Status add_override(Properties& props, std::string_view key_eq_value);

struct LoadOptions {
  // Unknown keys are errors (`shale serve --strict-config`). By default they are accepted and
  // listed in Config::ignored_keys(), so that a Kafka or AutoMQ server.properties loads as it is.
  bool strict = false;
};

class Config {
 public:
  // Validates every given key against the table and fills in defaults. The error lists every
  // problem found, one per line, each naming its key and origin. Kafka keys with a Shale
  // equivalent are translated first, with Kafka's precedence, when the Shale key is not given:
  //   log.dirs (first entry), else log.dir          -> data.dir
  //   log.retention.minutes, else log.retention.hours -> log.retention.ms
  //   controller.listener.names                     -> those listeners are dropped from
  //                                                     listeners / advertised.listeners (a
  //                                                     Shale broker has no KRaft controller)
  static Result<Config> load(const Properties& props, const LoadOptions& opts = {});
  // Defaults only (tests, docs).
  static Config defaults();

  const std::string& get_string(std::string_view key) const;
  int32_t get_int(std::string_view key) const;
  int64_t get_long(std::string_view key) const;
  bool get_bool(std::string_view key) const;
  std::vector<std::string> get_list(std::string_view key) const;
  // True when the user set the key (file or override) rather than taking the default.
  bool is_set(std::string_view key) const;

  std::vector<Listener> listeners() const;
  // The security protocol of a listener (listener.security.protocol.map; unmapped = PLAINTEXT).
  std::string security_protocol(const std::string& listener) const;
  // Kafka's per-listener override listener.name.<listener lower-case>.<key> if given, else the
  // value of <key> when it is in the table, else "" (e.g. plain.sasl.jaas.config).
  std::string listener_value(const std::string& listener, const std::string& key) const;
  // Every listener.name.* key given (not in the table: their names embed the listener).
  const std::map<std::string, std::string>& listener_keys() const { return listener_keys_; }
  // advertised.listeners, or listeners when unset; a wildcard host is replaced by this
  // machine's host name (as Kafka does).
  std::vector<Listener> advertised_listeners() const;

  // Every key with its effective value, in table order ("key=value" lines).
  std::string dump() const;
  // Keys given that Shale does not use (not strict), sorted, with where each came from:
  // "log.segment.bytes (server.properties:12)".
  const std::vector<std::string>& ignored_keys() const { return ignored_; }

  // Automatic memory sizing (docs/performance.md, "Memory") for keys left at -1:
  // s3.wal.cache.size = RAM/32 within [256 MiB, 2 GiB], s3.block.cache.size = RAM/64 within
  // [128 MiB, 1 GiB], s3.wal.upload.threshold = min(wal cache / 3, 500 MiB). AutoMQ's rule (a
  // share of a JVM heap sized at 75 % of RAM) gave 4 + 2 GiB of caches on a 24 GiB machine,
  // which a broker then filled: peak RSS 3-5x Kafka's (1 GiB heap + the OS page cache).
  void resolve_memory_defaults(uint64_t physical_memory_bytes);

 private:
  const std::string& raw(std::string_view key, ConfigType type) const;
  std::map<std::string, std::string, std::less<>> values_;
  std::map<std::string, bool, std::less<>> set_;
  std::vector<std::string> ignored_;
  std::map<std::string, std::string> listener_keys_;
};

// `shale serve --help` footer: every key with type, default and documentation.
std::string config_help_text();
// The whole of docs/configuration.md.
std::string config_docs_markdown();

// Kafka keeps the cluster id in <log dir>/meta.properties; so do we, in data.dir. Creates the
// file (with a new random id unless `configured` is set) on first start; afterwards the
// stored id wins and a different configured cluster.id or node.id is an error.
Result<std::string> ensure_cluster_id(const std::filesystem::path& data_dir,
                                      const std::string& configured, int32_t node_id);
// A Kafka-style cluster id: 16 random bytes, URL-safe base64 without padding (22 chars).
std::string generate_cluster_id();

}  // namespace shale::app
