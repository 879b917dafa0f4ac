#include "broker/metadata.h"

#include "protocol/errors.h"

namespace shale::broker {

using protocol::MetadataRequest;
using protocol::MetadataResponse;

asio::awaitable<std::vector<TopicSource::Topic>> NoTopics::describe(
    const std::optional<std::vector<TopicQuery>>& queries, bool /*allow_auto_create*/) {
  std::vector<Topic> out;
  if (!queries) co_return out;
  for (const TopicQuery& q : *queries) {
    Topic t;
    t.name = q.name;
    t.topic_id = q.id;
    t.error_code = static_cast<int16_t>(q.name ? protocol::ErrorCode::kUnknownTopicOrPartition
                                               : protocol::ErrorCode::kUnknownTopicId);
    out.push_back(std::move(t));
  }
  co_return out;
}

asio::awaitable<MetadataResponse> answer_metadata(const ClusterView& cluster, TopicSource& topics,
                                                  const std::string& listener, int16_t version,
                                                  const MetadataRequest& req) {
  MetadataResponse resp;
  for (const BrokerInfo& b : cluster.brokers) {
    // Clients get each broker's address on the listener they came in on (as Kafka does); a
    // broker without that listener is left out.
    const AdvertisedEndpoint* ep = nullptr;
    for (const auto& e : b.endpoints) {
      if (e.listener == listener) ep = &e;
    }
    if (ep == nullptr) continue;
    MetadataResponse::MetadataResponseBroker mb;
    mb.node_id = b.node_id;
    mb.host = ep->host;
    mb.port = ep->port;
    mb.rack = b.rack;
    resp.brokers.push_back(std::move(mb));
  }
  resp.cluster_id = cluster.cluster_id;
  resp.controller_id = cluster.controller_id;

  // v0 has no null array: an empty list there means "all topics". From v1 null means all and
  // an empty list means none.
  std::optional<std::vector<TopicQuery>> queries;
  bool all = !req.topics.has_value() || (version == 0 && req.topics->empty());
  if (!all) {
    queries.emplace();
    for (const auto& t : *req.topics) queries->push_back({t.name, t.topic_id});
  }
  bool auto_create = version >= 4 ? req.allow_auto_topic_creation : true;
  if (all || !queries->empty()) resp.topics = co_await topics.describe(queries, auto_create);
  co_return resp;
}

void register_metadata(Dispatcher& d, const ClusterView& cluster, TopicSource& topics) {
  const ClusterView* c = &cluster;
  TopicSource* t = &topics;
  d.add<MetadataRequest, MetadataResponse>(
      0, 12,
      [c, t](const RequestContext& ctx,
             MetadataRequest& req) -> asio::awaitable<std::optional<MetadataResponse>> {
        co_return co_await answer_metadata(*c, *t, ctx.conn.listener, ctx.version(), req);
      });
}

}  // namespace shale::broker
