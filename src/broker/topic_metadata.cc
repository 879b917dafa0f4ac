// Metadata (brokers, cluster id, controller, topics with auto-creation) and
// DescribeTopicPartitions. With one broker that leads every partition, each partition reports
// this node as leader, replica and ISR, with the partition's leader epoch. In cluster mode
// (Broker::ownership()) the brokers are the live ones, each with its address on the listener the
// client came in on, and each partition's leader (= its only replica and ISR) is its owner with
// the owner's leader epoch; a partition without a live owner answers LEADER_NOT_AVAILABLE.
#include <algorithm>
#include <map>

#include <spdlog/spdlog.h>

#include "broker/handlers.h"
#include "broker/ownership.h"

namespace shale::broker {

using protocol::ErrorCode;
using protocol::MetadataResponse;

namespace {

struct PartitionLeader {
  int32_t id = -1;
  int32_t epoch = 0;
};

PartitionLeader leader_of(const Broker& b, const Topic& t, const Partition& p) {
  if (const Ownership* o = b.ownership()) {
    auto l = o->leader(t.id, p.index());
    return {l.id, l.epoch};
  }
  return {b.node_id(), p.leader_epoch()};
}

MetadataResponse::MetadataResponseTopic describe(const Broker& b, const Topic& t, int16_t version) {
  MetadataResponse::MetadataResponseTopic out;
  out.name = t.name;
  if (version >= 10) out.topic_id = t.id;
  for (const auto& p : t.partitions) {
    auto& pr = out.partitions.emplace_back();
    pr.partition_index = p->index();
    const PartitionLeader l = leader_of(b, t, *p);
    pr.leader_id = l.id;
    if (version >= 7) pr.leader_epoch = l.epoch;
    if (l.id < 0) {
      pr.error_code = static_cast<int16_t>(ErrorCode::kLeaderNotAvailable);
      pr.replica_nodes = {};
      pr.isr_nodes = {};
      continue;
    }
    pr.replica_nodes = {l.id};
    pr.isr_nodes = {l.id};
  }
  return out;
}

asio::awaitable<MetadataResponse> metadata_topics(Broker& b, int16_t version,
                                                  protocol::MetadataRequest req,
                                                  MetadataResponse resp);

}  // namespace

asio::awaitable<MetadataResponse> handle_metadata(Broker& b, int16_t version,
                                                  protocol::MetadataRequest req,
                                                  std::string listener) {
  MetadataResponse resp;
  if (const Ownership* o = b.ownership()) {
    // Cluster mode: every live broker, at its address on the client's listener (the first one
    // it registered when it has no listener of that name).
    for (const auto& e : o->live_endpoints(listener)) {
      auto& br = resp.brokers.emplace_back();
      br.node_id = e.id;
      br.host = e.host;
      br.port = e.port;
      if (!e.rack.empty()) br.rack = e.rack;
    }
    if (version >= 2) resp.cluster_id = b.config().cluster_id;
    resp.controller_id = o->controller_for_clients();
    co_return co_await metadata_topics(b, version, std::move(req), std::move(resp));
  }
  // One entry per node, with its address on the listener the client came in on (as Kafka
  // does); a listener without an advertised address (or none given) gets the first one.
  const auto& eps = b.config().endpoints;
  const AdvertisedEndpoint* ep = eps.empty() ? nullptr : &eps.front();
  for (const auto& e : eps) {
    if (e.listener == listener) {
      ep = &e;
      break;
    }
  }
  if (ep != nullptr) {
    auto& br = resp.brokers.emplace_back();
    br.node_id = b.node_id();
    br.host = ep->host;
    br.port = ep->port;
    if (!b.config().rack.empty()) br.rack = b.config().rack;
  }
  if (version >= 2) resp.cluster_id = b.config().cluster_id;
  resp.controller_id = b.node_id();
  co_return co_await metadata_topics(b, version, std::move(req), std::move(resp));
}

namespace {

asio::awaitable<MetadataResponse> metadata_topics(Broker& b, int16_t version,
                                                  protocol::MetadataRequest req,
                                                  MetadataResponse resp) {
  if (!req.topics) {
    for (const auto& t : b.topics().list()) resp.topics.push_back(describe(b, *t, version));
    co_return resp;
  }
  const bool may_create =
      b.config().auto_create_topics && (version < 4 || req.allow_auto_topic_creation);
  for (auto& rt : *req.topics) {
    TopicPtr t;
    if (rt.name) {
      t = b.topics().find(*rt.name);
    } else {
      t = b.topics().find(rt.topic_id);
      if (!t) {
        auto& tr = resp.topics.emplace_back();
        tr.error_code = static_cast<int16_t>(ErrorCode::kUnknownTopicId);
        tr.name = std::nullopt;  // only v10+ requests can name topics by id
        tr.topic_id = rt.topic_id;
        continue;
      }
    }
    if (!t && rt.name) {
      const std::string name = *rt.name;
      if (auto st = validate_topic_name(name); !st.ok()) {
        auto& tr = resp.topics.emplace_back();
        tr.name = name;
        tr.error_code = static_cast<int16_t>(ErrorCode::kInvalidTopicException);
        continue;
      }
      if (may_create) {
        const int32_t n = b.config().num_partitions;
        auto work = [&b, name, n] { return b.topics().create(name, n, {}); };
        auto created = co_await b.blocking(std::move(work));
        if (created.ok()) {
          spdlog::info("auto-created topic {} with {} partitions", name, n);
          t = *created;
        } else if (created.error().code == Errc::kAlreadyExists) {
          t = b.topics().find(name);
        } else {
          auto& tr = resp.topics.emplace_back();
          tr.name = name;
          tr.error_code = static_cast<int16_t>(created.error().code == Errc::kInvalidArgument
                                                   ? ErrorCode::kInvalidTopicException
                                                   : ErrorCode::kLeaderNotAvailable);
          continue;
        }
      }
      if (!t) {
        auto& tr = resp.topics.emplace_back();
        tr.name = name;
        tr.error_code = static_cast<int16_t>(ErrorCode::kUnknownTopicOrPartition);
        continue;
      }
    }
    resp.topics.push_back(describe(b, *t, version));
  }
  co_return resp;
}

}  // namespace

}  // namespace shale::broker

namespace shale::broker {

// DescribeTopicPartitions (KIP-966; Kafka 4's kafka-topics --describe): the requested topics
// (every topic when none is named) in name order, their partitions as Metadata reports them,
// at most response_partition_limit partitions per response (capped at Kafka's 2000), resuming
// at the request's cursor and handing back a next_cursor while partitions remain. Unknown
// topics get UNKNOWN_TOPIC_OR_PARTITION; nothing is auto-created (as in Kafka).
asio::awaitable<protocol::DescribeTopicPartitionsResponse> handle_describe_topic_partitions(
    Broker& b, int16_t, protocol::DescribeTopicPartitionsRequest req) {
  using Resp = protocol::DescribeTopicPartitionsResponse;
  constexpr int32_t kMaxPartitions = 2000;  // max.request.partition.size.limit
  Resp resp;
  std::map<std::string, TopicPtr> wanted;  // name order; null = unknown
  if (req.topics.empty()) {
    for (const auto& t : b.topics().list()) wanted[t->name] = t;
  } else {
    for (const auto& rt : req.topics) wanted[rt.name] = b.topics().find(rt.name);
  }
  int32_t budget = req.response_partition_limit > 0
                       ? std::min(req.response_partition_limit, kMaxPartitions)
                       : kMaxPartitions;
  auto it = wanted.begin();
  int32_t first_partition = 0;
  if (req.cursor) {
    it = wanted.lower_bound(req.cursor->topic_name);
    if (it != wanted.end() && it->first == req.cursor->topic_name) {
      first_partition = std::max(0, req.cursor->partition_index);
    }
  }
  for (; it != wanted.end(); ++it, first_partition = 0) {
    auto& tr = resp.topics.emplace_back();
    tr.name = it->first;
    const TopicPtr& t = it->second;
    if (!t) {
      tr.error_code = static_cast<int16_t>(ErrorCode::kUnknownTopicOrPartition);
      continue;
    }
    if (budget <= 0) {  // the previous topic used the whole limit: resume here
      resp.topics.pop_back();
      resp.next_cursor = Resp::Cursor{it->first, first_partition};
      break;
    }
    tr.topic_id = t->id;
    const auto n = static_cast<int32_t>(t->partitions.size());
    int32_t p = first_partition;
    for (; p < n && budget > 0; ++p, --budget) {
      const auto& part = t->partitions[static_cast<size_t>(p)];
      auto& pr = tr.partitions.emplace_back();
      pr.partition_index = part->index();
      const PartitionLeader l = leader_of(b, *t, *part);
      pr.leader_id = l.id;
      pr.leader_epoch = l.epoch;
      if (l.id < 0) pr.error_code = static_cast<int16_t>(ErrorCode::kLeaderNotAvailable);
      pr.replica_nodes = l.id < 0 ? std::vector<int32_t>{} : std::vector<int32_t>{l.id};
      pr.isr_nodes = pr.replica_nodes;
      pr.eligible_leader_replicas = std::vector<int32_t>{};
      pr.last_known_elr = std::vector<int32_t>{};
    }
    if (p < n) {  // the limit cut this topic
      resp.next_cursor = Resp::Cursor{it->first, p};
      break;
    }
  }
  co_return resp;
}

}  // namespace shale::broker
