// Fetch: reads committed batches of several partitions, long-polling (max_wait_ms) until
// min_bytes are available, with KIP-227 incremental fetch sessions and topic ids (v13+).
// Never blocks the shard: reads complete through callbacks and the wait is a timer that an
// append to any fetched partition cancels (FetchWaiter).
#include <chrono>

#include <asio/redirect_error.hpp>
#include <asio/this_coro.hpp>

#include "broker/handlers.h"
#include "broker/ownership.h"
#include "broker/topic_metrics.h"

namespace shale::broker {

using protocol::ErrorCode;
using protocol::FetchRequest;
using protocol::FetchResponse;

namespace {

struct Want {
  std::string topic;
  protocol::Uuid topic_id;
  int32_t partition = 0;
  int64_t offset = 0;
  int32_t max_bytes = 0;
  ErrorCode error = ErrorCode::kNone;  // known before reading (unknown topic id, ...)
  SessionPartition* session_state = nullptr;
};

struct Got {
  ErrorCode error = ErrorCode::kNone;
  int64_t hw = -1;
  int64_t log_start = -1;
  int64_t lso = -1;
  std::vector<AbortedTxn> aborted;  // read_committed only
  std::optional<Buffer> records;
  size_t bytes = 0;
};

Buffer concat(const std::vector<storage::StreamRecord>& recs, size_t n) {
  if (n == 1) return recs[0].payload;
  size_t total = 0;
  for (size_t i = 0; i < n; ++i) total += recs[i].payload.size();
  BufferBuilder out(total);
  for (size_t i = 0; i < n; ++i) out.append(recs[i].payload.data(), recs[i].payload.size());
  return std::move(out).freeze();
}

// Reads one partition within `budget` bytes (at least one batch when `first` is true).
// read_committed (`committed`) reads only up to the last stable offset and lists the aborted
// transactions of what it returns.
asio::awaitable<Got> read_partition(Broker& b, const Want& w, size_t budget, bool first,
                                    bool committed) {
  Got g;
  if (w.error != ErrorCode::kNone) {
    g.error = w.error;
    co_return g;
  }
  auto part = b.topics().partition(w.topic, w.partition);
  if (!part || part->deleted()) {
    g.error = ErrorCode::kUnknownTopicOrPartition;
    co_return g;
  }
  if (!part->serving()) {
    g.error = ErrorCode::kNotLeaderOrFollower;
    co_return g;
  }
  g.lso = part->last_stable_offset();
  g.hw = part->high_watermark();
  g.log_start = part->log_start_offset();
  if (w.offset < g.log_start || w.offset > g.hw) {
    g.error = ErrorCode::kOffsetOutOfRange;
    co_return g;
  }
  const int64_t upper = committed ? std::min(g.lso, g.hw) : g.hw;
  if (w.offset >= upper || (budget == 0 && !first) || w.max_bytes <= 0) {
    g.records = Buffer();
    co_return g;
  }
  const size_t limit = std::min(budget, static_cast<size_t>(w.max_bytes));
  auto r = co_await await_callback<Result<std::vector<storage::StreamRecord>>>(
      [&](std::function<void(Result<std::vector<storage::StreamRecord>>)> done) {
        part->read(w.offset, limit, std::move(done));
      });
  if (!r.ok()) {
    g.error = r.error().code == Errc::kOutOfRange ? ErrorCode::kOffsetOutOfRange
                                                  : storage_error_code(r.error());
    co_return g;
  }
  // Keep whole batches within the budget; the first batch of a response is always kept
  // (KIP-74) so that a batch larger than the limits still makes progress.
  size_t n = 0;
  size_t bytes = 0;
  for (const auto& rec : *r) {
    if (rec.end_offset() <= w.offset) continue;
    if (rec.base_offset >= upper) break;
    if (bytes + rec.payload.size() > limit && !(first && n == 0)) break;
    bytes += rec.payload.size();
    ++n;
  }
  // Skip records wholly before the fetch offset (reads start at the batch holding it).
  std::vector<storage::StreamRecord> kept;
  for (const auto& rec : *r) {
    if (rec.end_offset() <= w.offset) continue;
    if (kept.size() == n) break;
    kept.push_back(rec);
  }
  g.records = kept.empty() ? Buffer() : concat(kept, kept.size());
  g.bytes = bytes;
  if (committed && !kept.empty())
    g.aborted = part->aborted_txns(w.offset, kept.back().end_offset());
  co_return g;
}

FetchResponse top_level_error(ErrorCode e) {
  FetchResponse r;
  r.error_code = static_cast<int16_t>(e);
  return r;
}

}  // namespace

asio::awaitable<FetchResponse> handle_fetch(Broker& b, int16_t version, FetchRequest req) {
  const bool use_ids = version >= 13;
  auto& cache = b.fetch_sessions();
  std::shared_ptr<FetchSession> session;
  bool incremental = false;
  if (version >= 7) {
    if (req.session_id == 0) {
      if (req.session_epoch == 0) {
        session = cache.create();
      } else if (req.session_epoch != -1) {
        co_return top_level_error(ErrorCode::kFetchSessionIdNotFound);
      }
    } else if (req.session_epoch == -1) {
      cache.remove(req.session_id);
    } else if (req.session_epoch == 0) {
      cache.remove(req.session_id);
      session = cache.create();
    } else {
      session = cache.find(req.session_id);
      if (!session) co_return top_level_error(ErrorCode::kFetchSessionIdNotFound);
      incremental = true;
    }
    if (incremental) {
      // Checked and advanced together, so a concurrent request with the same epoch is refused.
      // (A new session expects epoch 1 next, which it starts with.)
      std::lock_guard lock(session->mu);
      if (session->next_epoch != req.session_epoch) {
        co_return top_level_error(ErrorCode::kInvalidFetchSessionEpoch);
      }
      session->next_epoch = session->next_epoch == INT32_MAX ? 1 : session->next_epoch + 1;
    }
  }

  std::vector<Want> wants;
  std::vector<Want> errors;  // partitions of unknown topics: answered, never stored in a session
  for (auto& ft : req.topics) {
    TopicPtr t = use_ids ? b.topics().find(ft.topic_id) : b.topics().find(ft.topic);
    for (auto& fp : ft.partitions) {
      Want w;
      w.topic = t ? t->name : ft.topic;
      w.topic_id = t ? t->id : ft.topic_id;
      w.partition = fp.partition;
      w.offset = fp.fetch_offset;
      w.max_bytes = fp.partition_max_bytes;
      if (!t) {
        w.error = use_ids ? ErrorCode::kUnknownTopicId : ErrorCode::kUnknownTopicOrPartition;
        errors.push_back(w);
        continue;
      }
      if (session) {
        auto& sp = session->partitions[{w.topic, w.partition}];
        sp.topic_id = w.topic_id;
        sp.fetch_offset = w.offset;
        sp.max_bytes = w.max_bytes;
      } else {
        wants.push_back(w);
      }
    }
  }
  if (session) {
    if (incremental) {
      for (auto& ft : req.forgotten_topics_data) {
        std::string name = ft.topic;
        if (use_ids) {
          TopicPtr t = b.topics().find(ft.topic_id);
          if (!t) continue;
          name = t->name;
        }
        for (int32_t p : ft.partitions) session->partitions.erase({name, p});
      }
    }
    for (auto& [key, sp] : session->partitions) {
      Want w;
      w.topic = key.first;
      w.topic_id = sp.topic_id;
      w.partition = key.second;
      w.offset = sp.fetch_offset;
      w.max_bytes = sp.max_bytes;
      w.session_state = &sp;
      wants.push_back(w);
    }
  }

  const bool read_committed = version >= 4 && req.isolation_level == 1;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(std::max(0, req.max_wait_ms));
  const size_t max_bytes = req.max_bytes > 0 ? static_cast<size_t>(req.max_bytes) : 0;
  auto ex = co_await asio::this_coro::executor;
  std::vector<Got> got;
  while (true) {
    auto waiter = std::make_shared<FetchWaiter>(ex);
    for (const auto& w : wants) {
      if (auto p = b.topics().partition(w.topic, w.partition)) p->add_waiter(waiter);
    }
    got.clear();
    size_t total = 0;
    bool any_error = !errors.empty();
    for (const auto& w : wants) {
      Got g = co_await read_partition(b, w, max_bytes > total ? max_bytes - total : 0, total == 0,
                                      read_committed);
      total += g.bytes;
      any_error = any_error || g.error != ErrorCode::kNone;
      got.push_back(std::move(g));
    }
    const bool enough = total >= static_cast<size_t>(std::max(0, req.min_bytes)) && total > 0;
    if (enough || any_error || req.min_bytes <= 0 || std::chrono::steady_clock::now() >= deadline) {
      break;
    }
    if (!waiter->notified.load()) {
      waiter->timer.expires_at(deadline);
      std::error_code ec;
      co_await waiter->timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
  }

  FetchResponse resp;
  resp.session_id = session ? session->id : 0;
  const std::string* out_topic = nullptr;
  TopicCounters* out_counters = nullptr;
  auto add = [&](const Want& w, const Got& g) {
    if (resp.responses.empty() || resp.responses.back().topic != w.topic ||
        resp.responses.back().topic_id != w.topic_id) {
      auto& tr = resp.responses.emplace_back();
      tr.topic = use_ids ? std::string() : w.topic;
      tr.topic_id = w.topic_id;
    }
    auto& pd = resp.responses.back().partitions.emplace_back();
    pd.partition_index = w.partition;
    pd.error_code = static_cast<int16_t>(g.error);
    pd.high_watermark = g.hw;
    pd.last_stable_offset = g.lso;
    if (read_committed) {
      // Kafka sends null when there is nothing to report.
      if (g.aborted.empty()) {
        pd.aborted_transactions = std::nullopt;
      } else {
        pd.aborted_transactions.emplace();
        for (const auto& a : g.aborted) {
          auto& at = pd.aborted_transactions->emplace_back();
          at.producer_id = a.producer_id;
          at.first_offset = a.first_offset;
        }
      }
    }
    if (version >= 5) pd.log_start_offset = g.log_start;
    pd.records = g.records ? *g.records : Buffer();
    if (g.records && !g.records->empty()) {
      // Partitions of a topic are adjacent: look its counters up once per run of them.
      if (out_topic == nullptr || *out_topic != w.topic) {
        out_topic = &w.topic;
        out_counters = &TopicMetrics::instance().for_topic(w.topic);
      }
      out_counters->bytes_out.inc(g.records->size());
      TopicMetrics::instance().all().bytes_out.inc(g.records->size());
    }
  };
  for (size_t i = 0; i < wants.size(); ++i) {
    const Want& w = wants[i];
    const Got& g = got[i];
    if (w.session_state != nullptr) {
      SessionPartition& sp = *w.session_state;
      const bool changed = g.bytes > 0 || g.error != ErrorCode::kNone ||
                           sp.last_high_watermark != g.hw || sp.last_log_start != g.log_start;
      sp.last_high_watermark = g.hw;
      sp.last_log_start = g.log_start;
      if (incremental && !changed) continue;
    }
    add(w, g);
  }
  for (const auto& w : errors) add(w, Got{w.error, -1, -1, -1, {}, Buffer(), 0});
  // KIP-951 (cluster mode): NOT_LEADER_OR_FOLLOWER names the current leader (v12+) and its
  // endpoint (v16+), so the consumer redirects without a metadata round trip.
  if (const Ownership* o = b.ownership(); o != nullptr && version >= 12) {
    const std::string listener =
        b.config().endpoints.empty() ? std::string() : b.config().endpoints.front().listener;
    for (auto& tr : resp.responses) {
      TopicPtr t;
      for (auto& pd : tr.partitions) {
        if (pd.error_code != static_cast<int16_t>(ErrorCode::kNotLeaderOrFollower)) continue;
        if (!t) t = use_ids ? b.topics().find(tr.topic_id) : b.topics().find(tr.topic);
        if (!t) break;
        const auto h = o->hint(t->id, pd.partition_index, b.node_id(), listener);
        if (h.leader.id < 0) continue;
        pd.current_leader.leader_id = h.leader.id;
        pd.current_leader.leader_epoch = h.leader.epoch;
        if (h.endpoint && version >= 16) add_node_endpoint(resp.node_endpoints, *h.endpoint);
      }
    }
  }
  co_return resp;
}

}  // namespace shale::broker
