#include "broker/topic_config.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>

namespace shale::broker {
namespace {

using T = ConfigValueType;

const std::vector<TopicConfigKey> kKeys = {
    {"cleanup.policy", T::kList, "delete", "log.cleanup.policy",
     "delete only; compaction is not supported yet"},
    {"compression.type", T::kString, "producer", "compression.type",
     "producer keeps the batches as the producer compressed them; uncompressed, gzip, "
     "snappy, lz4 or zstd makes the broker recompress batches that differ"},
    {"delete.retention.ms", T::kLong, "86400000", "log.cleaner.delete.retention.ms", ""},
    {"file.delete.delay.ms", T::kLong, "60000", "log.segment.delete.delay.ms", ""},
    {"flush.messages", T::kLong, "9223372036854775807", "log.flush.interval.messages", ""},
    {"flush.ms", T::kLong, "9223372036854775807", "log.flush.interval.ms", ""},
    {"follower.replication.throttled.replicas", T::kList, "", nullptr,
     "accepted; no effect (storage is shared: nothing is replicated)"},
    {"index.interval.bytes", T::kInt, "4096", "log.index.interval.bytes", ""},
    {"leader.replication.throttled.replicas", T::kList, "", nullptr,
     "accepted; no effect (storage is shared: nothing is replicated)"},
    {"local.retention.bytes", T::kLong, "-2", "log.local.retention.bytes", ""},
    {"local.retention.ms", T::kLong, "-2", "log.local.retention.ms", ""},
    {"max.compaction.lag.ms", T::kLong, "9223372036854775807", "log.cleaner.max.compaction.lag.ms",
     ""},
    {"max.message.bytes", T::kInt, "1048588", "message.max.bytes", "largest record batch accepted"},
    {"message.timestamp.after.max.ms", T::kLong, "3600000", "log.message.timestamp.after.max.ms",
     "largest amount a CreateTime timestamp may lie ahead of the broker's clock"},
    {"message.timestamp.before.max.ms", T::kLong, "9223372036854775807",
     "log.message.timestamp.before.max.ms",
     "largest amount a CreateTime timestamp may lie behind the broker's clock"},
    {"message.timestamp.type", T::kString, "CreateTime", "log.message.timestamp.type",
     "CreateTime or LogAppendTime"},
    {"min.cleanable.dirty.ratio", T::kDouble, "0.5", "log.cleaner.min.cleanable.ratio", ""},
    {"min.compaction.lag.ms", T::kLong, "0", "log.cleaner.min.compaction.lag.ms", ""},
    {"min.insync.replicas", T::kInt, "1", "min.insync.replicas", ""},
    {"preallocate", T::kBool, "false", "log.preallocate", ""},
    {"remote.storage.enable", T::kBool, "false", nullptr, ""},
    {"retention.bytes", T::kLong, "-1", "log.retention.bytes", "-1: no size limit"},
    {"retention.ms", T::kLong, "604800000", "log.retention.ms", "-1: no time limit"},
    {"segment.bytes", T::kInt, "1073741824", "log.segment.bytes", "accepted"},
    {"segment.index.bytes", T::kInt, "10485760", "log.index.size.max.bytes", ""},
    {"segment.jitter.ms", T::kLong, "0", "log.roll.jitter.ms", ""},
    {"segment.ms", T::kLong, "604800000", "log.roll.ms", "accepted"},
    {"unclean.leader.election.enable", T::kBool, "false", "unclean.leader.election.enable", ""},
};

bool parse_long(std::string_view s, int64_t& out) {
  auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size() && !s.empty();
}

Error invalid(std::string msg) { return Error::make(Errc::kInvalidArgument, std::move(msg)); }

std::string bad_value(std::string_view name, std::string_view value, std::string_view why) {
  return "Invalid value " + std::string(value) + " for configuration " + std::string(name) + ": " +
         std::string(why);
}

}  // namespace

const std::vector<TopicConfigKey>& topic_config_keys() { return kKeys; }

const TopicConfigKey* find_topic_config_key(std::string_view name) {
  for (const auto& k : kKeys) {
    if (name == k.name) return &k;
  }
  return nullptr;
}

Status validate_topic_config(std::string_view name, const std::optional<std::string>& value) {
  const TopicConfigKey* k = find_topic_config_key(name);
  if (k == nullptr) return invalid("Unknown topic config name: " + std::string(name));
  if (!value) return invalid("Null value not supported for topic configs: " + std::string(name));
  const std::string& v = *value;
  int64_t n = 0;
  switch (k->type) {
    case T::kInt:
    case T::kLong:
      if (!parse_long(v, n) || (k->type == T::kInt && (n < INT32_MIN || n > INT32_MAX))) {
        return invalid(bad_value(
            name, v, "Not a number of type " + std::string(k->type == T::kInt ? "INT" : "LONG")));
      }
      break;
    case T::kBool:
      if (v != "true" && v != "false") {
        return invalid(bad_value(name, v, "Expected value to be either true or false"));
      }
      break;
    case T::kDouble: {
      char* end = nullptr;
      std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0')
        return invalid(bad_value(name, v, "Not a number of type DOUBLE"));
      break;
    }
    default:
      break;
  }
  if (name == "cleanup.policy") {
    size_t pos = 0;
    while (pos <= v.size()) {
      size_t comma = v.find(',', pos);
      std::string item =
          v.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
      while (!item.empty() && item.front() == ' ') item.erase(item.begin());
      while (!item.empty() && item.back() == ' ') item.pop_back();
      if (item == "compact") return invalid("compacted topics are not supported yet");
      if (item != "delete") {
        return invalid(bad_value(name, v, "String must be one of: compact, delete"));
      }
      if (comma == std::string::npos) break;
      pos = comma + 1;
    }
  } else if (name == "message.timestamp.type") {
    if (v != "CreateTime" && v != "LogAppendTime") {
      return invalid(bad_value(name, v, "String must be one of: CreateTime, LogAppendTime"));
    }
  } else if (name == "compression.type") {
    if (v != "uncompressed" && v != "zstd" && v != "lz4" && v != "snappy" && v != "gzip" &&
        v != "producer") {
      return invalid(bad_value(
          name, v, "String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer"));
    }
  } else if (name == "max.message.bytes" && n < 0) {
    return invalid(bad_value(name, v, "Value must be at least 0"));
  } else if (name == "retention.ms" && n < -1) {
    return invalid(bad_value(name, v, "Value must be at least -1"));
  } else if ((name == "message.timestamp.before.max.ms" ||
              name == "message.timestamp.after.max.ms") &&
             n < 0) {
    return invalid(bad_value(name, v, "Value must be at least 0"));
  } else if (name == "segment.bytes" && n < 14) {
    return invalid(bad_value(name, v, "Value must be at least 14"));
  } else if (name == "segment.ms" && n < 1) {
    return invalid(bad_value(name, v, "Value must be at least 1"));
  } else if (name == "min.insync.replicas" && n < 1) {
    return invalid(bad_value(name, v, "Value must be at least 1"));
  }
  return ok_status();
}

std::optional<std::string> BrokerTopicDefaults::dynamic_value(const std::string& broker_key) const {
  if (auto it = dynamic_broker.find(broker_key); it != dynamic_broker.end()) return it->second;
  if (auto it = dynamic_default.find(broker_key); it != dynamic_default.end()) return it->second;
  return std::nullopt;
}

const std::vector<std::string>& dynamic_broker_keys() {
  static const std::vector<std::string> keys = {
      "log.retention.ms",
      "log.retention.bytes",
      "message.max.bytes",
      "log.message.timestamp.before.max.ms",
      "log.message.timestamp.after.max.ms",
      // Replication throttles (kafka-reassign-partitions sets and clears them): accepted, no
      // effect — storage is shared and nothing is replicated.
      "leader.replication.throttled.rate",
      "follower.replication.throttled.rate",
      "replica.alter.log.dirs.io.max.bytes.per.second",
  };
  return keys;
}

Status validate_dynamic_broker_config(std::string_view name,
                                      const std::optional<std::string>& value) {
  const auto& keys = dynamic_broker_keys();
  if (std::find(keys.begin(), keys.end(), name) == keys.end()) {
    return invalid("Cannot update these configs dynamically: Set(" + std::string(name) + ")");
  }
  if (!value) return ok_status();
  int64_t n = 0;
  if (!parse_long(*value, n) || (name == "message.max.bytes" && (n < INT32_MIN || n > INT32_MAX))) {
    return invalid(bad_value(
        name, *value,
        name == "message.max.bytes" ? "Not a number of type INT" : "Not a number of type LONG"));
  }
  const int64_t min = name == "log.retention.ms"      ? -1
                      : name == "log.retention.bytes" ? INT64_MIN
                                                      : 0;
  if (n < min) {
    return invalid(bad_value(name, *value, "Value must be at least " + std::to_string(min)));
  }
  return ok_status();
}

DefaultValue topic_config_default(const TopicConfigKey& key, const BrokerTopicDefaults& d) {
  const std::string name = key.name;
  if (key.broker_synonym != nullptr) {
    const std::string syn = key.broker_synonym;
    if (auto it = d.dynamic_broker.find(syn); it != d.dynamic_broker.end()) {
      return {it->second, kSourceDynamicBroker};
    }
    if (auto it = d.dynamic_default.find(syn); it != d.dynamic_default.end()) {
      return {it->second, kSourceDynamicDefaultBroker};
    }
    auto it = d.static_overrides.find(syn);
    if (it != d.static_overrides.end()) return {it->second, kSourceStaticBroker};
  }
  if (name == "retention.ms") return {std::to_string(d.retention_ms)};
  if (name == "retention.bytes") return {std::to_string(d.retention_bytes)};
  if (name == "max.message.bytes") return {std::to_string(d.max_message_bytes)};
  if (name == "message.timestamp.before.max.ms") return {std::to_string(d.timestamp_before_max_ms)};
  if (name == "message.timestamp.after.max.ms") return {std::to_string(d.timestamp_after_max_ms)};
  return {key.default_value};
}

TopicSettings TopicSettings::resolve(const std::map<std::string, std::string>& overrides,
                                     const BrokerTopicDefaults& defaults) {
  TopicSettings s;
  s.retention_ms = defaults.retention_ms;
  s.retention_bytes = defaults.retention_bytes;
  s.max_message_bytes = defaults.max_message_bytes;
  int64_t n = 0;
  // Dynamic broker values replace the static defaults (they were validated when set).
  auto dynamic = [&](const char* broker_key, int64_t& out) {
    if (auto v = defaults.dynamic_value(broker_key); v && parse_long(*v, n)) out = n;
  };
  dynamic("log.retention.ms", s.retention_ms);
  dynamic("log.retention.bytes", s.retention_bytes);
  int64_t max_bytes = s.max_message_bytes;
  dynamic("message.max.bytes", max_bytes);
  s.max_message_bytes = static_cast<int32_t>(max_bytes);
  if (auto it = overrides.find("retention.ms");
      it != overrides.end() && parse_long(it->second, n)) {
    s.retention_ms = n;
  }
  if (auto it = overrides.find("retention.bytes");
      it != overrides.end() && parse_long(it->second, n)) {
    s.retention_bytes = n;
  }
  if (auto it = overrides.find("max.message.bytes");
      it != overrides.end() && parse_long(it->second, n)) {
    s.max_message_bytes = static_cast<int32_t>(n);
  }
  s.timestamp_before_max_ms = defaults.timestamp_before_max_ms;
  s.timestamp_after_max_ms = defaults.timestamp_after_max_ms;
  dynamic("log.message.timestamp.before.max.ms", s.timestamp_before_max_ms);
  dynamic("log.message.timestamp.after.max.ms", s.timestamp_after_max_ms);
  if (auto it = overrides.find("message.timestamp.before.max.ms");
      it != overrides.end() && parse_long(it->second, n)) {
    s.timestamp_before_max_ms = n;
  }
  if (auto it = overrides.find("message.timestamp.after.max.ms");
      it != overrides.end() && parse_long(it->second, n)) {
    s.timestamp_after_max_ms = n;
  }
  std::string ts_type = "CreateTime";
  if (auto it = defaults.static_overrides.find("log.message.timestamp.type");
      it != defaults.static_overrides.end()) {
    ts_type = it->second;
  }
  if (auto it = overrides.find("message.timestamp.type"); it != overrides.end()) {
    ts_type = it->second;
  }
  s.log_append_time = ts_type == "LogAppendTime";
  std::string codec = "producer";
  if (auto it = defaults.static_overrides.find("compression.type");
      it != defaults.static_overrides.end()) {
    codec = it->second;
  }
  if (auto v = defaults.dynamic_value("compression.type")) codec = *v;
  if (auto it = overrides.find("compression.type"); it != overrides.end()) codec = it->second;
  s.compression = compression_of(codec);
  return s;
}

std::optional<protocol::Compression> compression_of(std::string_view type) {
  using protocol::Compression;
  if (type == "uncompressed") return Compression::kNone;
  if (type == "gzip") return Compression::kGzip;
  if (type == "snappy") return Compression::kSnappy;
  if (type == "lz4") return Compression::kLz4;
  if (type == "zstd") return Compression::kZstd;
  return std::nullopt;  // "producer" (validated values only reach here)
}

}  // namespace shale::broker
