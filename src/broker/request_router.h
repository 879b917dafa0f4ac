// RequestRouter: the net::FrameHandler that turns Kafka request frames into calls of the
// broker's handlers (handlers.h) and their results into response frames, and answers
// ApiVersions with exactly the APIs routed here.
//
// Interim: the net module's dispatcher (src/broker/dispatcher.*, with a handler registry) is
// meant to own this job; until it lands, `shale serve` uses this router so the data path can
// be tested end to end. Moving to the dispatcher means registering the same handler functions.
//
// Threads: handle() runs on the connection's shard (see net/frame_handler.h); the router is
// stateless and shared by all shards. Malformed requests and unknown or unsupported API
// versions close the connection, as Kafka does (ApiVersions answers UNSUPPORTED_VERSION with its
// version range instead, per KIP-511).
#pragma once

#include <vector>

#include "broker/broker.h"
#include "net/frame_handler.h"
#include "protocol/generated/api_table.h"

namespace shale::broker {

struct RoutedApi {
  protocol::ApiKey key;
  int16_t min_version;
  int16_t max_version;
};

class RequestRouter : public net::FrameHandler {
 public:
  explicit RequestRouter(Broker& broker) : broker_(broker) {}
  asio::awaitable<net::Response> handle(const net::ConnectionInfo& conn, Buffer frame) override;
  // The APIs and versions served (ApiVersions advertises these).
  static const std::vector<RoutedApi>& routed_apis();

 private:
  Broker& broker_;
};

}  // namespace shale::broker
