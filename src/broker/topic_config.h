// Topic-level configuration: Kafka's topic config names, types, defaults and broker-level
// synonyms (for DescribeConfigs), plus validation with Kafka's error texts. Shale enforces
// retention.ms, retention.bytes, max.message.bytes, message.timestamp.type and
// message.timestamp.before/after.max.ms; the other keys
// Kafka defines are accepted and stored so that tools which set them keep working.
//
// Threads: static immutable table; TopicConfigs values are plain data.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "protocol/compression.h"

namespace shale::broker {

enum class ConfigValueType { kBool, kInt, kLong, kDouble, kString, kList, kPassword };

struct TopicConfigKey {
  const char* name;
  ConfigValueType type;
  const char* default_value;
  const char* broker_synonym;  // the broker key whose value is the topic default, or nullptr
  const char* doc;
};

const std::vector<TopicConfigKey>& topic_config_keys();
const TopicConfigKey* find_topic_config_key(std::string_view name);

// Broker-wide values that topic defaults come from (server.properties).
struct BrokerTopicDefaults {
  int64_t retention_ms = 604800000;             // log.retention.ms
  int64_t retention_bytes = -1;                 // log.retention.bytes
  int32_t max_message_bytes = 1048588;          // message.max.bytes
  int64_t timestamp_before_max_ms = INT64_MAX;  // log.message.timestamp.before.max.ms
  int64_t timestamp_after_max_ms = 3600000;     // log.message.timestamp.after.max.ms (Kafka 4)
  // Synonym keys the operator set explicitly (reported as STATIC_BROKER_CONFIG).
  std::map<std::string, std::string> static_overrides;
  // Dynamic broker configs (AlterConfigs / IncrementalAlterConfigs on the BROKER resource),
  // by broker key: for this broker (resource name = node id; DYNAMIC_BROKER_CONFIG) and for
  // every broker (resource name ""; DYNAMIC_DEFAULT_BROKER_CONFIG). They win over the static
  // values, this broker's over the cluster-wide ones. Values are validated.
  std::map<std::string, std::string> dynamic_broker;
  std::map<std::string, std::string> dynamic_default;

  // The value in force for a broker key: dynamic (this broker, then cluster-wide), else nullopt.
  std::optional<std::string> dynamic_value(const std::string& broker_key) const;
};

// ConfigSource values of DescribeConfigs / CreateTopics.
constexpr int8_t kSourceTopic = 1;
constexpr int8_t kSourceDynamicBroker = 2;
constexpr int8_t kSourceDynamicDefaultBroker = 3;
constexpr int8_t kSourceStaticBroker = 4;
constexpr int8_t kSourceDefault = 5;

// The broker keys that can be changed at run time: the topic defaults Shale applies (as in
// Kafka, where they are cluster-wide dynamic configs).
const std::vector<std::string>& dynamic_broker_keys();
// Checks one dynamic broker config (known key, value in range); Kafka's error texts.
Status validate_dynamic_broker_config(std::string_view name,
                                      const std::optional<std::string>& value);

// Checks one topic config (name known, value parses and is allowed). The error message is the
// one Kafka puts in the response for INVALID_CONFIG.
Status validate_topic_config(std::string_view name, const std::optional<std::string>& value);

// Effective settings of one topic: overrides over broker defaults, parsed once.
struct TopicSettings {
  int64_t retention_ms = 604800000;
  int64_t retention_bytes = -1;
  int32_t max_message_bytes = 1048588;
  bool log_append_time = false;
  // CreateTime records older than now - before or newer than now + after are refused.
  int64_t timestamp_before_max_ms = INT64_MAX;
  int64_t timestamp_after_max_ms = 3600000;
  // compression.type: the codec batches are stored with; nullopt = "producer" (keep theirs).
  std::optional<protocol::Compression> compression;

  static TopicSettings resolve(const std::map<std::string, std::string>& overrides,
                               const BrokerTopicDefaults& defaults);
};

// The default value of a topic key given the broker defaults (what DescribeConfigs reports
// when the topic has no override), and whether it came from the broker's own configuration.
struct DefaultValue {
  std::string value;
  int8_t source =
      kSourceDefault;  // DYNAMIC_*_BROKER_CONFIG or STATIC_BROKER_CONFIG via broker_synonym
};
DefaultValue topic_config_default(const TopicConfigKey& key, const BrokerTopicDefaults& d);

// The codec of a validated compression.type value; nullopt for "producer".
std::optional<protocol::Compression> compression_of(std::string_view type);

}  // namespace shale::broker
