// Kafka Java-client property names (what AutoMQ's tool users pass with -P/-C/-F/--common-configs)
// translated to librdkafka's, plus the Java 3.9 defaults the original relies on:
// common configs first, then -P/-C, then the tool's forced keys. Properties that shape the
// tool's own behaviour (batch.size for partition switching, max.block.ms, max.poll.records) are
// returned separately. Pure functions; an unknown property is reported by librdkafka itself when
// the configuration is applied (see kafka_clients.h), with the offending key named.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "perf/options.h"

namespace shale::perf {

enum class ClientRole { kAdmin, kProducer, kConsumer };

struct ClientSettings {
  // librdkafka properties in the order they are applied (later entries win).
  std::vector<std::pair<std::string, std::string>> rdkafka;
  // Tool-side equivalents of Java properties librdkafka has no counterpart for.
  int64_t batch_size = 16384;  // sticky partition switch threshold (Java batch.size)
  int64_t max_block_ms = 60000;
  int max_poll_records = 500;
};

// Returns an error message, or "" on success. `user` is the merged common + role map.
std::string translate_client_config(ClientRole role, const std::string& bootstrap,
                                    const ConfigMap& common, const ConfigMap& role_configs,
                                    ClientSettings* out);

}  // namespace shale::perf
