#include "broker/group_handlers.h"

#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include <asio/associated_executor.hpp>
#include <asio/async_result.hpp>
#include <asio/post.hpp>
#include <asio/use_awaitable.hpp>

#include "group/errors.h"

namespace shale::broker {

namespace {

namespace err = group::err;

// Suspends the coroutine, runs start(done) and resumes on the coroutine's own executor once
// done(T) has been called (exactly once, from any thread, possibly inline).
template <typename T, typename Start>
asio::awaitable<T> await_result(Start start) {
  return asio::async_initiate<const asio::use_awaitable_t<>&, void(T)>(
      [start = std::move(start)](auto handler) mutable {
        auto h = std::make_shared<decltype(handler)>(std::move(handler));
        start(std::function<void(T)>([h](T v) {
          auto ex = asio::get_associated_executor(*h);
          asio::post(ex, [h, v = std::move(v)]() mutable { std::move (*h)(std::move(v)); });
        }));
      },
      asio::use_awaitable);
}

Buffer to_buffer(const std::string& s) { return Buffer::copy(s); }
std::string to_string(const Buffer& b) { return std::string(b.view()); }

std::vector<group::TopicPartitions> to_topic_partitions(
    const std::vector<protocol::OffsetFetchRequest::OffsetFetchRequestTopic>& topics) {
  std::vector<group::TopicPartitions> out;
  out.reserve(topics.size());
  for (const auto& t : topics) out.push_back({t.name, t.partition_indexes});
  return out;
}

// (topic, partition) -> error, for answering in request order.
using ErrorMap = std::map<std::pair<std::string, int32_t>, int16_t>;

void collect_errors(const std::vector<group::TopicErrors>& topics, ErrorMap& out) {
  for (const auto& t : topics) {
    for (const auto& p : t.partitions) out[{t.name, p.partition}] = p.error_code;
  }
}

}  // namespace

std::string kafka_client_host(std::string_view peer) {
  std::string_view host = peer;
  if (!host.empty() && host.front() == '[') {
    auto close = host.find(']');
    host = close == std::string_view::npos ? host.substr(1) : host.substr(1, close - 1);
  } else if (auto colon = host.rfind(':');
             colon != std::string_view::npos && host.find(':') == colon) {
    host = host.substr(0, colon);  // exactly one colon: "host:port"
  }
  // Appended rather than "/" + std::string(host): GCC 12 at -O3 warns (-Wrestrict, a known
  // false positive) on the latter.
  std::string out;
  out.reserve(host.size() + 1);
  out.push_back('/');
  out.append(host);
  return out;
}

GroupHandlers::GroupHandlers(group::Coordinator& coordinator, asio::thread_pool& workers,
                             PartitionExists partition_exists, std::function<void()> on_call)
    : coordinator_(coordinator),
      workers_(workers),
      partition_exists_(std::move(partition_exists)),
      on_call_(std::move(on_call)) {}

template <typename F>
auto GroupHandlers::blocking(F fn) -> asio::awaitable<decltype(fn())> {
  using R = decltype(fn());
  return await_result<R>([this, fn](std::function<void(R)> done) {
    asio::post(workers_, [this, fn, done = std::move(done)] {
      R r = fn();
      if (on_call_) on_call_();
      done(std::move(r));
    });
  });
}

template <typename R, typename Call>
void GroupHandlers::call_parked(Call call, std::function<void(R)> done) {
  // The coordinator may answer inline (before call() returns) or later from another thread.
  // An inline answer is held until on_call_ has run: once `done` runs, the waiting coroutine
  // may finish and the broker may shut down, so nothing may touch `this` afterwards.
  struct Gate {
    std::mutex mu;
    bool returned = false;
    std::optional<R> held;
  };
  auto gate = std::make_shared<Gate>();
  call([gate, done](R r) {
    {
      std::lock_guard lock(gate->mu);
      if (!gate->returned) {
        gate->held = std::move(r);
        return;
      }
    }
    done(std::move(r));
  });
  if (on_call_) on_call_();
  std::optional<R> held;
  {
    std::lock_guard lock(gate->mu);
    gate->returned = true;
    held = std::move(gate->held);
  }
  if (held) done(std::move(*held));
}

// ---- FindCoordinator ----

asio::awaitable<protocol::FindCoordinatorResponse> GroupHandlers::find_coordinator(
    GroupRequestInfo info, protocol::FindCoordinatorRequest req) {
  using Coord = protocol::FindCoordinatorResponse::Coordinator;
  const bool batched = info.version >= 4;
  // v0 has no key type: it always asks for a group coordinator.
  const int8_t key_type = info.version == 0 ? kCoordinatorKeyGroup : req.key_type;
  std::vector<std::string> keys =
      batched ? std::move(req.coordinator_keys) : std::vector<std::string>{std::move(req.key)};

  std::vector<Coord> coords;
  coords.reserve(keys.size());
  auto fail = [](std::string key, int16_t code, std::string message) {
    Coord c;
    c.key = std::move(key);
    c.node_id = -1;
    c.port = -1;
    c.error_code = code;
    c.error_message = std::move(message);
    return c;
  };
  if (key_type == kCoordinatorKeyGroup && locator_) {
    // Cluster mode: the broker that owns the group's shard (this one or another).
    for (auto& k : keys) {
      auto r = locator_(k);
      if (!r) {
        coords.push_back(fail(std::move(k), err::kCoordinatorNotAvailable,
                              "no live broker coordinates this group's shard yet"));
        continue;
      }
      Coord c;
      c.key = std::move(k);
      c.node_id = r->node_id;
      c.host = r->host;
      c.port = r->port;
      coords.push_back(std::move(c));
    }
  } else if (key_type == kCoordinatorKeyGroup) {
    if (!coordinator_.loaded()) {
      // Not (or no longer) serving groups: clients retry FindCoordinator until it is.
      for (auto& k : keys) {
        coords.push_back(fail(std::move(k), err::kCoordinatorNotAvailable,
                              "the group coordinator is not available"));
      }
    } else {
      for (auto& ci : coordinator_.find_coordinator(key_type, keys)) {
        Coord c;
        c.key = std::move(ci.key);
        c.node_id = ci.node_id;
        c.host = std::move(ci.host);
        c.port = ci.port;
        c.error_code = ci.error_code;
        c.error_message = std::move(ci.error_message);
        coords.push_back(std::move(c));
      }
    }
  } else if (key_type == kCoordinatorKeyTransaction && !txn_unavailable_.empty()) {
    for (auto& k : keys)
      coords.push_back(fail(std::move(k), err::kCoordinatorNotAvailable, txn_unavailable_));
  } else if (key_type == kCoordinatorKeyTransaction) {
    // The transaction coordinator (broker/txn_coordinator.h) runs on the same broker as the
    // group coordinator: the same endpoint answers.
    for (auto& ci : coordinator_.find_coordinator(kCoordinatorKeyGroup, keys)) {
      Coord c;
      c.key = std::move(ci.key);
      c.node_id = ci.node_id;
      c.host = std::move(ci.host);
      c.port = ci.port;
      c.error_code = ci.error_code;
      c.error_message = std::move(ci.error_message);
      coords.push_back(std::move(c));
    }
  } else {
    for (auto& k : keys) {
      coords.push_back(fail(std::move(k), err::kInvalidRequest,
                            "unsupported coordinator key type " + std::to_string(key_type)));
    }
  }

  protocol::FindCoordinatorResponse resp;
  if (batched) {
    resp.coordinators = std::move(coords);
  } else {
    Coord& c = coords.front();
    resp.error_code = c.error_code;
    resp.error_message = c.error_code == err::kNone ? std::nullopt : c.error_message;
    resp.node_id = c.node_id;
    resp.host = std::move(c.host);
    resp.port = c.port;
  }
  co_return resp;
}

// ---- JoinGroup / SyncGroup / Heartbeat / LeaveGroup ----

asio::awaitable<protocol::JoinGroupResponse> GroupHandlers::join_group(
    GroupRequestInfo info, protocol::JoinGroupRequest req) {
  group::JoinRequest j;
  j.api_version = info.version;
  j.group_id = std::move(req.group_id);
  j.session_timeout_ms = req.session_timeout_ms;
  j.rebalance_timeout_ms = info.version >= 1 ? req.rebalance_timeout_ms : -1;
  j.member_id = std::move(req.member_id);
  j.group_instance_id = std::move(req.group_instance_id);
  j.protocol_type = std::move(req.protocol_type);
  j.protocols.reserve(req.protocols.size());
  for (auto& p : req.protocols) j.protocols.push_back({std::move(p.name), to_string(p.metadata)});
  j.reason = std::move(req.reason);
  j.client_id = info.client_id;
  j.client_host = info.client_host;

  // The coordinator may park the request; its callback then runs on another thread later.
  group::JoinResult r = co_await await_result<group::JoinResult>(
      [this, p = &j](std::function<void(group::JoinResult)> done) {
        asio::post(workers_, [this, p, done = std::move(done)]() mutable {
          call_parked<group::JoinResult>(
              [this, p](std::function<void(group::JoinResult)> cb) {
                coordinator_.join_group(std::move(*p), std::move(cb));
              },
              std::move(done));
        });
      });

  protocol::JoinGroupResponse resp;
  resp.error_code = r.error_code;
  resp.generation_id = r.generation_id;
  resp.protocol_type = std::move(r.protocol_type);
  // ProtocolName is nullable only from v7; older versions carry "" where Kafka has null.
  resp.protocol_name =
      info.version >= 7 ? std::move(r.protocol_name) : r.protocol_name.value_or(std::string());
  resp.leader = std::move(r.leader);
  resp.skip_assignment = r.skip_assignment;
  resp.member_id = std::move(r.member_id);
  resp.members.reserve(r.members.size());
  for (auto& m : r.members) {
    protocol::JoinGroupResponse::JoinGroupResponseMember pm;
    pm.member_id = std::move(m.member_id);
    pm.group_instance_id = std::move(m.group_instance_id);
    pm.metadata = to_buffer(m.metadata);
    resp.members.push_back(std::move(pm));
  }
  co_return resp;
}

asio::awaitable<protocol::SyncGroupResponse> GroupHandlers::sync_group(
    GroupRequestInfo info, protocol::SyncGroupRequest req) {
  group::SyncRequest s;
  s.group_id = std::move(req.group_id);
  s.generation_id = req.generation_id;
  s.member_id = std::move(req.member_id);
  s.group_instance_id = std::move(req.group_instance_id);
  if (info.version >= 5) {
    s.protocol_type = std::move(req.protocol_type);
    s.protocol_name = std::move(req.protocol_name);
  }
  s.assignments.reserve(req.assignments.size());
  for (auto& a : req.assignments) {
    s.assignments.push_back({std::move(a.member_id), to_string(a.assignment)});
  }

  group::SyncResult r = co_await await_result<group::SyncResult>(
      [this, p = &s](std::function<void(group::SyncResult)> done) {
        asio::post(workers_, [this, p, done = std::move(done)]() mutable {
          call_parked<group::SyncResult>(
              [this, p](std::function<void(group::SyncResult)> cb) {
                coordinator_.sync_group(std::move(*p), std::move(cb));
              },
              std::move(done));
        });
      });

  protocol::SyncGroupResponse resp;
  resp.error_code = r.error_code;
  if (info.version >= 5) {
    resp.protocol_type = std::move(r.protocol_type);
    resp.protocol_name = std::move(r.protocol_name);
  }
  resp.assignment = to_buffer(r.assignment);
  co_return resp;
}

asio::awaitable<protocol::HeartbeatResponse> GroupHandlers::heartbeat(
    GroupRequestInfo, protocol::HeartbeatRequest req) {
  group::HeartbeatRequest h;
  h.group_id = std::move(req.group_id);
  h.generation_id = req.generation_id;
  h.member_id = std::move(req.member_id);
  h.group_instance_id = std::move(req.group_instance_id);
  protocol::HeartbeatResponse resp;
  resp.error_code = co_await blocking([this, p = &h] { return coordinator_.heartbeat(*p); });
  co_return resp;
}

asio::awaitable<protocol::LeaveGroupResponse> GroupHandlers::leave_group(
    GroupRequestInfo info, protocol::LeaveGroupRequest req) {
  group::LeaveRequest l;
  l.group_id = std::move(req.group_id);
  const bool single = info.version < 3;
  if (single) {
    l.members.push_back({std::move(req.member_id), std::nullopt, std::nullopt});
  } else {
    l.members.reserve(req.members.size());
    for (auto& m : req.members) {
      l.members.push_back({std::move(m.member_id), std::move(m.group_instance_id),
                           info.version >= 5 ? std::move(m.reason) : std::nullopt});
    }
  }
  group::LeaveResult r = co_await blocking([this, p = &l] { return coordinator_.leave_group(*p); });

  protocol::LeaveGroupResponse resp;
  resp.error_code = r.error_code;
  if (single) {
    // v0-2 have no per-member answers: the one member's error is the request's error.
    if (resp.error_code == err::kNone && !r.members.empty()) {
      resp.error_code = r.members.front().error_code;
    }
  } else {
    resp.members.reserve(r.members.size());
    for (auto& m : r.members) {
      protocol::LeaveGroupResponse::MemberResponse pm;
      pm.member_id = std::move(m.member_id);
      pm.group_instance_id = std::move(m.group_instance_id);
      pm.error_code = m.error_code;
      resp.members.push_back(std::move(pm));
    }
  }
  co_return resp;
}

// ---- OffsetCommit / OffsetFetch / OffsetDelete ----

asio::awaitable<protocol::OffsetCommitResponse> GroupHandlers::offset_commit(
    GroupRequestInfo info, protocol::OffsetCommitRequest req) {
  group::CommitRequest c;
  c.api_version = info.version;
  c.group_id = req.group_id;
  c.generation_id = info.version >= 1 ? req.generation_id_or_member_epoch : -1;
  c.member_id = info.version >= 1 ? req.member_id : std::string();
  c.group_instance_id = req.group_instance_id;
  c.retention_time_ms = info.version >= 2 && info.version <= 4 ? req.retention_time_ms : -1;

  // Partitions of unknown topics are answered here; the rest go to the coordinator.
  ErrorMap errors;
  for (const auto& t : req.topics) {
    group::CommitTopic ct;
    ct.name = t.name;
    for (const auto& p : t.partitions) {
      if (!partition_exists_(t.name, p.partition_index)) {
        errors[{t.name, p.partition_index}] = err::kUnknownTopicOrPartition;
        continue;
      }
      group::CommitPartition cp;
      cp.partition = p.partition_index;
      cp.offset = p.committed_offset;
      cp.leader_epoch = info.version >= 6 ? p.committed_leader_epoch : -1;
      // commit_timestamp_ms stays -1: v1's CommitTimestamp went with v0-1 (Kafka 4, KIP-896).
      cp.metadata = p.committed_metadata;
      ct.partitions.push_back(std::move(cp));
    }
    if (!ct.partitions.empty()) c.topics.push_back(std::move(ct));
  }
  if (c.group_id.empty()) {
    // Kafka's GroupCoordinatorService refuses empty group ids before anything else.
    for (const auto& t : c.topics) {
      for (const auto& p : t.partitions) errors[{t.name, p.partition}] = err::kInvalidGroupId;
    }
  } else if (!c.topics.empty()) {
    group::CommitResult r =
        co_await blocking([this, p = &c] { return coordinator_.commit_offsets(*p); });
    collect_errors(r.topics, errors);
  }

  protocol::OffsetCommitResponse resp;
  resp.topics.reserve(req.topics.size());
  for (const auto& t : req.topics) {
    protocol::OffsetCommitResponse::OffsetCommitResponseTopic rt;
    rt.name = t.name;
    for (const auto& p : t.partitions) {
      auto it = errors.find({t.name, p.partition_index});
      // A partition the coordinator did not answer for would be a coordinator bug; report it
      // as a server error rather than claiming success.
      rt.partitions.push_back(
          {p.partition_index, it == errors.end() ? err::kUnknownServerError : it->second});
    }
    resp.topics.push_back(std::move(rt));
  }
  co_return resp;
}

asio::awaitable<protocol::OffsetFetchResponse> GroupHandlers::offset_fetch(
    GroupRequestInfo info, protocol::OffsetFetchRequest req) {
  group::FetchRequest f;
  f.require_stable = info.version >= 7 && req.require_stable;
  const bool multi = info.version >= 8;
  if (multi) {
    f.groups.reserve(req.groups.size());
    for (auto& g : req.groups) {
      group::FetchGroup fg;
      fg.group_id = std::move(g.group_id);
      if (g.topics) {
        fg.topics.emplace();
        for (auto& t : *g.topics) fg.topics->push_back({std::move(t.name), t.partition_indexes});
      }
      f.groups.push_back(std::move(fg));
    }
  } else {
    group::FetchGroup fg;
    fg.group_id = req.group_id;
    // Topics are nullable (= all committed offsets) from v2; v0-1 always name them.
    if (req.topics) fg.topics = to_topic_partitions(*req.topics);
    f.groups.push_back(std::move(fg));
  }

  group::FetchResult r = co_await blocking([this, p = &f] {
    group::FetchResult res = coordinator_.fetch_offsets(*p);
    if (p->require_stable && pending_txn_offsets_) {
      for (auto& g : res.groups) {
        for (auto& t : g.topics) {
          for (auto& pp : t.partitions) {
            if (pending_txn_offsets_(g.group_id, t.name, pp.partition)) {
              pp.error_code = err::kUnstableOffsetCommit;
              pp.offset = -1;
            }
          }
        }
      }
    }
    return res;
  });

  // Kafka's GroupCoordinatorService answers INVALID_GROUP_ID for an empty group id.
  for (auto& g : r.groups) {
    if (g.group_id.empty()) {
      g.error_code = err::kInvalidGroupId;
      g.topics.clear();
    }
  }

  protocol::OffsetFetchResponse resp;
  if (multi) {
    resp.groups.reserve(r.groups.size());
    for (auto& g : r.groups) {
      protocol::OffsetFetchResponse::OffsetFetchResponseGroup pg;
      pg.group_id = std::move(g.group_id);
      pg.error_code = g.error_code;
      for (auto& t : g.topics) {
        protocol::OffsetFetchResponse::OffsetFetchResponseTopics pt;
        pt.name = std::move(t.name);
        for (auto& p : t.partitions) {
          pt.partitions.push_back(
              {p.partition, p.offset, p.leader_epoch, std::move(p.metadata), p.error_code});
        }
        pg.topics.push_back(std::move(pt));
      }
      resp.groups.push_back(std::move(pg));
    }
    co_return resp;
  }

  group::FetchGroupResult g =
      r.groups.empty() ? group::FetchGroupResult{} : std::move(r.groups.front());
  for (auto& t : g.topics) {
    protocol::OffsetFetchResponse::OffsetFetchResponseTopic pt;
    pt.name = std::move(t.name);
    for (auto& p : t.partitions) {
      // v0-4 have no leader epoch and the codec ignores it; metadata "" for "none" either way.
      pt.partitions.push_back({p.partition, p.offset, p.leader_epoch,
                               p.metadata ? std::move(p.metadata) : std::string(), p.error_code});
    }
    resp.topics.push_back(std::move(pt));
  }
  if (info.version >= 2) {
    resp.error_code = g.error_code;
  } else if (g.error_code != err::kNone && req.topics) {
    // v0-1 have no group-level error: Kafka reports it on every requested partition.
    resp.topics.clear();
    for (const auto& t : *req.topics) {
      protocol::OffsetFetchResponse::OffsetFetchResponseTopic pt;
      pt.name = t.name;
      for (int32_t p : t.partition_indexes) {
        pt.partitions.push_back({p, -1, -1, std::string(), g.error_code});
      }
      resp.topics.push_back(std::move(pt));
    }
  }
  co_return resp;
}

asio::awaitable<protocol::OffsetDeleteResponse> GroupHandlers::offset_delete(
    GroupRequestInfo, protocol::OffsetDeleteRequest req) {
  group::OffsetDeleteRequest d;
  d.group_id = req.group_id;
  ErrorMap errors;
  for (const auto& t : req.topics) {
    group::TopicPartitions tp;
    tp.name = t.name;
    for (const auto& p : t.partitions) {
      if (partition_exists_(t.name, p.partition_index)) {
        tp.partitions.push_back(p.partition_index);
      } else {
        errors[{t.name, p.partition_index}] = err::kUnknownTopicOrPartition;
      }
    }
    if (!tp.partitions.empty()) d.topics.push_back(std::move(tp));
  }
  // Always asked, even with nothing left to delete: a group-level error (GROUP_ID_NOT_FOUND,
  // INVALID_GROUP_ID, NOT_COORDINATOR...) replaces the per-partition answers, as in Kafka.
  group::OffsetDeleteResult r =
      co_await blocking([this, p = &d] { return coordinator_.delete_offsets(*p); });

  protocol::OffsetDeleteResponse resp;
  resp.error_code = r.error_code;
  if (r.error_code != err::kNone) co_return resp;
  collect_errors(r.topics, errors);
  for (const auto& t : req.topics) {
    protocol::OffsetDeleteResponse::OffsetDeleteResponseTopic rt;
    rt.name = t.name;
    for (const auto& p : t.partitions) {
      auto it = errors.find({t.name, p.partition_index});
      rt.partitions.push_back(
          {p.partition_index, it == errors.end() ? err::kUnknownServerError : it->second});
    }
    resp.topics.push_back(std::move(rt));
  }
  co_return resp;
}

// ---- ListGroups / DescribeGroups / DeleteGroups ----

asio::awaitable<protocol::ListGroupsResponse> GroupHandlers::list_groups(
    GroupRequestInfo info, protocol::ListGroupsRequest req) {
  group::ListGroupsRequest l;
  if (info.version >= 4) l.states_filter = std::move(req.states_filter);
  if (info.version >= 5) l.types_filter = std::move(req.types_filter);
  group::ListGroupsResult r =
      co_await blocking([this, p = &l] { return coordinator_.list_groups(*p); });
  protocol::ListGroupsResponse resp;
  resp.error_code = r.error_code;
  resp.groups.reserve(r.groups.size());
  for (auto& g : r.groups) {
    resp.groups.push_back({std::move(g.group_id), std::move(g.protocol_type),
                           std::move(g.group_state), std::move(g.group_type)});
  }
  co_return resp;
}

asio::awaitable<protocol::DescribeGroupsResponse> GroupHandlers::describe_groups(
    GroupRequestInfo info, protocol::DescribeGroupsRequest req) {
  const bool with_ops = info.version >= 3 && req.include_authorized_operations;
  std::vector<group::DescribedGroup> r =
      co_await blocking([this, p = &req.groups] { return coordinator_.describe_groups(*p); });
  protocol::DescribeGroupsResponse resp;
  resp.groups.reserve(r.size());
  for (auto& g : r) {
    protocol::DescribeGroupsResponse::DescribedGroup pg;
    pg.error_code = g.error_code;
    pg.group_id = std::move(g.group_id);
    pg.group_state = std::move(g.group_state);
    pg.protocol_type = std::move(g.protocol_type);
    pg.protocol_data = std::move(g.protocol_data);
    for (auto& m : g.members) {
      protocol::DescribeGroupsResponse::DescribedGroupMember pm;
      pm.member_id = std::move(m.member_id);
      pm.group_instance_id = std::move(m.group_instance_id);
      pm.client_id = std::move(m.client_id);
      pm.client_host = std::move(m.client_host);
      pm.member_metadata = to_buffer(m.metadata);
      pm.member_assignment = to_buffer(m.assignment);
      pg.members.push_back(std::move(pm));
    }
    // No authorizer: every group operation is allowed. Kafka answers INT32_MIN ("not
    // requested") unless the client asked.
    if (with_ops && pg.error_code == err::kNone) pg.authorized_operations = kAllGroupOperations;
    resp.groups.push_back(std::move(pg));
  }
  co_return resp;
}

asio::awaitable<protocol::DeleteGroupsResponse> GroupHandlers::delete_groups(
    GroupRequestInfo, protocol::DeleteGroupsRequest req) {
  std::vector<group::DeleteGroupResult> r =
      co_await blocking([this, p = &req.groups_names] { return coordinator_.delete_groups(*p); });
  protocol::DeleteGroupsResponse resp;
  resp.results.reserve(r.size());
  for (auto& g : r) resp.results.push_back({std::move(g.group_id), g.error_code});
  co_return resp;
}

}  // namespace shale::broker
