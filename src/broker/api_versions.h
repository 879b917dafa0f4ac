// ApiVersions (key 18): tells a client which APIs and versions this broker serves. The answer
// comes from the Dispatcher's registry, so it lists exactly the APIs that have handlers.
// Threads: stateless; the handler runs on any shard and only reads the (frozen) registry.
#pragma once

#include "broker/dispatcher.h"
#include "protocol/errors.h"
#include "protocol/generated/api_versions_request.h"
#include "protocol/generated/api_versions_response.h"

namespace shale::broker {

// Versions of ApiVersions we answer: all of the schema's (0-4; v3+ are flexible and carry the
// client's software name and version).
constexpr int16_t kApiVersionsMin = 0;
constexpr int16_t kApiVersionsMax = 4;

// The response body listing every registered API with its advertised range.
protocol::ApiVersionsResponse make_api_versions_response(const Dispatcher& d,
                                                         protocol::ErrorCode error);

// Kafka validates the v3+ client software name and version against
// [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])? and answers INVALID_REQUEST when they do not match.
bool valid_client_software_field(const std::string& s);

// Registers the ApiVersions handler on `d`.
void register_api_versions(Dispatcher& d);

}  // namespace shale::broker
