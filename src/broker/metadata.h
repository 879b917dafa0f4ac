// Metadata (key 3): the cluster's brokers, its id and controller, and the requested topics.
// Brokers and cluster come from ClusterView (fixed at start-up for a single node); topics come
// from a TopicSource, the seam where the topic registry (broker issue) plugs in. Until one
// exists, NoTopics answers "no such topic" for every name and an empty list for "all topics".
//
// Threads: the handler runs on any shard. ClusterView is immutable after registration; a
// TopicSource must be safe to call from every shard (or hop to its owning shard itself).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "broker/dispatcher.h"
#include "protocol/generated/metadata_request.h"
#include "protocol/generated/metadata_response.h"

namespace shale::broker {

struct AdvertisedEndpoint {
  std::string listener;  // listener name, e.g. "PLAINTEXT"
  std::string host;
  int32_t port = 0;
};

struct BrokerInfo {
  int32_t node_id = 0;
  std::optional<std::string> rack;
  std::vector<AdvertisedEndpoint> endpoints;  // one per listener
};

struct ClusterView {
  std::string cluster_id;
  int32_t controller_id = -1;
  std::vector<BrokerInfo> brokers;
};

// A requested topic: by name, or (Metadata v10+) by id with no name.
struct TopicQuery {
  std::optional<std::string> name;
  protocol::Uuid id;
};

class TopicSource {
 public:
  using Topic = protocol::MetadataResponse::MetadataResponseTopic;
  virtual ~TopicSource() = default;
  // `queries` == nullopt asks for every topic. Otherwise the answer has one entry per query,
  // in order, with an error code for topics that do not exist (UNKNOWN_TOPIC_OR_PARTITION by
  // name, UNKNOWN_TOPIC_ID by id). `allow_auto_create` is the request's flag (v4+, else true).
  virtual asio::awaitable<std::vector<Topic>> describe(
      const std::optional<std::vector<TopicQuery>>& queries, bool allow_auto_create) = 0;
};

// No topics exist: the state of a broker before the topic registry is wired in.
class NoTopics : public TopicSource {
 public:
  asio::awaitable<std::vector<Topic>> describe(
      const std::optional<std::vector<TopicQuery>>& queries, bool allow_auto_create) override;
};

// Builds the response for one request (exposed for tests).
asio::awaitable<protocol::MetadataResponse> answer_metadata(const ClusterView& cluster,
                                                            TopicSource& topics,
                                                            const std::string& listener,
                                                            int16_t version,
                                                            const protocol::MetadataRequest& req);

// Registers the Metadata handler (v0-12). `cluster` and `topics` must outlive `d`.
void register_metadata(Dispatcher& d, const ClusterView& cluster, TopicSource& topics);

}  // namespace shale::broker
