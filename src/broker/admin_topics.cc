// CreateTopics, DeleteTopics, CreatePartitions and InitProducerId. Validation follows Kafka's
// controller (same checks, codes and messages); the MetaStore/Engine work runs on the worker
// pool.
#include <set>

#include <spdlog/spdlog.h>

#include "broker/handlers.h"

namespace shale::broker {

using protocol::ErrorCode;

namespace {

struct TopicError {
  ErrorCode code = ErrorCode::kNone;
  std::string message;
};

ErrorCode create_error_code(const Error& e) {
  switch (e.code) {
    case Errc::kAlreadyExists:
      return ErrorCode::kTopicAlreadyExists;
    case Errc::kInvalidArgument:
      return ErrorCode::kInvalidTopicException;
    case Errc::kNotFound:
      return ErrorCode::kUnknownTopicOrPartition;
    default:
      return ErrorCode::kUnknownServerError;
  }
}

}  // namespace

asio::awaitable<protocol::CreateTopicsResponse> handle_create_topics(
    Broker& b, int16_t version, protocol::CreateTopicsRequest req) {
  protocol::CreateTopicsResponse resp;
  std::map<std::string, int> counts;
  for (const auto& t : req.topics) counts[t.name]++;
  const int32_t node = b.node_id();
  for (auto& ct : req.topics) {
    auto& r = resp.topics.emplace_back();
    r.name = ct.name;
    auto fail = [&r, version](ErrorCode c, std::string msg) {
      r.error_code = static_cast<int16_t>(c);
      if (version >= 1) r.error_message = std::move(msg);
      if (version >= 5) r.configs = std::nullopt;
    };
    if (counts[ct.name] > 1) {
      fail(ErrorCode::kInvalidRequest, "Duplicate topic name.");
      continue;
    }
    if (auto st = validate_topic_name(ct.name); !st.ok()) {
      fail(ErrorCode::kInvalidTopicException, st.error().message);
      continue;
    }
    if (b.topics().find(ct.name)) {
      fail(ErrorCode::kTopicAlreadyExists, "Topic '" + ct.name + "' already exists.");
      continue;
    }
    int32_t partitions = ct.num_partitions;
    int16_t rf = ct.replication_factor;
    if (!ct.assignments.empty()) {
      if (partitions != -1 || rf != -1) {
        fail(ErrorCode::kInvalidRequest,
             "Both numPartitions or replicationFactor and replicasAssignments were set. Both "
             "cannot be used at the same time.");
        continue;
      }
      std::set<int32_t> seen;
      std::string bad;
      for (const auto& a : ct.assignments) {
        seen.insert(a.partition_index);
        if (a.broker_ids.empty())
          bad = "Replica assignment for partition " + std::to_string(a.partition_index) +
                " is empty.";
        for (int32_t id : a.broker_ids) {
          if (id != node) bad = "Broker " + std::to_string(id) + " is not registered.";
        }
      }
      if (bad.empty() &&
          (*seen.begin() != 0 || *seen.rbegin() != static_cast<int32_t>(seen.size()) - 1 ||
           seen.size() != ct.assignments.size())) {
        bad = "Partitions should be a consecutive 0-based integer sequence.";
      }
      if (!bad.empty()) {
        fail(ErrorCode::kInvalidReplicaAssignment, bad);
        continue;
      }
      partitions = static_cast<int32_t>(ct.assignments.size());
      rf = static_cast<int16_t>(ct.assignments[0].broker_ids.size());
    } else {
      if (partitions == -1) partitions = b.config().num_partitions;
      if (partitions <= 0) {
        fail(ErrorCode::kInvalidPartitions,
             "Number of partitions was set to an invalid non-positive value.");
        continue;
      }
      if (rf == -1) {
        rf = b.config().default_replication_factor;
      } else if (rf <= 0) {
        fail(ErrorCode::kInvalidReplicationFactor,
             "Replication factor must be larger than 0, or -1 to use the default value.");
        continue;
      } else if (rf > 1) {
        fail(ErrorCode::kInvalidReplicationFactor,
             "Unable to replicate the partition " + std::to_string(rf) +
                 " time(s): The target replication factor of " + std::to_string(rf) +
                 " cannot be reached because only 1 broker(s) are registered.");
        continue;
      }
    }
    std::map<std::string, std::string> configs;
    TopicError cfg_err;
    for (const auto& c : ct.configs) {
      if (auto st = validate_topic_config(c.name, c.value); !st.ok()) {
        cfg_err = {ErrorCode::kInvalidConfig, st.error().message};
        break;
      }
      configs[c.name] = *c.value;
    }
    if (cfg_err.code != ErrorCode::kNone) {
      fail(cfg_err.code, cfg_err.message);
      continue;
    }
    if (!req.validate_only) {
      const std::string name = ct.name;
      auto work = [&b, name, partitions, configs] {
        return b.topics().create(name, partitions, configs);
      };
      auto created = co_await b.blocking(std::move(work));
      if (!created.ok()) {
        fail(create_error_code(created.error()), created.error().message);
        continue;
      }
      if (version >= 7) r.topic_id = (*created)->id;
      spdlog::info("created topic {} ({} partitions)", name, partitions);
    }
    r.error_message = std::nullopt;
    if (version < 5) continue;  // the fields below exist from v5
    r.num_partitions = partitions;
    r.replication_factor = rf;
    std::vector<protocol::CreateTopicsResponse::CreatableTopicConfigs> out;
    const BrokerTopicDefaults defaults = b.topics().defaults();
    for (const auto& key : topic_config_keys()) {
      auto& c = out.emplace_back();
      c.name = key.name;
      if (auto it = configs.find(key.name); it != configs.end()) {
        c.value = it->second;
        c.config_source = kSourceTopic;
      } else {
        DefaultValue d = topic_config_default(key, defaults);
        c.value = d.value;
        c.config_source = d.source;
      }
    }
    r.configs = std::move(out);
  }
  co_return resp;
}

asio::awaitable<protocol::DeleteTopicsResponse> handle_delete_topics(
    Broker& b, int16_t version, protocol::DeleteTopicsRequest req) {
  protocol::DeleteTopicsResponse resp;
  struct Target {
    std::optional<std::string> name;
    protocol::Uuid id;
  };
  std::vector<Target> targets;
  if (version >= 6) {
    for (auto& t : req.topics) targets.push_back({t.name, t.topic_id});
  } else {
    for (auto& n : req.topic_names) targets.push_back({n, {}});
  }
  for (auto& tg : targets) {
    auto& r = resp.responses.emplace_back();
    TopicPtr t;
    if (tg.name) {
      t = b.topics().find(*tg.name);
    } else {
      t = b.topics().find(tg.id);
    }
    r.name = tg.name;
    if (version >= 6) r.topic_id = tg.id;
    if (!t) {
      const bool by_id = !tg.name;
      r.error_code = static_cast<int16_t>(by_id ? ErrorCode::kUnknownTopicId
                                                : ErrorCode::kUnknownTopicOrPartition);
      if (version >= 5) {
        r.error_message = by_id ? "Topic id " + tg.id.to_base64() + " not found"
                                : "This server does not host this topic-partition.";
      }
      continue;
    }
    r.name = t->name;
    if (version >= 6) r.topic_id = t->id;
    const std::string name = t->name;
    auto work = [&b, name] { return b.topics().remove(name); };
    Status st = co_await b.blocking(std::move(work));
    if (!st.ok()) {
      r.error_code = static_cast<int16_t>(create_error_code(st.error()));
      if (version >= 5) r.error_message = st.error().message;
      continue;
    }
    spdlog::info("deleted topic {}", name);
  }
  co_return resp;
}

asio::awaitable<protocol::CreatePartitionsResponse> handle_create_partitions(
    Broker& b, int16_t version, protocol::CreatePartitionsRequest req) {
  (void)version;
  protocol::CreatePartitionsResponse resp;
  std::map<std::string, int> counts;
  for (const auto& t : req.topics) counts[t.name]++;
  for (auto& ct : req.topics) {
    auto& r = resp.results.emplace_back();
    r.name = ct.name;
    auto fail = [&r](ErrorCode c, std::string msg) {
      r.error_code = static_cast<int16_t>(c);
      r.error_message = std::move(msg);
    };
    if (counts[ct.name] > 1) {
      fail(ErrorCode::kInvalidRequest, "Duplicate topic name.");
      continue;
    }
    TopicPtr t = b.topics().find(ct.name);
    if (!t) {
      fail(ErrorCode::kUnknownTopicOrPartition, "The topic '" + ct.name + "' does not exist.");
      continue;
    }
    const auto current = static_cast<int32_t>(t->partitions.size());
    if (ct.count < current) {
      fail(ErrorCode::kInvalidPartitions,
           "The topic " + ct.name + " currently has " + std::to_string(current) +
               " partition(s); " + std::to_string(ct.count) + " would not be an increase.");
      continue;
    }
    if (ct.count == current) {
      fail(ErrorCode::kInvalidPartitions,
           "Topic already has " + std::to_string(current) + " partition(s).");
      continue;
    }
    if (ct.assignments) {
      bool bad = ct.assignments->size() != static_cast<size_t>(ct.count - current);
      for (const auto& a : *ct.assignments) {
        for (int32_t id : a.broker_ids) bad = bad || id != b.node_id();
      }
      if (bad) {
        fail(ErrorCode::kInvalidReplicaAssignment, "Invalid replica assignment.");
        continue;
      }
    }
    if (req.validate_only) continue;
    const std::string name = ct.name;
    const int32_t total = ct.count;
    auto work = [&b, name, total] { return b.topics().add_partitions(name, total); };
    auto res = co_await b.blocking(std::move(work));
    if (!res.ok()) fail(create_error_code(res.error()), res.error().message);
  }
  co_return resp;
}

asio::awaitable<protocol::InitProducerIdResponse> handle_init_producer_id(
    Broker& b, int16_t version, protocol::InitProducerIdRequest req) {
  protocol::InitProducerIdResponse resp;
  if (req.transactional_id && !req.transactional_id->empty()) {
    // The transaction coordinator (txn_coordinator.h): epoch bump, zombie fencing.
    const auto* r = &req;
    TxnInitResult res = co_await b.blocking([&b, r] {
      return b.txn().init_producer_id(*r->transactional_id, r->transaction_timeout_ms,
                                      r->producer_id, r->producer_epoch);
    });
    // PRODUCER_FENCED exists from v4 (KIP-588); older clients know INVALID_PRODUCER_EPOCH.
    ErrorCode e = res.error;
    if (e == ErrorCode::kProducerFenced && version < 4) e = ErrorCode::kInvalidProducerEpoch;
    resp.error_code = static_cast<int16_t>(e);
    resp.producer_id = res.producer_id;
    resp.producer_epoch = res.producer_epoch;
    co_return resp;
  }
  // As Kafka does for idempotent producers: a fresh id with epoch 0 every time, also when the
  // producer asks to bump the epoch of its current id (KIP-360).
  auto id = co_await b.blocking([&b] { return b.producer_ids().allocate(); });
  if (!id.ok()) {
    resp.error_code = static_cast<int16_t>(ErrorCode::kCoordinatorNotAvailable);
    co_return resp;
  }
  resp.producer_id = *id;
  resp.producer_epoch = 0;
  co_return resp;
}

}  // namespace shale::broker
