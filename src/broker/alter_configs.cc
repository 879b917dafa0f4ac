// AlterConfigs (replace a resource's overrides) and IncrementalAlterConfigs (SET / DELETE /
// APPEND / SUBTRACT per key) for topics and for the BROKER resource: this broker (name = node
// id) or every broker (name ""), limited to the dynamic broker keys (dynamic_broker_keys(): the
// topic defaults). Topic configs are validated with the key table CreateTopics uses; the write
// itself is one MetaStore update on a worker thread.
#include <algorithm>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "broker/handlers.h"

namespace shale::broker {

using protocol::ErrorCode;

namespace {

constexpr int8_t kOpSet = 0;
constexpr int8_t kOpDelete = 1;
constexpr int8_t kOpAppend = 2;
constexpr int8_t kOpSubtract = 3;

struct Outcome {
  ErrorCode code = ErrorCode::kNone;
  std::string message;
};

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

std::string join_list(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ",") + s;
  return out;
}

Outcome check_key(const std::string& name, const std::optional<std::string>& value) {
  if (find_topic_config_key(name) == nullptr) {
    return {ErrorCode::kInvalidConfig, "Unknown topic config name: " + name};
  }
  if (value) {
    Status st = validate_topic_config(name, value);
    if (!st.ok()) return {ErrorCode::kInvalidConfig, st.error().message};
  }
  return {};
}

// Resource-level checks shared by both APIs; nullopt = a topic that exists.
std::optional<Outcome> check_resource(Broker& b, int8_t type, const std::string& name) {
  if (type == kConfigResourceBroker) {
    if (!name.empty() && name != std::to_string(b.node_id())) {
      return Outcome{ErrorCode::kInvalidRequest, "Unexpected broker id, expected " +
                                                     std::to_string(b.node_id()) +
                                                     " or empty string, but received " + name};
    }
    return std::nullopt;
  }
  if (type != kConfigResourceTopic) {
    return Outcome{ErrorCode::kInvalidRequest,
                   "Unsupported resource type " + std::to_string(type) + "."};
  }
  if (!b.topics().find(name)) {
    return Outcome{ErrorCode::kUnknownTopicOrPartition, "The topic '" + name + "' does not exist."};
  }
  return std::nullopt;
}

asio::awaitable<Outcome> apply(Broker& b, const std::string& topic,
                               std::map<std::string, std::string> configs, bool validate_only) {
  if (validate_only) co_return Outcome{};
  auto work = [&b, topic, configs] { return b.topics().set_configs(topic, configs); };
  auto res = co_await b.blocking(std::move(work));
  if (!res.ok()) {
    co_return Outcome{res.error().code == Errc::kNotFound ? ErrorCode::kUnknownTopicOrPartition
                                                          : ErrorCode::kUnknownServerError,
                      res.error().message};
  }
  co_return Outcome{};
}

Outcome check_broker_key(const std::string& name, const std::optional<std::string>& value) {
  Status st = validate_dynamic_broker_config(name, value);
  if (!st.ok()) return {ErrorCode::kInvalidConfig, st.error().message};
  return {};
}

// The current layer of dynamic broker configs a BROKER resource name addresses.
std::map<std::string, std::string> broker_layer(Broker& b, const std::string& name) {
  BrokerTopicDefaults d = b.topics().defaults();
  return name.empty() ? d.dynamic_default : d.dynamic_broker;
}

asio::awaitable<Outcome> apply_broker(Broker& b, const std::string& name,
                                      std::map<std::string, std::string> configs,
                                      bool validate_only) {
  if (validate_only) co_return Outcome{};
  const bool per_broker = !name.empty();
  const std::string node = std::to_string(b.node_id());
  auto work = [&b, per_broker, node, configs] {
    return b.topics().set_dynamic_configs(per_broker, node, configs);
  };
  auto st = co_await b.blocking(std::move(work));
  if (!st.ok()) co_return Outcome{ErrorCode::kUnknownServerError, st.error().message};
  co_return Outcome{};
}

}  // namespace

asio::awaitable<protocol::IncrementalAlterConfigsResponse> handle_incremental_alter_configs(
    Broker& b, int16_t version, protocol::IncrementalAlterConfigsRequest req) {
  (void)version;
  protocol::IncrementalAlterConfigsResponse resp;
  for (const auto& res : req.resources) {
    auto& r = resp.responses.emplace_back();
    r.resource_type = res.resource_type;
    r.resource_name = res.resource_name;
    Outcome out;
    if (auto bad = check_resource(b, res.resource_type, res.resource_name)) {
      out = *bad;
    } else if (res.resource_type == kConfigResourceBroker) {
      std::map<std::string, std::string> configs = broker_layer(b, res.resource_name);
      for (const auto& c : res.configs) {
        if (out.code != ErrorCode::kNone) break;
        switch (c.config_operation) {
          case kOpSet:
            out = check_broker_key(c.name, c.value ? c.value : std::optional<std::string>(""));
            if (out.code == ErrorCode::kNone) configs[c.name] = c.value.value_or("");
            break;
          case kOpDelete:
            out = check_broker_key(c.name, std::nullopt);
            if (out.code == ErrorCode::kNone) configs.erase(c.name);
            break;
          case kOpAppend:
          case kOpSubtract:
            out = {ErrorCode::kInvalidConfig,
                   "Config value append is not allowed for config key: " + c.name};
            break;
          default:
            out = {ErrorCode::kInvalidRequest,
                   "Unknown config operation " + std::to_string(c.config_operation)};
        }
      }
      if (out.code == ErrorCode::kNone) {
        out = co_await apply_broker(b, res.resource_name, std::move(configs), req.validate_only);
      }
    } else {
      TopicPtr t = b.topics().find(res.resource_name);
      std::map<std::string, std::string> configs = t->configs;
      for (const auto& c : res.configs) {
        if (out.code != ErrorCode::kNone) break;
        const TopicConfigKey* key = find_topic_config_key(c.name);
        switch (c.config_operation) {
          case kOpSet:
            out = check_key(c.name, c.value ? c.value : std::optional<std::string>(""));
            if (out.code == ErrorCode::kNone) configs[c.name] = c.value.value_or("");
            break;
          case kOpDelete:
            out = check_key(c.name, std::nullopt);
            if (out.code == ErrorCode::kNone) configs.erase(c.name);
            break;
          case kOpAppend:
          case kOpSubtract: {
            out = check_key(c.name, std::nullopt);
            if (out.code != ErrorCode::kNone) break;
            if (key->type != ConfigValueType::kList) {
              out = {ErrorCode::kInvalidConfig,
                     "Config value append is not allowed for config key: " + c.name};
              break;
            }
            auto it = configs.find(c.name);
            std::vector<std::string> items =
                split_list(it != configs.end() ? it->second : key->default_value);
            for (const auto& v : split_list(c.value.value_or(""))) {
              auto pos = std::find(items.begin(), items.end(), v);
              if (c.config_operation == kOpAppend && pos == items.end()) items.push_back(v);
              if (c.config_operation == kOpSubtract && pos != items.end()) items.erase(pos);
            }
            std::string joined = join_list(items);
            out = check_key(c.name, joined);
            if (out.code == ErrorCode::kNone) configs[c.name] = joined;
            break;
          }
          default:
            out = {ErrorCode::kInvalidRequest,
                   "Unknown config operation " + std::to_string(c.config_operation)};
        }
      }
      if (out.code == ErrorCode::kNone) {
        out = co_await apply(b, res.resource_name, std::move(configs), req.validate_only);
      }
    }
    r.error_code = static_cast<int16_t>(out.code);
    if (out.code != ErrorCode::kNone)
      r.error_message = out.message;
    else
      r.error_message = std::nullopt;
  }
  co_return resp;
}

asio::awaitable<protocol::AlterConfigsResponse> handle_alter_configs(
    Broker& b, int16_t version, protocol::AlterConfigsRequest req) {
  (void)version;
  protocol::AlterConfigsResponse resp;
  for (const auto& res : req.resources) {
    auto& r = resp.responses.emplace_back();
    r.resource_type = res.resource_type;
    r.resource_name = res.resource_name;
    Outcome out;
    if (auto bad = check_resource(b, res.resource_type, res.resource_name)) {
      out = *bad;
    } else if (res.resource_type == kConfigResourceBroker) {
      // As for topics: the given set replaces the layer.
      std::map<std::string, std::string> configs;
      for (const auto& c : res.configs) {
        out = check_broker_key(c.name, c.value ? c.value : std::optional<std::string>(""));
        if (out.code != ErrorCode::kNone) break;
        if (c.value) configs[c.name] = *c.value;
      }
      if (out.code == ErrorCode::kNone) {
        out = co_await apply_broker(b, res.resource_name, std::move(configs), req.validate_only);
      }
    } else {
      // AlterConfigs replaces every override of the resource with the given set.
      std::map<std::string, std::string> configs;
      for (const auto& c : res.configs) {
        out = check_key(c.name, c.value ? c.value : std::optional<std::string>(""));
        if (out.code != ErrorCode::kNone) break;
        if (c.value) configs[c.name] = *c.value;
      }
      if (out.code == ErrorCode::kNone) {
        out = co_await apply(b, res.resource_name, std::move(configs), req.validate_only);
      }
    }
    r.error_code = static_cast<int16_t>(out.code);
    if (out.code != ErrorCode::kNone)
      r.error_message = out.message;
    else
      r.error_message = std::nullopt;
  }
  co_return resp;
}

}  // namespace shale::broker
