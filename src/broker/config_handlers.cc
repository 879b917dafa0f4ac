// DescribeConfigs (topics and this broker, with sources and synonyms as Kafka reports them) and
// DescribeCluster. Pure reads of in-memory state: nothing here blocks.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "broker/handlers.h"
#include "broker/ownership.h"

namespace shale::broker {

using protocol::DescribeConfigsResponse;
using protocol::ErrorCode;

namespace {

int8_t config_type(ConfigValueType t) {
  switch (t) {
    case ConfigValueType::kBool:
      return 1;
    case ConfigValueType::kString:
      return 2;
    case ConfigValueType::kInt:
      return 3;
    case ConfigValueType::kLong:
      return 5;
    case ConfigValueType::kDouble:
      return 6;
    case ConfigValueType::kList:
      return 7;
    case ConfigValueType::kPassword:
      return 9;
  }
  return 0;
}

bool wanted(const std::optional<std::vector<std::string>>& keys, const std::string& name) {
  if (!keys || keys->empty()) return true;
  for (const auto& k : *keys) {
    if (k == name) return true;
  }
  return false;
}

void describe_topic(Broker& b, const Topic& t, const protocol::DescribeConfigsRequest& req,
                    const protocol::DescribeConfigsRequest::DescribeConfigsResource& res,
                    int16_t version, DescribeConfigsResponse::DescribeConfigsResult& out) {
  const BrokerTopicDefaults defaults = b.topics().defaults();
  for (const auto& key : topic_config_keys()) {
    if (!wanted(res.configuration_keys, key.name)) continue;
    auto& c = out.configs.emplace_back();
    c.name = key.name;
    auto it = t.configs.find(key.name);
    const DefaultValue d = topic_config_default(key, defaults);
    int8_t source = kSourceDefault;
    if (it != t.configs.end()) {
      c.value = it->second;
      source = kSourceTopic;
    } else {
      c.value = d.value;
      source = d.source;
    }
    c.config_source = source;  // v0's IsDefault went with v0 (Kafka 4, KIP-896)
    if (version >= 1 && req.include_synonyms) {
      // Kafka's order: topic override, dynamic (this broker, every broker), static, default.
      if (it != t.configs.end()) c.synonyms.push_back({key.name, it->second, kSourceTopic});
      if (key.broker_synonym != nullptr) {
        const std::string syn = key.broker_synonym;
        if (auto v = defaults.dynamic_broker.find(syn); v != defaults.dynamic_broker.end()) {
          c.synonyms.push_back({syn, v->second, kSourceDynamicBroker});
        }
        if (auto v = defaults.dynamic_default.find(syn); v != defaults.dynamic_default.end()) {
          c.synonyms.push_back({syn, v->second, kSourceDynamicDefaultBroker});
        }
        if (auto v = defaults.static_overrides.find(syn); v != defaults.static_overrides.end()) {
          c.synonyms.push_back({syn, v->second, kSourceStaticBroker});
        }
        DefaultValue plain = topic_config_default(key, BrokerTopicDefaults{});
        c.synonyms.push_back({syn, plain.value, kSourceDefault});
      }
    }
    if (version >= 3) {
      c.config_type = config_type(key.type);
      c.documentation = req.include_documentation && *key.doc != '\0'
                            ? std::optional<std::string>(key.doc)
                            : std::nullopt;
    }
  }
}

void describe_broker(Broker& b, const protocol::DescribeConfigsRequest& req,
                     const protocol::DescribeConfigsRequest::DescribeConfigsResource& res,
                     int16_t version, DescribeConfigsResponse::DescribeConfigsResult& out) {
  const BrokerConfig& cfg = b.config();
  const auto& set = cfg.topic_defaults.static_overrides;
  const BrokerTopicDefaults dyn = b.topics().defaults();
  struct Row {
    std::string name;
    std::string value;  // static value (server.properties or built-in default)
    ConfigValueType type;
    bool from_file;
  };
  auto is_set = [&](const std::string& k) { return set.count(k) != 0; };
  std::vector<Row> rows = {
      {"node.id", std::to_string(cfg.node_id), ConfigValueType::kInt, true},
      {"broker.id", std::to_string(cfg.node_id), ConfigValueType::kInt, true},
      {"num.partitions", std::to_string(cfg.num_partitions), ConfigValueType::kInt,
       is_set("num.partitions")},
      {"default.replication.factor", std::to_string(cfg.default_replication_factor),
       ConfigValueType::kInt, is_set("default.replication.factor")},
      {"auto.create.topics.enable", cfg.auto_create_topics ? "true" : "false",
       ConfigValueType::kBool, is_set("auto.create.topics.enable")},
      {"log.retention.ms", std::to_string(cfg.topic_defaults.retention_ms), ConfigValueType::kLong,
       is_set("log.retention.ms")},
      {"log.retention.bytes", std::to_string(cfg.topic_defaults.retention_bytes),
       ConfigValueType::kLong, is_set("log.retention.bytes")},
      {"message.max.bytes", std::to_string(cfg.topic_defaults.max_message_bytes),
       ConfigValueType::kInt, is_set("message.max.bytes")},
      {"log.retention.check.interval.ms", std::to_string(cfg.retention_check_interval_ms),
       ConfigValueType::kLong, is_set("log.retention.check.interval.ms")},
      {"log.message.timestamp.type",
       is_set("log.message.timestamp.type") ? set.at("log.message.timestamp.type") : "CreateTime",
       ConfigValueType::kString, is_set("log.message.timestamp.type")},
      {"log.message.timestamp.before.max.ms",
       std::to_string(cfg.topic_defaults.timestamp_before_max_ms), ConfigValueType::kLong,
       is_set("log.message.timestamp.before.max.ms")},
      {"log.message.timestamp.after.max.ms",
       std::to_string(cfg.topic_defaults.timestamp_after_max_ms), ConfigValueType::kLong,
       is_set("log.message.timestamp.after.max.ms")},
  };
  const auto& dynamic_keys = dynamic_broker_keys();
  // The cluster-wide default resource ("") holds only the dynamic defaults, as in Kafka.
  const bool default_resource = res.resource_name.empty();
  for (const auto& row : rows) {
    if (!wanted(res.configuration_keys, row.name)) continue;
    const bool dynamic =
        std::find(dynamic_keys.begin(), dynamic_keys.end(), row.name) != dynamic_keys.end();
    // Layers in Kafka's synonym order, the first one being the value in force.
    std::vector<std::pair<std::string, int8_t>> layers;
    if (!default_resource) {
      if (auto v = dyn.dynamic_broker.find(row.name); v != dyn.dynamic_broker.end()) {
        layers.push_back({v->second, kSourceDynamicBroker});
      }
    }
    if (auto v = dyn.dynamic_default.find(row.name); v != dyn.dynamic_default.end()) {
      layers.push_back({v->second, kSourceDynamicDefaultBroker});
    }
    if (default_resource) {
      if (layers.empty()) continue;
      layers.resize(1);
    } else {
      layers.push_back({row.value, row.from_file ? kSourceStaticBroker : kSourceDefault});
    }
    auto& c = out.configs.emplace_back();
    c.name = row.name;
    c.value = layers.front().first;
    c.read_only = !dynamic;
    c.config_source = layers.front().second;
    if (req.include_synonyms) {
      for (const auto& [value, source] : layers) c.synonyms.push_back({row.name, value, source});
    }
    if (version >= 3) {
      c.config_type = config_type(row.type);
      c.documentation = std::nullopt;
    }
  }
}

}  // namespace

asio::awaitable<DescribeConfigsResponse> handle_describe_configs(
    Broker& b, int16_t version, protocol::DescribeConfigsRequest req) {
  DescribeConfigsResponse resp;
  for (const auto& res : req.resources) {
    auto& out = resp.results.emplace_back();
    out.resource_type = res.resource_type;
    out.resource_name = res.resource_name;
    out.error_message = std::nullopt;
    if (res.resource_type == kConfigResourceTopic) {
      TopicPtr t = b.topics().find(res.resource_name);
      if (!t) {
        out.error_code = static_cast<int16_t>(ErrorCode::kUnknownTopicOrPartition);
        out.error_message = "The topic '" + res.resource_name + "' does not exist.";
        continue;
      }
      describe_topic(b, *t, req, res, version, out);
    } else if (res.resource_type == kConfigResourceBroker) {
      if (!res.resource_name.empty() && res.resource_name != std::to_string(b.node_id())) {
        out.error_code = static_cast<int16_t>(ErrorCode::kInvalidRequest);
        out.error_message = "Unexpected broker id, expected " + std::to_string(b.node_id()) +
                            " or empty string, but received " + res.resource_name;
        continue;
      }
      describe_broker(b, req, res, version, out);
    } else {
      out.error_code = static_cast<int16_t>(ErrorCode::kInvalidRequest);
      out.error_message = "Unsupported resource type " + std::to_string(res.resource_type);
    }
  }
  co_return resp;
}

asio::awaitable<protocol::DescribeClusterResponse> handle_describe_cluster(
    Broker& b, int16_t version, protocol::DescribeClusterRequest req) {
  (void)version;
  protocol::DescribeClusterResponse resp;
  if (req.endpoint_type != 1) {  // 2 = controller endpoints: brokers cannot answer those
    resp.error_code = static_cast<int16_t>(ErrorCode::kUnsupportedEndpointType);
    resp.error_message =
        "The request was sent to an endpoint of type BROKER, but we wanted an "
        "endpoint of type CONTROLLER";
    co_return resp;
  }
  resp.cluster_id = b.config().cluster_id;
  if (const Ownership* o = b.ownership()) {
    // Cluster mode: the live brokers, at their address on this broker's first listener name.
    const std::string name =
        b.config().endpoints.empty() ? std::string() : b.config().endpoints.front().listener;
    resp.controller_id = o->controller_for_clients();
    for (const auto& e : o->live_endpoints(name)) {
      auto& br = resp.brokers.emplace_back();
      br.broker_id = e.id;
      br.host = e.host;
      br.port = e.port;
      if (!e.rack.empty()) br.rack = e.rack;
    }
    co_return resp;
  }
  resp.controller_id = b.node_id();
  if (!b.config().endpoints.empty()) {
    const auto& ep = b.config().endpoints.front();
    auto& br = resp.brokers.emplace_back();
    br.broker_id = b.node_id();
    br.host = ep.host;
    br.port = ep.port;
    if (!b.config().rack.empty()) br.rack = b.config().rack;
  }
  co_return resp;
}

}  // namespace shale::broker
