#include "broker/partition.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <future>
#include <iterator>

#include <spdlog/spdlog.h>
#include <asio/post.hpp>

namespace shale::broker {

using protocol::ErrorCode;

void FetchWaiter::wake() {
  if (notified.exchange(true)) return;
  asio::post(timer.get_executor(), [self = shared_from_this()] { self->timer.cancel(); });
}

// docs/decisions.md ("Errors for a degraded storage engine"): back-pressure while uploads are
// healthy is REQUEST_TIMED_OUT; a refusal because uploads are failing (the engine's kNoSpace:
// object store full, unreachable, throttling or refusing credentials) and a failed WAL are
// KAFKA_STORAGE_ERROR, as Kafka answers for an offline log dir. All are retriable for clients.
ErrorCode storage_error_code(const Error& e) {
  switch (e.code) {
    case Errc::kUnavailable:
    case Errc::kTimeout:
      return ErrorCode::kRequestTimedOut;
    case Errc::kNoSpace:
      return ErrorCode::kKafkaStorageError;
    case Errc::kFenced:
    case Errc::kShutdown:
      return ErrorCode::kNotLeaderOrFollower;
    case Errc::kIoError:
      return ErrorCode::kKafkaStorageError;
    case Errc::kOutOfRange:
      return ErrorCode::kOffsetOutOfRange;
    case Errc::kNotFound:
      return ErrorCode::kUnknownTopicOrPartition;
    default:
      return ErrorCode::kUnknownServerError;
  }
}

namespace {

int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

namespace {

constexpr const char* kLeaderEpochsKey = "broker.leader.epochs";

// "epoch:start,epoch:start,..." in increasing order.
std::vector<std::pair<int32_t, int64_t>> decode_epochs(const std::string& s) {
  std::vector<std::pair<int32_t, int64_t>> out;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t comma = s.find(',', pos);
    if (comma == std::string::npos) comma = s.size();
    const std::string item = s.substr(pos, comma - pos);
    const size_t colon = item.find(':');
    if (colon != std::string::npos) {
      int32_t e = 0;
      int64_t off = 0;
      auto r1 = std::from_chars(item.data(), item.data() + colon, e);
      auto r2 = std::from_chars(item.data() + colon + 1, item.data() + item.size(), off);
      if (r1.ec == std::errc() && r2.ec == std::errc() && (out.empty() || e > out.back().first))
        out.emplace_back(e, off);
    }
    pos = comma + 1;
  }
  return out;
}

std::string encode_epochs(const std::vector<std::pair<int32_t, int64_t>>& v) {
  std::string out;
  for (const auto& [e, off] : v) {
    if (!out.empty()) out += ',';
    out += std::to_string(e) + ":" + std::to_string(off);
  }
  return out;
}

}  // namespace

Status Partition::open(storage::Engine& engine, bool use_snapshot, int32_t leader_epoch) {
  auto s = engine.open_stream(stream_id_);
  if (!s.ok()) return std::move(s).error();
  stream_ = *s;
  leader_epoch_ = leader_epoch;
  {
    auto m = stream_->get_meta(kLeaderEpochsKey);
    if (!m.ok()) return std::move(m).error();
    if (m->has_value()) epochs_ = decode_epochs(**m);
    if (epochs_.empty()) epochs_.emplace_back(0, stream_->start_offset());
    if (leader_epoch > epochs_.back().first) {
      epochs_.emplace_back(leader_epoch, stream_->end_offset());
      SHALE_TRY(stream_->put_meta(kLeaderEpochsKey, encode_epochs(epochs_)));
    } else if (leader_epoch < epochs_.back().first) {
      // Never serve under an epoch older than one already recorded: clients would see the
      // leader epoch go back.
      leader_epoch_ = epochs_.back().first;
    }
  }
  int64_t from = stream_->start_offset();
  if (use_snapshot) {
    auto m = stream_->get_meta(kPartitionSnapshotKey);
    if (!m.ok()) {
      spdlog::warn("partition {}-{}: cannot read its snapshot ({}); replaying the whole log",
                   topic_, index_, m.error().to_string());
    } else if (m->has_value()) {
      auto snap = PartitionSnapshot::decode(**m);
      if (!snap.ok()) {
        spdlog::warn("partition {}-{}: {}; replaying the whole log", topic_, index_,
                     snap.error().message);
      } else if (snap->covered_end > stream_->end_offset()) {
        // Cannot happen while snapshots cover durable offsets only; never trust one that is
        // ahead of the log.
        spdlog::warn(
            "partition {}-{}: snapshot covers offset {} beyond the log end {}; replaying "
            "the whole log",
            topic_, index_, snap->covered_end, stream_->end_offset());
      } else {
        std::lock_guard lock(mu_);
        restore(*snap);
        loaded_snapshot_offset_ = snap->covered_end;
        from = std::max(from, snap->covered_end);
      }
    }
  }
  snapshot_time_ms_.store(steady_ms());
  SHALE_TRY(replay(from));
  serving_.store(true, std::memory_order_release);
  return ok_status();
}

std::pair<int32_t, int64_t> Partition::end_offset_for(int32_t epoch) const {
  if (epochs_.empty() || epoch >= epochs_.back().first) return {leader_epoch_, high_watermark()};
  if (epoch < epochs_.front().first) return {-1, -1};
  for (size_t i = 0; i + 1 < epochs_.size(); ++i) {
    if (epochs_[i + 1].first > epoch) return {epochs_[i].first, epochs_[i + 1].second};
  }
  return {leader_epoch_, high_watermark()};
}

void Partition::stop_serving() {
  {
    std::lock_guard lock(mu_);
    serving_.store(false, std::memory_order_release);
  }
  notify_waiters();
}

Status Partition::close() {
  stop_serving();  // under mu_: no append is issued after this
  if (stream_ == nullptr) return ok_status();
  // The snapshot covers the durable prefix; appends still in flight are replayed by the next
  // owner from the stream itself.
  if (auto w = write_snapshot(); !w.ok()) {
    spdlog::warn("partition {}-{}: snapshot before close failed ({}); the next owner replays",
                 topic_, index_, w.error().to_string());
  }
  std::promise<Status> p;
  auto f = p.get_future();
  stream_->close([&p](Status st) { p.set_value(std::move(st)); });
  return f.get();
}

void Partition::restore(const PartitionSnapshot& s) {
  time_index_ = s.time_index;
  max_ts_ = time_index_.empty() ? -1 : time_index_.back().max_timestamp;
  max_ts_offset_ = time_index_.empty() ? -1 : time_index_.back().max_timestamp_offset;
  sizes_.assign(s.sizes.begin(), s.sizes.end());
  sizes_cumulative_before_ = s.sizes_cumulative_before;
  for (const auto& p : s.producers) {
    ProducerEntry e;
    e.epoch = p.epoch;
    e.batches.assign(p.batches.begin(), p.batches.end());
    producers_.restore(p.producer_id, std::move(e));
  }
  open_txns_.clear();
  for (const auto& [pid, first] : s.open_txns) open_txns_[pid] = first;
  aborted_.clear();
  for (const auto& a : s.aborted_txns)
    aborted_.push_back({a.producer_id, a.first_offset, a.last_offset});
}

void Partition::apply_marker(int64_t producer_id, int16_t epoch, bool commit, int64_t offset) {
  producers_.bump_epoch(producer_id, epoch);
  auto it = open_txns_.find(producer_id);
  if (it == open_txns_.end()) return;
  if (!commit) aborted_.push_back({producer_id, it->second, offset});
  recently_closed_.push_back({producer_id, it->second, offset});
  open_txns_.erase(it);
  const int64_t durable = stream_->end_offset();
  while (!recently_closed_.empty() && recently_closed_.front().last_offset < durable) {
    recently_closed_.pop_front();
  }
  const int64_t start = stream_->start_offset();
  while (!aborted_.empty() && aborted_.front().last_offset < start) aborted_.pop_front();
}

namespace {

// The control record of a marker: key = (version 0, type 0 abort / 1 commit), value =
// (version 0, coordinator epoch), all big-endian (Kafka's EndTransactionMarker).
std::optional<bool> marker_is_commit(const protocol::RecordBatch& batch) {
  std::optional<bool> out;
  (void)batch.for_each_record([&](const protocol::RecordView& v) {
    if (out || !v.key || v.key->size() < 4) return;
    const auto* k = reinterpret_cast<const uint8_t*>(v.key->data());
    const int type = (k[2] << 8) | k[3];
    if (type == 0 || type == 1) out = type == 1;
  });
  return out;
}

}  // namespace

// Reads the stream from `offset` to its end once, feeding every batch header to the producer
// state and the indexes. Batches are stored exactly as appended, so this reproduces the state
// the broker had when it acknowledged them.
Status Partition::replay(int64_t offset) {
  const int64_t end = stream_->end_offset();
  std::lock_guard lock(mu_);
  while (offset < end) {
    std::promise<Result<std::vector<storage::StreamRecord>>> p;
    auto f = p.get_future();
    stream_->read(
        offset, end, 8 * storage::kMiB,
        [&p](Result<std::vector<storage::StreamRecord>> r) { p.set_value(std::move(r)); });
    auto r = f.get();
    if (!r.ok()) return std::move(r).error();
    if (r->empty()) break;
    for (const auto& rec : *r) {
      if (rec.end_offset() <= offset) continue;
      protocol::BatchReader reader(rec.payload, false, false);
      while (true) {
        auto b = reader.next();
        if (!b.ok()) return std::move(b).error();
        if (!b->has_value()) break;
        const protocol::RecordBatch& batch = **b;
        const auto& h = batch.header();
        int64_t max_ts = h.max_timestamp;
        int64_t max_ts_offset = h.base_offset;
        if (max_ts > max_ts_ && h.timestamp_type() == protocol::TimestampType::kCreateTime) {
          // Only a new maximum needs the exact record; find it.
          int64_t best = -1;
          (void)batch.for_each_record([&](const protocol::RecordView& v) {
            int64_t ts = h.base_timestamp + v.timestamp_delta;
            if (ts > best) {
              best = ts;
              max_ts_offset = h.base_offset + v.offset_delta;
            }
          });
        }
        index_batch(h.base_offset, h.last_offset() + 1, static_cast<int64_t>(batch.bytes().size()),
                    max_ts, max_ts_offset);
        if (h.is_control()) {
          if (auto commit = marker_is_commit(batch); commit && h.is_transactional()) {
            apply_marker(h.producer_id, h.producer_epoch, *commit, h.base_offset);
          }
        } else if (h.producer_id >= 0) {
          if (h.is_transactional()) open_txns_.try_emplace(h.producer_id, h.base_offset);
          ProducerBatch pb{
              h.base_sequence,
              static_cast<int32_t>(static_cast<int64_t>(h.base_sequence) + h.last_offset_delta),
              h.base_offset, h.last_offset(), max_ts};
          producers_.record(h.producer_id, h.producer_epoch, pb);
        }
      }
      offset = rec.end_offset();
    }
  }
  return ok_status();
}

void Partition::index_batch(int64_t base, int64_t end, int64_t bytes, int64_t max_ts,
                            int64_t max_ts_offset) {
  if (max_ts > max_ts_) {
    max_ts_ = max_ts;
    max_ts_offset_ = max_ts_offset;
    time_index_.push_back({max_ts, base, max_ts_offset});
  }
  // Entries wholly below the log start (trimmed) are dropped here, where mu_ is held anyway.
  const int64_t start = stream_->start_offset();
  while (!sizes_.empty() && sizes_.front().end_offset <= start) {
    sizes_cumulative_before_ = sizes_.front().cumulative_bytes;
    sizes_.pop_front();
  }
  const int64_t cum = (sizes_.empty() ? sizes_cumulative_before_ : sizes_.back().cumulative_bytes);
  sizes_.push_back({base, end, cum + bytes});
  batches_since_snapshot_.fetch_add(1);
}

namespace {

// Joins the callbacks of the appends issued for one partition of one request.
struct AppendTracker {
  std::mutex m;
  int pending = 0;
  bool sealed = false;
  bool finished = false;
  std::optional<Error> error;
  std::function<void(Status)> done;

  // Called with m held; returns the callback to run (outside the lock) if everything is in.
  std::function<void()> maybe_finish() {
    if (!sealed || pending > 0 || finished) return {};
    finished = true;
    Status st = error ? Status(*error) : ok_status();
    return [d = std::move(done), st = std::move(st)]() mutable { d(std::move(st)); };
  }
};

}  // namespace

AppendStart Partition::append(std::vector<PreparedBatch>& batches, int64_t log_append_time,
                              std::function<void(Status)> done, const TxnVerifier& verify) {
  AppendStart out;
  out.log_append_time = log_append_time;
  auto tracker = std::make_shared<AppendTracker>();
  tracker->done = std::move(done);
  {
    std::lock_guard lock(mu_);
    if (!serving_.load(std::memory_order_relaxed)) {
      out.error = ErrorCode::kNotLeaderOrFollower;
      out.message = "this broker no longer leads the partition";
      return out;
    }
    for (auto& pb : batches) {
      const protocol::BatchHeader& h = pb.batch.header();
      const int32_t last_seq =
          static_cast<int32_t>(static_cast<int64_t>(h.base_sequence) + h.last_offset_delta);
      ProducerCheck chk =
          producers_.check(h.producer_id, h.producer_epoch, h.base_sequence, last_seq);
      if (chk.error != ErrorCode::kNone) {
        out.error = chk.error;
        break;
      }
      if (chk.duplicate) {
        if (out.base_offset < 0) out.base_offset = chk.duplicate->first_offset;
        continue;
      }
      if (h.is_transactional()) {
        // KIP-890 part 1: the coordinator must know this partition is in the transaction,
        // else a late batch could land after the transaction's marker.
        const ErrorCode v =
            verify ? verify(h.producer_id, h.producer_epoch) : ErrorCode::kInvalidTxnState;
        if (v != ErrorCode::kNone) {
          out.error = v;
          break;
        }
      }
      const int64_t base = stream_->next_offset();
      protocol::RecordBatch::Rewrite rw;
      rw.base_offset = base;
      rw.partition_leader_epoch = leader_epoch();
      if (log_append_time >= 0) rw.log_append_time = log_append_time;
      // The request frame is ours alone (the server read it into a fresh buffer and nothing
      // else references it), so the 61-byte header is rewritten in place: no record copies.
      auto* header = const_cast<uint8_t*>(pb.batch.bytes().data());
      pb.batch.rewrite_header(rw, header);
      const auto count = static_cast<uint32_t>(h.last_offset_delta + 1);
      {
        std::lock_guard tl(tracker->m);
        tracker->pending++;
      }
      stream_->append(base, count, pb.batch.bytes(),
                      [this, tracker](Result<storage::AppendResult> r) {
                        std::function<void()> fin;
                        {
                          std::lock_guard tl(tracker->m);
                          tracker->pending--;
                          if (!r.ok() && !tracker->error) tracker->error = r.error();
                          fin = tracker->maybe_finish();
                        }
                        if (r.ok()) notify_waiters();
                        if (fin) fin();
                      });
      bool failed_now = false;
      {
        std::lock_guard tl(tracker->m);
        failed_now = tracker->error.has_value();
      }
      if (failed_now) {
        // Refused at once (back-pressure): nothing was stored, so no state changes.
        std::lock_guard tl(tracker->m);
        out.error = storage_error_code(*tracker->error);
        out.message = tracker->error->message;
        break;
      }
      if (out.base_offset < 0) out.base_offset = base;
      const int64_t ts = log_append_time >= 0 ? log_append_time : pb.max_timestamp;
      const int64_t ts_offset = log_append_time >= 0 ? base : base + pb.max_timestamp_delta;
      index_batch(base, base + h.last_offset_delta + 1,
                  static_cast<int64_t>(pb.batch.bytes().size()), ts, ts_offset);
      producers_.record(
          h.producer_id, h.producer_epoch,
          ProducerBatch{h.base_sequence, last_seq, base, base + h.last_offset_delta, ts});
      if (h.is_transactional()) open_txns_.try_emplace(h.producer_id, base);
    }
  }
  std::function<void()> fin;
  {
    std::lock_guard tl(tracker->m);
    tracker->sealed = true;
    out.pending = tracker->pending > 0 || tracker->finished;
    if (out.error != ErrorCode::kNone && tracker->pending == 0) {
      // Nothing in flight: report the error directly, no callback.
      tracker->finished = true;
      out.pending = false;
    } else if (out.pending) {
      fin = tracker->maybe_finish();
    } else {
      tracker->finished = true;  // only duplicates: nothing to wait for
    }
  }
  if (fin) fin();
  return out;
}

void Partition::append_marker(int64_t producer_id, int16_t epoch, bool commit,
                              int32_t coordinator_epoch, std::function<void(Status)> done) {
  std::unique_lock lock(mu_);
  if (!open_txns_.contains(producer_id)) {
    lock.unlock();
    done(ok_status());
    return;
  }
  const int64_t base = stream_->next_offset();
  uint8_t key[4] = {0, 0, 0, static_cast<uint8_t>(commit ? 1 : 0)};
  uint8_t value[6] = {0,
                      0,
                      static_cast<uint8_t>(static_cast<uint32_t>(coordinator_epoch) >> 24),
                      static_cast<uint8_t>(static_cast<uint32_t>(coordinator_epoch) >> 16),
                      static_cast<uint8_t>(static_cast<uint32_t>(coordinator_epoch) >> 8),
                      static_cast<uint8_t>(static_cast<uint32_t>(coordinator_epoch))};
  const int64_t ts = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
  protocol::RecordBatchBuilder bb;
  bb.base_offset(base)
      .partition_leader_epoch(leader_epoch())
      .producer(producer_id, epoch, -1)
      .transactional(true)
      .control(true)
      .add(ts, std::string_view(reinterpret_cast<const char*>(key), sizeof(key)),
           std::string_view(reinterpret_cast<const char*>(value), sizeof(value)));
  Buffer bytes = bb.build();
  // 0: in flight; 1: issued (state applied below); 2: refused before append() returned.
  auto stage = std::make_shared<std::atomic<int>>(0);
  auto cb = std::make_shared<std::function<void(Status)>>(std::move(done));
  const int64_t first = open_txns_[producer_id];
  stream_->append(
      base, 1, bytes,
      [this, stage, cb, producer_id, first, commit](Result<storage::AppendResult> r) {
        if (r.ok()) {
          notify_waiters();
          (*cb)(ok_status());
          return;
        }
        int expected = 0;
        if (!stage->compare_exchange_strong(expected, 2)) {
          // Failed after the transaction was closed in memory: reopen it, so
          // that the coordinator's retry writes the marker again.
          std::lock_guard relock(mu_);
          open_txns_.try_emplace(producer_id, first);
          if (!commit && !aborted_.empty() && aborted_.back().producer_id == producer_id) {
            aborted_.pop_back();
          }
        }
        (*cb)(r.error());
      });
  int expected = 0;
  if (!stage->compare_exchange_strong(expected, 1)) return;  // refused at once: state unchanged
  index_batch(base, base + 1, static_cast<int64_t>(bytes.size()), ts, base);
  coordinator_epochs_[producer_id] = coordinator_epoch;
  apply_marker(producer_id, epoch, commit, base);
}

int64_t Partition::last_stable_offset() const {
  std::lock_guard lock(mu_);
  int64_t lso = stream_->end_offset();
  for (const auto& [pid, first] : open_txns_) lso = std::min(lso, first);
  // Retention may have removed the start of an open transaction: never below the log start.
  return std::max(lso, stream_->start_offset());
}

std::vector<AbortedTxn> Partition::aborted_txns(int64_t from, int64_t upper) const {
  std::lock_guard lock(mu_);
  std::vector<AbortedTxn> out;
  auto it = std::lower_bound(aborted_.begin(), aborted_.end(), from,
                             [](const AbortedTxn& a, int64_t o) { return a.last_offset < o; });
  for (; it != aborted_.end(); ++it) {
    if (it->first_offset < upper) out.push_back(*it);
  }
  return out;
}

bool Partition::has_open_txn(int64_t producer_id) const {
  std::lock_guard lock(mu_);
  return open_txns_.contains(producer_id);
}

std::vector<ProducerView> Partition::producers() const {
  std::lock_guard lock(mu_);
  std::vector<ProducerView> out;
  for (const auto& [id, e] : producers_.entries()) {
    ProducerView v;
    v.producer_id = id;
    v.epoch = e.epoch;
    if (!e.batches.empty()) {
      v.last_sequence = e.batches.back().last_seq;
      v.last_timestamp = e.batches.back().timestamp;
    }
    if (auto it = open_txns_.find(id); it != open_txns_.end()) {
      v.current_txn_start_offset = it->second;
    }
    if (auto it = coordinator_epochs_.find(id); it != coordinator_epochs_.end()) {
      v.coordinator_epoch = it->second;
    }
    out.push_back(v);
  }
  std::sort(out.begin(), out.end(), [](const ProducerView& a, const ProducerView& b) {
    return a.producer_id < b.producer_id;
  });
  return out;
}

void Partition::read(int64_t offset, size_t max_bytes, storage::ReadCallback done) {
  if (!serving()) {
    done(Error::make(Errc::kFenced, "this broker no longer serves the partition"));
    return;
  }
  stream_->read(offset, stream_->end_offset(), max_bytes, std::move(done));
}

void Partition::add_waiter(const std::shared_ptr<FetchWaiter>& w) {
  std::lock_guard lock(waiters_mu_);
  waiters_.push_back(w);
}

void Partition::notify_waiters() {
  std::vector<std::weak_ptr<FetchWaiter>> ws;
  {
    std::lock_guard lock(waiters_mu_);
    ws.swap(waiters_);
  }
  for (auto& w : ws) {
    if (auto s = w.lock()) s->wake();
  }
}

std::optional<int64_t> Partition::find_batch_by_timestamp(int64_t ts) const {
  std::lock_guard lock(mu_);
  auto it =
      std::lower_bound(time_index_.begin(), time_index_.end(), ts,
                       [](const TimeIndexEntry& e, int64_t t) { return e.max_timestamp < t; });
  if (it == time_index_.end()) return std::nullopt;
  return it->base_offset;
}

std::pair<int64_t, int64_t> Partition::max_timestamp() const {
  std::lock_guard lock(mu_);
  return {max_ts_, max_ts_offset_};
}

std::optional<int64_t> Partition::retention_offset(int64_t cutoff_ms) const {
  std::lock_guard lock(mu_);
  if (time_index_.empty() || time_index_.front().max_timestamp >= cutoff_ms) return std::nullopt;
  auto it =
      std::lower_bound(time_index_.begin(), time_index_.end(), cutoff_ms,
                       [](const TimeIndexEntry& e, int64_t t) { return e.max_timestamp < t; });
  // Everything is older: Kafka would roll and delete the whole log, leaving it empty.
  if (it == time_index_.end()) return stream_->end_offset();
  return it->base_offset;
}

int64_t Partition::size_bytes() const {
  std::lock_guard lock(mu_);
  const int64_t start = stream_->start_offset();
  auto it = std::upper_bound(sizes_.begin(), sizes_.end(), start,
                             [](int64_t o, const SizeIndexEntry& e) { return o < e.end_offset; });
  if (it == sizes_.end()) return 0;
  const int64_t before =
      it == sizes_.begin() ? sizes_cumulative_before_ : std::prev(it)->cumulative_bytes;
  return sizes_.back().cumulative_bytes - before;
}

std::optional<int64_t> Partition::retention_bytes_offset(int64_t limit_bytes) const {
  std::lock_guard lock(mu_);
  const int64_t start = stream_->start_offset();
  auto first =
      std::upper_bound(sizes_.begin(), sizes_.end(), start,
                       [](int64_t o, const SizeIndexEntry& e) { return o < e.end_offset; });
  if (first == sizes_.end()) return std::nullopt;
  const int64_t total = sizes_.back().cumulative_bytes;
  const int64_t before =
      first == sizes_.begin() ? sizes_cumulative_before_ : std::prev(first)->cumulative_bytes;
  if (total - before <= limit_bytes) return std::nullopt;
  // Keep the batches from j on, for the first j with (bytes from j to the end) <= limit, that
  // is cumulative_bytes[j - 1] >= total - limit.
  auto k =
      std::lower_bound(first, sizes_.end(), total - limit_bytes,
                       [](const SizeIndexEntry& e, int64_t t) { return e.cumulative_bytes < t; });
  auto j = std::next(k);
  const int64_t to = j == sizes_.end() ? sizes_.back().end_offset : j->base_offset;
  // Appends still in flight are counted but cannot be trimmed yet.
  return std::min(to, stream_->end_offset());
}

PartitionSnapshot Partition::snapshot(size_t max_entries) const {
  PartitionSnapshot s;
  std::lock_guard lock(mu_);
  // Appends are issued under mu_, so none starts meanwhile; those in flight lie at or above the
  // durable end and are left out (after a crash they may not exist).
  const int64_t covered = stream_->end_offset();
  s.covered_end = covered;
  for (const auto& e : time_index_) {
    if (e.base_offset >= covered) break;
    s.time_index.push_back(e);
  }
  s.sizes_cumulative_before = sizes_cumulative_before_;
  for (const auto& e : sizes_) {
    if (e.end_offset > covered) break;
    s.sizes.push_back(e);
  }
  for (const auto& [id, entry] : producers_.entries()) {
    ProducerSnapshot p{id, entry.epoch, {}};
    for (const auto& b : entry.batches) {
      if (b.first_offset < covered) p.batches.push_back(b);
    }
    s.producers.push_back(std::move(p));
  }
  std::sort(s.producers.begin(), s.producers.end(),
            [](const ProducerSnapshot& a, const ProducerSnapshot& b) {
              return a.producer_id < b.producer_id;
            });
  std::map<int64_t, int64_t> open;
  for (const auto& [pid, first] : open_txns_) {
    if (first < covered) open[pid] = first;
  }
  for (const auto& c : recently_closed_) {
    // Closed by a marker not yet durable: still open as of `covered`.
    if (c.last_offset >= covered && c.first_offset < covered) open[c.producer_id] = c.first_offset;
  }
  s.open_txns.assign(open.begin(), open.end());
  for (const auto& a : aborted_) {
    if (a.last_offset < covered)
      s.aborted_txns.push_back({a.producer_id, a.first_offset, a.last_offset});
  }
  thin_time_index(s.time_index, max_entries);
  thin_size_index(s.sizes, max_entries);
  return s;
}

Result<int64_t> Partition::write_snapshot() {
  std::lock_guard lock(snapshot_mu_);
  const int64_t pending = batches_since_snapshot_.load();
  PartitionSnapshot s = snapshot(kSnapshotMaxIndexEntries);
  SHALE_TRY(stream_->put_meta(kPartitionSnapshotKey, s.encode()));
  batches_since_snapshot_.fetch_sub(pending);
  snapshot_time_ms_.store(steady_ms());
  return s.covered_end;
}

size_t Partition::producer_count() const {
  std::lock_guard lock(mu_);
  return producers_.size();
}

}  // namespace shale::broker
