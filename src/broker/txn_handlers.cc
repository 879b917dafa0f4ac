#include "broker/txn_handlers.h"

#include <set>

namespace shale::broker {

using protocol::ErrorCode;

ErrorCode fenced_for_version(ErrorCode e, int16_t version, int16_t first_version) {
  if (e == ErrorCode::kProducerFenced && version < first_version) {
    return ErrorCode::kInvalidProducerEpoch;
  }
  return e;
}

namespace {

int16_t code(ErrorCode e) { return static_cast<int16_t>(e); }

}  // namespace

Status commit_txn_offsets(group::Coordinator& gc, const std::string& group,
                          const std::map<TxnTopicPartition, TxnPendingOffset>& offsets) {
  group::CommitRequest req;
  req.group_id = group;
  req.transactional = true;
  for (const auto& [tp, po] : offsets) {
    if (req.topics.empty() || req.topics.back().name != tp.topic) {
      req.topics.emplace_back().name = tp.topic;
    }
    group::CommitPartition cp;
    cp.partition = tp.partition;
    cp.offset = po.offset;
    cp.leader_epoch = po.leader_epoch;
    cp.metadata = po.metadata;
    req.topics.back().partitions.push_back(std::move(cp));
  }
  auto res = gc.commit_offsets(req);
  for (const auto& t : res.topics) {
    for (const auto& p : t.partitions) {
      if (p.error_code != 0) {
        return Error::make(Errc::kUnavailable, "committing the transaction's offsets of group " +
                                                   group + ": error " +
                                                   std::to_string(p.error_code));
      }
    }
  }
  return ok_status();
}

asio::awaitable<protocol::AddPartitionsToTxnResponse> handle_add_partitions_to_txn(
    Broker& b, int16_t version, protocol::AddPartitionsToTxnRequest req) {
  protocol::AddPartitionsToTxnResponse resp;
  std::vector<TxnTopicPartition> tps;
  for (const auto& t : req.v3_and_below_topics) {
    for (int32_t p : t.partitions) tps.push_back({t.name, p});
  }
  const auto* r = &req;
  const auto* tpsp = &tps;
  auto errors = co_await b.blocking([&b, r, tpsp] {
    return b.txn().add_partitions(r->v3_and_below_transactional_id, r->v3_and_below_producer_id,
                                  r->v3_and_below_producer_epoch, *tpsp);
  });
  for (const auto& t : req.v3_and_below_topics) {
    auto& tr = resp.results_by_topic_v3_and_below.emplace_back();
    tr.name = t.name;
    for (int32_t p : t.partitions) {
      auto& pr = tr.results_by_partition.emplace_back();
      pr.partition_index = p;
      pr.partition_error_code = code(fenced_for_version(errors[{t.name, p}], version, 2));
    }
  }
  co_return resp;
}

asio::awaitable<protocol::AddOffsetsToTxnResponse> handle_add_offsets_to_txn(
    Broker& b, int16_t version, protocol::AddOffsetsToTxnRequest req) {
  protocol::AddOffsetsToTxnResponse resp;
  const auto* r = &req;
  ErrorCode e = co_await b.blocking([&b, r] {
    return b.txn().add_offsets(r->transactional_id, r->producer_id, r->producer_epoch, r->group_id);
  });
  resp.error_code = code(fenced_for_version(e, version, 2));
  co_return resp;
}

asio::awaitable<protocol::TxnOffsetCommitResponse> handle_txn_offset_commit(
    Broker& b, int16_t version, protocol::TxnOffsetCommitRequest req) {
  (void)version;
  protocol::TxnOffsetCommitResponse resp;
  std::vector<std::pair<TxnTopicPartition, TxnPendingOffset>> offsets;
  std::set<TxnTopicPartition> unknown;
  for (const auto& t : req.topics) {
    for (const auto& p : t.partitions) {
      if (!b.partition_exists(t.name, p.partition_index)) {
        unknown.insert({t.name, p.partition_index});
        continue;
      }
      offsets.push_back({{t.name, p.partition_index},
                         {p.committed_offset, p.committed_leader_epoch, p.committed_metadata}});
    }
  }
  ErrorCode e = ErrorCode::kNone;
  if (!offsets.empty()) {
    const auto* r = &req;
    const auto* o = &offsets;
    e = co_await b.blocking([&b, r, o] {
      return b.txn().txn_offset_commit(r->transactional_id, r->group_id, r->producer_id,
                                       r->producer_epoch, *o);
    });
  }
  // TxnOffsetCommit has always answered INVALID_PRODUCER_EPOCH for a fenced producer.
  if (e == ErrorCode::kProducerFenced) e = ErrorCode::kInvalidProducerEpoch;
  for (const auto& t : req.topics) {
    auto& tr = resp.topics.emplace_back();
    tr.name = t.name;
    for (const auto& p : t.partitions) {
      auto& pr = tr.partitions.emplace_back();
      pr.partition_index = p.partition_index;
      pr.error_code = unknown.contains({t.name, p.partition_index})
                          ? code(ErrorCode::kUnknownTopicOrPartition)
                          : code(e);
    }
  }
  co_return resp;
}

asio::awaitable<protocol::EndTxnResponse> handle_end_txn(Broker& b, int16_t version,
                                                         protocol::EndTxnRequest req) {
  protocol::EndTxnResponse resp;
  const auto* r = &req;
  ErrorCode e = co_await b.blocking([&b, r] {
    return b.txn().end_txn(r->transactional_id, r->producer_id, r->producer_epoch, r->committed);
  });
  resp.error_code = code(fenced_for_version(e, version, 2));
  co_return resp;
}

asio::awaitable<protocol::DescribeTransactionsResponse> handle_describe_transactions(
    Broker& b, int16_t version, protocol::DescribeTransactionsRequest req) {
  (void)version;
  protocol::DescribeTransactionsResponse resp;
  const auto* r = &req;
  auto ds = co_await b.blocking([&b, r] { return b.txn().describe(r->transactional_ids); });
  for (const auto& d : ds) {
    auto& s = resp.transaction_states.emplace_back();
    s.error_code = code(d.error);
    s.transactional_id = d.transactional_id;
    if (d.error != ErrorCode::kNone) continue;
    s.transaction_state = txn_state_name(d.meta.state);
    s.transaction_timeout_ms = d.meta.timeout_ms;
    s.transaction_start_time_ms = d.meta.start_ms;
    s.producer_id = d.meta.producer_id;
    s.producer_epoch = d.meta.producer_epoch;
    for (const auto& tp : d.meta.partitions) {
      if (s.topics.empty() || s.topics.back().topic != tp.topic) {
        s.topics.emplace_back().topic = tp.topic;
      }
      s.topics.back().partitions.push_back(tp.partition);
    }
  }
  co_return resp;
}

asio::awaitable<protocol::ListTransactionsResponse> handle_list_transactions(
    Broker& b, int16_t version, protocol::ListTransactionsRequest req) {
  protocol::ListTransactionsResponse resp;
  static const std::set<std::string> kStates = {"Empty",        "Ongoing",          "PrepareCommit",
                                                "PrepareAbort", "CompleteCommit",   "CompleteAbort",
                                                "Dead",         "PrepareEpochFence"};
  for (const auto& s : req.state_filters) {
    if (!kStates.contains(s)) resp.unknown_state_filters.push_back(s);
  }
  const auto* r = &req;
  const int64_t duration = version >= 1 ? req.duration_filter : -1;
  auto txns = co_await b.blocking([&b, r, duration] {
    return b.txn().list(r->state_filters, r->producer_id_filters, duration);
  });
  for (const auto& [tid, m] : txns) {
    if (version >= 2 && req.transactional_id_pattern && !req.transactional_id_pattern->empty() &&
        tid.find(*req.transactional_id_pattern) == std::string::npos) {
      // KIP-1152's pattern is a Java regular expression; a plain substring match is served.
      continue;
    }
    auto& s = resp.transaction_states.emplace_back();
    s.transactional_id = tid;
    s.producer_id = m.producer_id;
    s.transaction_state = txn_state_name(m.state);
  }
  co_return resp;
}

asio::awaitable<protocol::DescribeProducersResponse> handle_describe_producers(
    Broker& b, int16_t version, protocol::DescribeProducersRequest req) {
  (void)version;
  protocol::DescribeProducersResponse resp;
  for (const auto& t : req.topics) {
    auto& tr = resp.topics.emplace_back();
    tr.name = t.name;
    for (int32_t p : t.partition_indexes) {
      auto& pr = tr.partitions.emplace_back();
      pr.partition_index = p;
      auto part = b.topics().partition(t.name, p);
      if (!part || part->deleted()) {
        pr.error_code = code(ErrorCode::kUnknownTopicOrPartition);
        continue;
      }
      for (const auto& v : part->producers()) {
        auto& ps = pr.active_producers.emplace_back();
        ps.producer_id = v.producer_id;
        ps.producer_epoch = v.epoch;
        ps.last_sequence = v.last_sequence;
        ps.last_timestamp = v.last_timestamp;
        ps.coordinator_epoch = v.coordinator_epoch;
        ps.current_txn_start_offset = v.current_txn_start_offset;
      }
    }
  }
  co_return resp;
}

}  // namespace shale::broker
