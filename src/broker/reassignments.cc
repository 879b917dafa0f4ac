// AlterPartitionReassignments, ListPartitionReassignments and ElectLeaders: what Kafka's
// kafka-reassign-partitions and kafka-leader-election drive. Storage is shared, so a partition
// has exactly one replica (its owner) and a reassignment moves ownership (ownership.h): the
// target list must name exactly one live broker.
#include <set>

#include "broker/handlers.h"
#include "broker/ownership.h"

namespace shale::broker {

using protocol::ErrorCode;

namespace {

int16_t code(ErrorCode e) { return static_cast<int16_t>(e); }

ErrorCode reassign_error(const Error& e) {
  switch (e.code) {
    case Errc::kNotFound:
      return ErrorCode::kUnknownTopicOrPartition;
    case Errc::kInvalidArgument:
      return ErrorCode::kInvalidReplicaAssignment;
    case Errc::kConflict:
      return ErrorCode::kRequestTimedOut;  // retriable: a take-over is under way
    default:
      return ErrorCode::kUnknownServerError;
  }
}

}  // namespace

asio::awaitable<protocol::AlterPartitionReassignmentsResponse> handle_alter_partition_reassignments(
    Broker& b, int16_t version, protocol::AlterPartitionReassignmentsRequest req) {
  (void)version;
  protocol::AlterPartitionReassignmentsResponse resp;
  resp.error_message = std::nullopt;
  Ownership* o = b.ownership();
  for (auto& rt : req.topics) {
    auto& tr = resp.responses.emplace_back();
    tr.name = rt.name;
    TopicPtr t = b.topics().find(rt.name);
    for (auto& rp : rt.partitions) {
      auto& pr = tr.partitions.emplace_back();
      pr.partition_index = rp.partition_index;
      pr.error_message = std::nullopt;
      auto fail = [&pr](ErrorCode e, std::string msg) {
        pr.error_code = code(e);
        pr.error_message = std::move(msg);
      };
      if (!t || rp.partition_index < 0 ||
          static_cast<size_t>(rp.partition_index) >= t->partitions.size()) {
        fail(ErrorCode::kUnknownTopicOrPartition, "The partition " + rt.name + "-" +
                                                      std::to_string(rp.partition_index) +
                                                      " does not exist.");
        continue;
      }
      if (!rp.replicas) {  // cancel
        if (o == nullptr) {
          fail(ErrorCode::kNoReassignmentInProgress, "No reassignment is in progress.");
          continue;
        }
        const protocol::Uuid id = t->id;
        const int32_t p = rp.partition_index;
        auto r = co_await b.blocking([o, id, p] { return o->cancel(id, p); });
        if (!r.ok()) {
          fail(r.error().code == Errc::kConflict ? ErrorCode::kNoReassignmentInProgress
                                                 : reassign_error(r.error()),
               r.error().message);
        }
        continue;
      }
      const std::set<int32_t> distinct(rp.replicas->begin(), rp.replicas->end());
      if (rp.replicas->size() != 1 || distinct.size() != 1) {
        fail(ErrorCode::kInvalidReplicaAssignment,
             "Shale keeps exactly one replica per partition (its data is in shared storage); "
             "name one broker.");
        continue;
      }
      const int32_t target = rp.replicas->front();
      if (o == nullptr) {
        if (target != b.node_id()) {
          fail(ErrorCode::kInvalidReplicaAssignment,
               "Broker " + std::to_string(target) + " is not a live broker.");
        }
        continue;
      }
      const protocol::Uuid id = t->id;
      const int32_t p = rp.partition_index;
      auto r = co_await b.blocking([o, id, p, target] { return o->reassign(id, p, target); });
      if (!r.ok()) fail(reassign_error(r.error()), r.error().message);
    }
  }
  co_return resp;
}

asio::awaitable<protocol::ListPartitionReassignmentsResponse> handle_list_partition_reassignments(
    Broker& b, int16_t version, protocol::ListPartitionReassignmentsRequest req) {
  (void)version;
  protocol::ListPartitionReassignmentsResponse resp;
  resp.error_message = std::nullopt;
  Ownership* o = b.ownership();
  if (o == nullptr) co_return resp;
  std::map<std::string, std::set<int32_t>> wanted;  // empty set: every partition
  if (req.topics) {
    for (const auto& t : *req.topics)
      wanted[t.name].insert(t.partition_indexes.begin(), t.partition_indexes.end());
  }
  std::map<std::string, protocol::ListPartitionReassignmentsResponse::OngoingTopicReassignment>
      by_topic;
  for (const auto& [k, a] : o->ongoing()) {
    protocol::Uuid id;
    if (!parse_topic_id_hex(k.first, id)) continue;
    TopicPtr t = b.topics().find(id);
    if (!t) continue;
    if (req.topics) {
      auto it = wanted.find(t->name);
      if (it == wanted.end() || !it->second.contains(k.second)) continue;
    }
    auto& tr = by_topic[t->name];
    tr.name = t->name;
    auto& pr = tr.partitions.emplace_back();
    pr.partition_index = k.second;
    pr.replicas = {a.owner, a.target};
    pr.adding_replicas = {a.target};
    pr.removing_replicas = {a.owner};
  }
  for (auto& [name, tr] : by_topic) resp.topics.push_back(std::move(tr));
  co_return resp;
}

asio::awaitable<protocol::ElectLeadersResponse> handle_elect_leaders(
    Broker& b, int16_t version, protocol::ElectLeadersRequest req) {
  (void)version;
  protocol::ElectLeadersResponse resp;
  if (!req.topic_partitions) co_return resp;  // every partition: nothing to report
  for (const auto& tp : *req.topic_partitions) {
    auto& tr = resp.replica_election_results.emplace_back();
    tr.topic = tp.topic;
    TopicPtr t = b.topics().find(tp.topic);
    for (int32_t p : tp.partitions) {
      auto& pr = tr.partition_result.emplace_back();
      pr.partition_id = p;
      pr.error_message = std::nullopt;
      if (!t || p < 0 || static_cast<size_t>(p) >= t->partitions.size()) {
        pr.error_code = code(ErrorCode::kUnknownTopicOrPartition);
        pr.error_message = "The partition does not exist.";
      }
    }
  }
  co_return resp;
}

}  // namespace shale::broker
