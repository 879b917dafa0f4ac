// A minimal Confluent Schema Registry client for --value-schema: registers the value schema
// under the subject `<topic>-value` (what KafkaAvroSerializer does with its default
// auto.register.schemas=true and TopicNameStrategy) and returns the schema id that goes into
// every record's Confluent framing. Blocking libcurl calls on the control thread, before the
// load starts.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>

namespace shale::perf {

struct SchemaRegistryError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct SchemaRegistryConfig {
  std::string url;        // schema.registry.url (the first of a comma-separated list)
  std::string user_info;  // basic.auth.user.info "user:password", sent as HTTP basic auth
};

// Reads the serializer's settings from the -P map: schema.registry.url (required in Avro
// mode) and, with basic.auth.credentials.source=USER_INFO (the only source supported),
// basic.auth.user.info. Throws SchemaRegistryError when the URL is missing.
SchemaRegistryConfig schema_registry_config(const std::map<std::string, std::string>& producer);

// POST <url>/subjects/<subject>/versions {"schema": ...}; returns the "id" of the answer.
int32_t register_schema(const SchemaRegistryConfig& cfg, const std::string& subject,
                        const std::string& schema_json);

}  // namespace shale::perf
