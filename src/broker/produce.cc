// Produce: validate the record batches of each partition, assign offsets, append to the
// partition's stream and answer once the appends are durable (acks = 1 or -1; with a single
// durable WAL both mean "in the WAL"). acks = 0 appends the same way but nobody waits.
#include <algorithm>
#include <chrono>

#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>

#include "base/clock.h"
#include "broker/handlers.h"
#include "broker/ownership.h"
#include "broker/topic_metrics.h"

namespace shale::broker {

using protocol::ErrorCode;
using protocol::ProduceRequest;
using protocol::ProduceResponse;

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

namespace {

struct Prepared {
  ErrorCode error = ErrorCode::kNone;
  std::string message;
  std::vector<std::pair<int32_t, std::string>> record_errors;  // (record index, message)
  std::vector<PreparedBatch> batches;
};

// now - ts, saturated (timestamps are client input and may be anything).
int64_t age_ms(int64_t now, int64_t ts) {
  int64_t d = 0;
  if (__builtin_sub_overflow(now, ts, &d)) return ts < 0 ? INT64_MAX : INT64_MIN;
  return d;
}

int64_t saturating_add(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return b > 0 ? INT64_MAX : INT64_MIN;
  return r;
}

// Kafka's LogValidator checks, in the order Kafka applies them.
Prepared prepare(const std::optional<Buffer>& records, const TopicSettings& settings, int64_t now) {
  Prepared out;
  if (!records || records->empty()) {
    out.error = ErrorCode::kInvalidRecord;
    out.message = "Produce request has no record batches";
    return out;
  }
  protocol::BatchReader reader(*records, /*allow_partial_tail=*/false, /*verify_crc=*/true);
  while (true) {
    auto next = reader.next();
    if (!next.ok()) {
      out.error = protocol::batch_error_code(next.error());
      out.message = next.error().message;
      return out;
    }
    if (!next->has_value()) break;
    protocol::RecordBatch batch = std::move(**next);
    const auto& h = batch.header();
    if (batch.bytes().size() > static_cast<size_t>(settings.max_message_bytes)) {
      out.error = ErrorCode::kMessageTooLarge;
      out.message = "The record batch size " + std::to_string(batch.bytes().size()) +
                    " exceeds the maximum allowed " + std::to_string(settings.max_message_bytes);
      return out;
    }
    if (h.is_control()) {
      out.error = ErrorCode::kInvalidRecord;
      out.message = "Clients are not allowed to write control records";
      return out;
    }
    if (h.is_transactional() && h.producer_id < 0) {
      out.error = ErrorCode::kInvalidRecord;
      out.message = "Transactional batch without a producer id";
      return out;
    }
    PreparedBatch pb{batch, -1, 0};
    // message.timestamp.before/after.max.ms (Kafka 3.6+): CreateTime records only; a record
    // without a timestamp (-1) is not checked. The first offending record fails the batch.
    const bool check_ts = !settings.log_append_time;
    int32_t record_index = 0;
    auto st = batch.for_each_record(
        [&](const protocol::RecordView& v) {
          int64_t ts = h.base_timestamp + v.timestamp_delta;
          if (ts > pb.max_timestamp) {
            pb.max_timestamp = ts;
            pb.max_timestamp_delta = v.offset_delta;
          }
          if (check_ts && ts != -1 && out.error == ErrorCode::kNone) {
            const int64_t age = age_ms(now, ts);
            if (age > settings.timestamp_before_max_ms ||
                (age < 0 && age_ms(0, age) > settings.timestamp_after_max_ms)) {
              out.error = ErrorCode::kInvalidTimestamp;
              out.message =
                  "Timestamp " + std::to_string(ts) + " of message with offset " +
                  std::to_string(v.offset_delta) +
                  " is out of range. The timestamp should be within [" +
                  std::to_string(saturating_add(now, -settings.timestamp_before_max_ms)) + ", " +
                  std::to_string(saturating_add(now, settings.timestamp_after_max_ms)) + "]";
              out.record_errors.push_back({record_index, out.message});
            }
          }
          ++record_index;
        },
        protocol::OffsetCheck::kProduce);
    if (!st.ok()) {
      out.error = protocol::batch_error_code(st.error());
      out.message = st.error().message;
      out.record_errors.clear();
      return out;
    }
    if (out.error != ErrorCode::kNone) return out;
    if (settings.compression && *settings.compression != h.compression()) {
      // The topic's compression.type differs from the producer's codec: store the batch
      // recompressed, as Kafka's LogValidator does (offsets, sequence numbers and timestamps
      // are kept; only the record area, the length and the CRC change).
      auto re = pb.batch.recompressed(*settings.compression);
      if (!re.ok()) {
        out.error = protocol::batch_error_code(re.error());
        out.message = "cannot recompress the batch: " + re.error().message;
        return out;
      }
      pb.batch = std::move(re).value();
      if (pb.batch.bytes().size() > static_cast<size_t>(settings.max_message_bytes)) {
        out.error = ErrorCode::kMessageTooLarge;
        out.message = "The record batch size " + std::to_string(pb.batch.bytes().size()) +
                      " after recompression exceeds the maximum allowed " +
                      std::to_string(settings.max_message_bytes);
        return out;
      }
    }
    out.batches.push_back(std::move(pb));
  }
  if (out.batches.empty()) {
    out.error = ErrorCode::kInvalidRecord;
    out.message = "Produce request has no record batches";
  }
  return out;
}

// Kafka's BytesInPerSec / MessagesInPerSec, per topic (counters looked up once per topic of a
// request) and in total.
void count_in(TopicCounters& t, const std::vector<PreparedBatch>& batches) {
  uint64_t bytes = 0, messages = 0;
  for (const auto& pb : batches) {
    bytes += pb.batch.bytes().size();
    messages += static_cast<uint64_t>(pb.batch.header().last_offset_delta) + 1;
  }
  TopicCounters& all = TopicMetrics::instance().all();
  t.bytes_in.inc(bytes);
  t.messages_in.inc(messages);
  all.bytes_in.inc(bytes);
  all.messages_in.inc(messages);
}

constexpr const char* kNoLeaseMessage =
    "this broker's metadata lease is not surely valid (metadata store unreachable?); retry";

struct PartitionSlot {
  ProduceResponse::PartitionProduceResponse* resp;
  std::shared_ptr<Status> result;  // written by the append callback
  bool pending = false;
};

// Clears fields the response version cannot carry (the codec refuses non-defaults there).
void fit_to_version(ProduceResponse& resp, int16_t version) {
  for (auto& t : resp.responses) {
    for (auto& p : t.partition_responses) {
      if (version < 5) p.log_start_offset = -1;
      if (version < 8) {
        p.error_message = std::nullopt;
        p.record_errors.clear();
      }
    }
  }
}

}  // namespace

// Polls (every 5 ms, at most 1 s) for partition `index` of `topic` to be served here; returns
// the partition object as published last.
static asio::awaitable<std::shared_ptr<Partition>> wait_until_serving(
    Broker& b, std::string topic, int32_t index, std::shared_ptr<Partition> part) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  for (int i = 0; i < 200 && !part->serving(); ++i) {
    timer.expires_after(std::chrono::milliseconds(5));
    std::error_code ec;
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (auto p = b.topics().partition(topic, index)) part = std::move(p);
  }
  co_return part;
}

// Appends made under lease `token` are durable but the lease is not surely valid now: polls
// (every 5 ms, until `deadline_ms`, monotonic) for the gate to open again; returns the token
// then (0 if it stayed closed). A request answered NOT_LEADER_OR_FOLLOWER here while the one
// pipelined behind it is acknowledged once the lease is renewed would tell the client that a
// stored batch was not stored (librdkafka then acknowledges it without an offset).
static asio::awaitable<int64_t> wait_for_ack_gate(Broker& b, int64_t deadline_ms) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  int64_t token = b.ack_token();
  while (token == 0 && clock::mono_ms() < deadline_ms) {
    timer.expires_after(std::chrono::milliseconds(5));
    std::error_code ec;
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    token = b.ack_token();
  }
  co_return token;
}

// KIP-951: a NOT_LEADER_OR_FOLLOWER answer names the partition's current leader and its
// endpoint (v10+), so clients can redirect without a metadata round trip (cluster mode).
static void add_leader_hints(Broker& b, ProduceResponse& resp, int16_t version) {
  const Ownership* o = b.ownership();
  if (o == nullptr || version < 10) return;
  const std::string listener =
      b.config().endpoints.empty() ? std::string() : b.config().endpoints.front().listener;
  for (auto& tr : resp.responses) {
    TopicPtr t;
    for (auto& pr : tr.partition_responses) {
      if (pr.error_code != static_cast<int16_t>(ErrorCode::kNotLeaderOrFollower)) continue;
      if (!t) t = b.topics().find(tr.name);
      if (!t) break;
      const auto h = o->hint(t->id, pr.index, b.node_id(), listener);
      if (h.leader.id < 0) continue;
      pr.current_leader.leader_id = h.leader.id;
      pr.current_leader.leader_epoch = h.leader.epoch;
      if (h.endpoint) add_node_endpoint(resp.node_endpoints, *h.endpoint);
    }
  }
}

asio::awaitable<ProduceResponse> handle_produce(Broker& b, int16_t version, ProduceRequest req,
                                                net::RequestOrder* order) {
  ProduceResponse resp;
  const bool valid_acks = req.acks == 0 || req.acks == 1 || req.acks == -1;
  auto latch = std::make_shared<CallbackLatch>();
  std::vector<PartitionSlot> slots;
  int64_t gate_token = 0;  // the lease the appends are made under (Broker::ack_token)
  resp.responses.reserve(req.topic_data.size());
  for (auto& td : req.topic_data) {
    auto& tr = resp.responses.emplace_back();
    tr.name = td.name;
    tr.partition_responses.reserve(td.partition_data.size());
    TopicPtr topic = b.topics().find(td.name);
    TopicCounters* counters = nullptr;  // looked up at the topic's first stored batch
    for (auto& pd : td.partition_data) {
      auto& pr = tr.partition_responses.emplace_back();
      pr.index = pd.index;
      pr.base_offset = -1;
      if (!valid_acks) {
        pr.error_code = static_cast<int16_t>(ErrorCode::kInvalidRequiredAcks);
        continue;
      }
      if (!topic || pd.index < 0 || static_cast<size_t>(pd.index) >= topic->partitions.size()) {
        pr.error_code = static_cast<int16_t>(ErrorCode::kUnknownTopicOrPartition);
        continue;
      }
      if (const int64_t token = b.ack_token();
          token == 0 || (gate_token != 0 && token != gate_token)) {
        pr.error_code = static_cast<int16_t>(ErrorCode::kNotLeaderOrFollower);
        pr.error_message = kNoLeaseMessage;
        continue;
      } else if (gate_token == 0) {
        gate_token = token;
      }
      std::shared_ptr<Partition> part = topic->partitions[static_cast<size_t>(pd.index)];
      if (!part->serving() && b.ownership() != nullptr &&
          b.ownership()->opening(topic->id, pd.index)) {
        // Cluster mode: this broker owns the partition (or is taking it over) and is opening
        // it. Clients may know before it serves; answering NOT_LEADER_OR_FOLLOWER to one request
        // and then accepting the next one pipelined behind it would break an idempotent
        // producer's sequence, so the request waits (up to a second) instead. The connection's
        // later requests wait behind it (the order is not released yet).
        part = co_await wait_until_serving(b, td.name, pd.index, part);
      }
      if (!part->serving()) {
        // Cluster mode: another broker owns it; clients refresh metadata.
        pr.error_code = static_cast<int16_t>(ErrorCode::kNotLeaderOrFollower);
        continue;
      }
      Prepared prep = prepare(pd.records, topic->settings, now_ms());
      if (prep.error != ErrorCode::kNone) {
        pr.error_code = static_cast<int16_t>(prep.error);
        pr.error_message = prep.message;
        for (auto& [index, msg] : prep.record_errors) {
          auto& re = pr.record_errors.emplace_back();
          re.batch_index = index;
          re.batch_index_error_message = std::move(msg);
        }
        continue;
      }
      const int64_t lat = topic->settings.log_append_time ? now_ms() : -1;
      auto result = std::make_shared<Status>();
      latch->add();
      // Transactional batches: the coordinator must have this partition in the transaction.
      TxnCoordinator* txn = &b.txn();
      const int32_t pindex = pd.index;
      TxnVerifier verify = [txn, &td, pindex](int64_t pid, int16_t epoch) {
        return txn->verify(pid, epoch, TxnTopicPartition{td.name, pindex});
      };
      AppendStart st = part->append(
          prep.batches, lat,
          [latch, result](Status s) {
            *result = std::move(s);
            latch->count_down();
          },
          verify);
      if (!st.pending) latch->count_down();
      pr.error_code = static_cast<int16_t>(st.error);
      if (!st.message.empty()) pr.error_message = st.message;
      pr.base_offset = st.base_offset;
      pr.log_append_time_ms = st.log_append_time;
      if (st.error == ErrorCode::kNone) {
        if (counters == nullptr) counters = &TopicMetrics::instance().for_topic(td.name);
        count_in(*counters, prep.batches);
      }
      pr.log_start_offset = part->log_start_offset();
      slots.push_back({&pr, result, st.pending});
    }
  }
  if (req.acks == 0) {
    fit_to_version(resp, version);
    co_return resp;
  }
  // Every append is in order now; only durability is awaited.
  if (order != nullptr) order->release();
  co_await latch->wait();
  // The lease may have lapsed while the appends ran. They are durable in the WAL, so if the
  // same lease is renewed (a slow renewal, an etcd leader election) they are acknowledged then:
  // the request waits for that, up to its timeout (at most 30 s). Answering
  // NOT_LEADER_OR_FOLLOWER ("not stored") while a later request of the same producer,
  // pipelined behind this one, is acknowledged after the renewal would contradict the log.
  // Under a replaced lease (it expired in the store, so another broker may be taking the
  // partitions over) or when the wait ends, they are not acknowledged: the client retries and
  // an idempotent producer's retry is deduplicated.
  int64_t ack_token = b.ack_token();
  if (ack_token == 0 && gate_token != 0) {
    bool stored = false;
    for (const auto& s : slots) stored = stored || s.resp->error_code == 0;
    if (stored) {
      const int64_t wait_ms = std::clamp<int64_t>(req.timeout_ms, 0, 30000);
      ack_token = co_await wait_for_ack_gate(b, clock::mono_ms() + wait_ms);
    }
  }
  const bool may_ack = ack_token != 0 && ack_token == gate_token;
  for (auto& s : slots) {
    if (s.pending && !s.result->ok() && s.resp->error_code == 0) {
      s.resp->error_code = static_cast<int16_t>(storage_error_code(s.result->error()));
      s.resp->error_message = s.result->error().message;
      s.resp->base_offset = -1;
    }
    if (!may_ack && s.resp->error_code == 0) {
      s.resp->error_code = static_cast<int16_t>(ErrorCode::kNotLeaderOrFollower);
      s.resp->error_message = kNoLeaseMessage;
      s.resp->base_offset = -1;
    }
  }
  add_leader_hints(b, resp, version);
  fit_to_version(resp, version);
  co_return resp;
}

}  // namespace shale::broker
