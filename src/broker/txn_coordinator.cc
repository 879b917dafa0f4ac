#include "broker/txn_coordinator.h"

#include <chrono>
#include <future>
#include <limits>
#include <memory>

#include <spdlog/spdlog.h>

#include "base/varint_codec.h"
#include "meta/meta_store.h"

namespace shale::broker {

using protocol::ErrorCode;

const char* txn_state_name(TxnState s) {
  switch (s) {
    case TxnState::kEmpty:
      return "Empty";
    case TxnState::kOngoing:
      return "Ongoing";
    case TxnState::kPrepareCommit:
      return "PrepareCommit";
    case TxnState::kPrepareAbort:
      return "PrepareAbort";
    case TxnState::kCompleteCommit:
      return "CompleteCommit";
    case TxnState::kCompleteAbort:
      return "CompleteAbort";
  }
  return "Unknown";
}

namespace {

constexpr uint8_t kRecordVersion = 1;

using Out = VarintWriter;
using In = VarintReader;

bool is_prepare(TxnState s) {
  return s == TxnState::kPrepareCommit || s == TxnState::kPrepareAbort;
}

}  // namespace

// Layout: version u8, state u8, then zigzag varints (producer id, epoch, last epoch, timeout,
// start, update), the partitions (topic string, partition), the groups (id, then its offsets:
// topic, partition, offset, leader epoch, metadata present u8 + string). docs/transactions.md.
std::string TxnMetadata::encode() const {
  Out o;
  o.u8(kRecordVersion);
  o.u8(static_cast<uint8_t>(state));
  o.sv(producer_id);
  o.sv(producer_epoch);
  o.sv(last_producer_epoch);
  o.sv(timeout_ms);
  o.sv(start_ms);
  o.sv(update_ms);
  o.uv(partitions.size());
  for (const auto& tp : partitions) {
    o.str(tp.topic);
    o.sv(tp.partition);
  }
  o.uv(groups.size());
  for (const auto& [g, offsets] : groups) {
    o.str(g);
    o.uv(offsets.size());
    for (const auto& [tp, po] : offsets) {
      o.str(tp.topic);
      o.sv(tp.partition);
      o.sv(po.offset);
      o.sv(po.leader_epoch);
      o.u8(po.metadata ? 1 : 0);
      if (po.metadata) o.str(*po.metadata);
    }
  }
  return o.take();
}

Result<TxnMetadata> TxnMetadata::decode(const std::string& bytes) {
  auto bad = [](const char* why) {
    return Error::make(Errc::kCorruption, std::string("transaction record: ") + why);
  };
  In in(bytes);
  TxnMetadata m;
  uint8_t version = 0, state = 0;
  if (!in.u8(version) || version != kRecordVersion) return bad("unknown version");
  if (!in.u8(state) || state > static_cast<uint8_t>(TxnState::kCompleteAbort)) {
    return bad("bad state");
  }
  m.state = static_cast<TxnState>(state);
  int64_t pid = 0, epoch = 0, last = 0, timeout = 0;
  if (!in.sv(pid) || !in.sv(epoch) || !in.sv(last) || !in.sv(timeout) || !in.sv(m.start_ms) ||
      !in.sv(m.update_ms)) {
    return bad("truncated");
  }
  m.producer_id = pid;
  m.producer_epoch = static_cast<int16_t>(epoch);
  m.last_producer_epoch = static_cast<int16_t>(last);
  m.timeout_ms = static_cast<int32_t>(timeout);
  size_t n = 0;
  if (!in.count(n)) return bad("truncated partitions");
  for (size_t i = 0; i < n; ++i) {
    TxnTopicPartition tp;
    int64_t p = 0;
    if (!in.str(tp.topic) || !in.sv(p)) return bad("truncated partition");
    tp.partition = static_cast<int32_t>(p);
    m.partitions.insert(std::move(tp));
  }
  if (!in.count(n)) return bad("truncated groups");
  for (size_t i = 0; i < n; ++i) {
    std::string g;
    size_t k = 0;
    if (!in.str(g) || !in.count(k)) return bad("truncated group");
    auto& offsets = m.groups[g];
    for (size_t j = 0; j < k; ++j) {
      TxnTopicPartition tp;
      TxnPendingOffset po;
      int64_t p = 0, le = 0;
      uint8_t has_md = 0;
      if (!in.str(tp.topic) || !in.sv(p) || !in.sv(po.offset) || !in.sv(le) || !in.u8(has_md)) {
        return bad("truncated offset");
      }
      tp.partition = static_cast<int32_t>(p);
      po.leader_epoch = static_cast<int32_t>(le);
      if (has_md != 0) {
        std::string md;
        if (!in.str(md)) return bad("truncated offset metadata");
        po.metadata = std::move(md);
      }
      offsets[tp] = std::move(po);
    }
  }
  if (!in.done()) return bad("trailing bytes");
  return m;
}

TxnCoordinator::TxnCoordinator(TxnCoordinatorConfig cfg, meta::MetaStore* meta, TxnHooks hooks)
    : cfg_(std::move(cfg)), meta_(meta), hooks_(std::move(hooks)) {}

TxnCoordinator::~TxnCoordinator() { stop(); }

int64_t TxnCoordinator::now() const {
  if (hooks_.now_ms) return hooks_.now_ms();
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool TxnCoordinator::loaded() const {
  std::lock_guard lock(mu_);
  return loaded_;
}

Status TxnCoordinator::persist(const std::string& tid, const TxnMetadata& m) {
  meta::Txn t;
  t.ops.push_back(meta::Op::put(key(tid), m.encode()));
  auto r = meta_->commit(t);
  if (!r.ok()) return std::move(r).error();
  return ok_status();
}

Status TxnCoordinator::start() {
  // The coordinator epoch rises on every load: markers carry it, as Kafka's do.
  const std::string epoch_key = cfg_.ns + "/txn/coordinator_epoch";
  auto e = meta_->get(epoch_key);
  if (!e.ok()) return std::move(e).error();
  int32_t epoch = 0;
  if (e->has_value()) epoch = std::atoi((*e)->value.c_str());
  ++epoch;
  {
    meta::Txn t;
    t.ops.push_back(meta::Op::put(epoch_key, std::to_string(epoch)));
    auto c = meta_->commit(t);
    if (!c.ok()) return std::move(c).error();
  }
  const std::string prefix = cfg_.ns + "/txn/ids/";
  auto kvs = meta_->prefix(prefix);
  if (!kvs.ok()) return std::move(kvs).error();
  std::vector<std::string> to_complete;
  {
    std::lock_guard lock(mu_);
    coordinator_epoch_ = epoch;
    for (const auto& kv : *kvs) {
      auto m = TxnMetadata::decode(kv.value);
      if (!m.ok()) return std::move(m).error();
      const std::string tid = kv.key.substr(prefix.size());
      by_producer_[m->producer_id] = tid;
      if (is_prepare(m->state)) to_complete.push_back(tid);
      txns_[tid] = std::move(m).value();
    }
    loaded_ = true;
    stopping_ = false;
  }
  for (const auto& tid : to_complete) {
    spdlog::info("transaction coordinator: completing the interrupted transaction of '{}'", tid);
    SHALE_TRY(complete(tid));
  }
  if (cfg_.abort_check_interval_ms > 0) timeout_thread_ = std::thread([this] { timeout_loop(); });
  return ok_status();
}

void TxnCoordinator::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (timeout_thread_.joinable()) timeout_thread_.join();
}

void TxnCoordinator::timeout_loop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    cv_.wait_for(lock, std::chrono::milliseconds(cfg_.abort_check_interval_ms));
    if (stopping_) break;
    lock.unlock();
    abort_expired();
    lock.lock();
  }
}

TxnInitResult TxnCoordinator::init_producer_id(const std::string& tid, int32_t timeout_ms,
                                               int64_t producer_id, int16_t epoch) {
  TxnInitResult out;
  if (timeout_ms <= 0 || timeout_ms > cfg_.max_timeout_ms) {
    out.error = ErrorCode::kInvalidTransactionTimeout;
    return out;
  }
  std::unique_lock lock(mu_);
  if (!loaded_) {
    out.error = ErrorCode::kCoordinatorLoadInProgress;
    return out;
  }
  auto it = txns_.find(tid);
  if (it == txns_.end()) {
    lock.unlock();
    auto id = hooks_.allocate_producer_id();
    if (!id.ok()) {
      out.error = ErrorCode::kCoordinatorNotAvailable;
      return out;
    }
    lock.lock();
    it = txns_.find(tid);
    if (it == txns_.end()) {
      TxnMetadata m;
      m.producer_id = *id;
      m.producer_epoch = -1;
      it = txns_.emplace(tid, std::move(m)).first;
      by_producer_[*id] = tid;
    }
  }
  TxnMetadata& m = it->second;
  if (is_prepare(m.state)) {
    out.error = ErrorCode::kConcurrentTransactions;
    return out;
  }
  if (producer_id >= 0) {
    // KIP-360: a producer re-initialising names its current id and epoch; anything else is a
    // zombie.
    const bool current = producer_id == m.producer_id &&
                         (epoch == m.producer_epoch ||
                          (m.last_producer_epoch >= 0 && epoch == m.last_producer_epoch));
    if (!current) {
      out.error = ErrorCode::kProducerFenced;
      return out;
    }
  }
  if (m.state == TxnState::kOngoing) {
    // Fence the previous producer: abort its transaction with a bumped epoch first.
    TxnMetadata next = m;
    next.producer_epoch = static_cast<int16_t>(m.producer_epoch + 1);
    next.state = TxnState::kPrepareAbort;
    next.update_ms = now();
    if (auto st = persist(tid, next); !st.ok()) {
      out.error = ErrorCode::kCoordinatorNotAvailable;
      return out;
    }
    m = std::move(next);
    lock.unlock();
    if (auto st = complete(tid); !st.ok()) {
      out.error = ErrorCode::kConcurrentTransactions;
      return out;
    }
    lock.lock();
    it = txns_.find(tid);
  }
  TxnMetadata next = it->second;
  const int64_t old_pid = next.producer_id;
  if (next.producer_epoch >= std::numeric_limits<int16_t>::max() - 1) {
    // Epoch exhausted: a new producer id, as Kafka does.
    lock.unlock();
    auto id = hooks_.allocate_producer_id();
    lock.lock();
    if (!id.ok()) {
      out.error = ErrorCode::kCoordinatorNotAvailable;
      return out;
    }
    next.producer_id = *id;
    next.producer_epoch = 0;
  } else {
    next.producer_epoch = static_cast<int16_t>(next.producer_epoch + 1);
  }
  next.last_producer_epoch = -1;
  next.timeout_ms = timeout_ms;
  next.state = TxnState::kEmpty;
  next.partitions.clear();
  next.groups.clear();
  next.start_ms = -1;
  next.update_ms = now();
  if (auto st = persist(tid, next); !st.ok()) {
    out.error = ErrorCode::kCoordinatorNotAvailable;
    return out;
  }
  if (old_pid != next.producer_id) by_producer_.erase(old_pid);
  by_producer_[next.producer_id] = tid;
  txns_[tid] = next;
  out.producer_id = next.producer_id;
  out.producer_epoch = next.producer_epoch;
  return out;
}

namespace {

// Kafka's checks common to AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit and EndTxn.
ErrorCode check_producer(const TxnMetadata* m, int64_t producer_id, int16_t epoch) {
  if (m == nullptr || m->producer_id != producer_id) return ErrorCode::kInvalidProducerIdMapping;
  if (m->producer_epoch != epoch) return ErrorCode::kProducerFenced;
  if (is_prepare(m->state)) return ErrorCode::kConcurrentTransactions;
  return ErrorCode::kNone;
}

}  // namespace

std::map<TxnTopicPartition, ErrorCode> TxnCoordinator::add_partitions(
    const std::string& tid, int64_t producer_id, int16_t epoch,
    const std::vector<TxnTopicPartition>& partitions) {
  std::map<TxnTopicPartition, ErrorCode> out;
  auto all = [&](ErrorCode e) {
    for (const auto& tp : partitions) out[tp] = e;
    return out;
  };
  bool unknown = false;
  for (const auto& tp : partitions) {
    if (hooks_.partition_exists && !hooks_.partition_exists(tp)) unknown = true;
  }
  std::lock_guard lock(mu_);
  if (!loaded_) return all(ErrorCode::kCoordinatorLoadInProgress);
  auto it = txns_.find(tid);
  const ErrorCode e = check_producer(it == txns_.end() ? nullptr : &it->second, producer_id, epoch);
  if (e != ErrorCode::kNone) return all(e);
  if (unknown) {
    for (const auto& tp : partitions) {
      out[tp] = hooks_.partition_exists(tp) ? ErrorCode::kOperationNotAttempted
                                            : ErrorCode::kUnknownTopicOrPartition;
    }
    return out;
  }
  TxnMetadata next = it->second;
  const bool starting = next.state != TxnState::kOngoing;
  size_t before = next.partitions.size();
  for (const auto& tp : partitions) next.partitions.insert(tp);
  if (!starting && next.partitions.size() == before) return all(ErrorCode::kNone);
  if (starting) {
    next.state = TxnState::kOngoing;
    next.start_ms = now();
    next.groups.clear();
  }
  next.update_ms = now();
  if (!persist(tid, next).ok()) return all(ErrorCode::kCoordinatorNotAvailable);
  it->second = std::move(next);
  return all(ErrorCode::kNone);
}

ErrorCode TxnCoordinator::add_offsets(const std::string& tid, int64_t producer_id, int16_t epoch,
                                      const std::string& group) {
  std::lock_guard lock(mu_);
  if (!loaded_) return ErrorCode::kCoordinatorLoadInProgress;
  auto it = txns_.find(tid);
  const ErrorCode e = check_producer(it == txns_.end() ? nullptr : &it->second, producer_id, epoch);
  if (e != ErrorCode::kNone) return e;
  TxnMetadata next = it->second;
  if (next.state == TxnState::kOngoing && next.groups.contains(group)) return ErrorCode::kNone;
  if (next.state != TxnState::kOngoing) {
    next.state = TxnState::kOngoing;
    next.start_ms = now();
    next.partitions.clear();
    next.groups.clear();
  }
  next.groups[group];
  next.update_ms = now();
  if (!persist(tid, next).ok()) return ErrorCode::kCoordinatorNotAvailable;
  it->second = std::move(next);
  return ErrorCode::kNone;
}

ErrorCode TxnCoordinator::txn_offset_commit(
    const std::string& tid, const std::string& group, int64_t producer_id, int16_t epoch,
    const std::vector<std::pair<TxnTopicPartition, TxnPendingOffset>>& offsets) {
  std::lock_guard lock(mu_);
  if (!loaded_) return ErrorCode::kCoordinatorLoadInProgress;
  auto it = txns_.find(tid);
  const ErrorCode e = check_producer(it == txns_.end() ? nullptr : &it->second, producer_id, epoch);
  if (e != ErrorCode::kNone) return e;
  if (it->second.state != TxnState::kOngoing || !it->second.groups.contains(group)) {
    return ErrorCode::kInvalidTxnState;  // AddOffsetsToTxn first
  }
  TxnMetadata next = it->second;
  auto& pending = next.groups[group];
  for (const auto& [tp, po] : offsets) pending[tp] = po;
  next.update_ms = now();
  if (!persist(tid, next).ok()) return ErrorCode::kCoordinatorNotAvailable;
  it->second = std::move(next);
  return ErrorCode::kNone;
}

ErrorCode TxnCoordinator::prepare_locked(const std::string& tid, TxnMetadata& m, bool commit) {
  TxnMetadata next = m;
  next.state = commit ? TxnState::kPrepareCommit : TxnState::kPrepareAbort;
  next.update_ms = now();
  if (!persist(tid, next).ok()) return ErrorCode::kCoordinatorNotAvailable;
  m = std::move(next);
  return ErrorCode::kNone;
}

ErrorCode TxnCoordinator::end_txn(const std::string& tid, int64_t producer_id, int16_t epoch,
                                  bool commit) {
  {
    std::lock_guard lock(mu_);
    if (!loaded_) return ErrorCode::kCoordinatorLoadInProgress;
    auto it = txns_.find(tid);
    const ErrorCode e =
        check_producer(it == txns_.end() ? nullptr : &it->second, producer_id, epoch);
    if (e != ErrorCode::kNone) return e;
    TxnMetadata& m = it->second;
    switch (m.state) {
      case TxnState::kOngoing:
        break;
      case TxnState::kCompleteCommit:
        // A retried EndTxn after the first one completed.
        return commit ? ErrorCode::kNone : ErrorCode::kInvalidTxnState;
      case TxnState::kCompleteAbort:
        return commit ? ErrorCode::kInvalidTxnState : ErrorCode::kNone;
      default:
        return ErrorCode::kInvalidTxnState;
    }
    const ErrorCode p = prepare_locked(tid, m, commit);
    if (p != ErrorCode::kNone) return p;
  }
  // From here on the transaction ends `commit`-wise whatever happens: the Prepare record is
  // durable and start() would finish it after a crash.
  if (!complete(tid).ok()) return ErrorCode::kConcurrentTransactions;
  return ErrorCode::kNone;
}

Status TxnCoordinator::complete(const std::string& tid) {
  TxnMetadata m;
  {
    std::lock_guard lock(mu_);
    auto it = txns_.find(tid);
    if (it == txns_.end() || !is_prepare(it->second.state)) return ok_status();
    m = it->second;
  }
  const bool commit = m.state == TxnState::kPrepareCommit;
  const int32_t cepoch = coordinator_epoch_;
  // Markers: every partition until each has succeeded (Kafka retries markers forever; here
  // until stop(), after which the next start() finishes the transaction).
  std::set<TxnTopicPartition> left = m.partitions;
  while (!left.empty()) {
    for (auto it = left.begin(); it != left.end();) {
      Status st = hooks_.write_marker(*it, m.producer_id, m.producer_epoch, commit, cepoch);
      if (st.ok()) {
        it = left.erase(it);
      } else {
        spdlog::warn("transaction '{}': marker for {}-{} failed ({}); retrying", tid, it->topic,
                     it->partition, st.error().to_string());
        ++it;
      }
    }
    if (left.empty()) break;
    std::unique_lock lock(mu_);
    if (stopping_) return Error::make(Errc::kShutdown, "transaction coordinator stopping");
    cv_.wait_for(lock, std::chrono::milliseconds(cfg_.marker_retry_backoff_ms));
  }
  if (commit && hooks_.commit_offsets) {
    for (const auto& [group, offsets] : m.groups) {
      if (offsets.empty()) continue;
      SHALE_TRY(hooks_.commit_offsets(group, offsets));
    }
  }
  std::lock_guard lock(mu_);
  auto it = txns_.find(tid);
  if (it == txns_.end()) return ok_status();
  TxnMetadata next = it->second;
  next.state = commit ? TxnState::kCompleteCommit : TxnState::kCompleteAbort;
  next.partitions.clear();
  next.groups.clear();
  next.start_ms = -1;
  next.update_ms = now();
  SHALE_TRY(persist(tid, next));
  it->second = std::move(next);
  return ok_status();
}

ErrorCode TxnCoordinator::verify(int64_t producer_id, int16_t epoch, const TxnTopicPartition& tp) {
  std::lock_guard lock(mu_);
  auto p = by_producer_.find(producer_id);
  if (p == by_producer_.end()) return ErrorCode::kInvalidTxnState;
  auto it = txns_.find(p->second);
  if (it == txns_.end()) return ErrorCode::kInvalidTxnState;
  const TxnMetadata& m = it->second;
  if (epoch != m.producer_epoch) return ErrorCode::kInvalidProducerEpoch;
  if (m.state != TxnState::kOngoing || !m.partitions.contains(tp)) {
    return ErrorCode::kInvalidTxnState;
  }
  return ErrorCode::kNone;
}

bool TxnCoordinator::has_pending_offsets(const std::string& group, const std::string& topic,
                                         int32_t partition) const {
  std::lock_guard lock(mu_);
  const TxnTopicPartition tp{topic, partition};
  for (const auto& [tid, m] : txns_) {
    if (m.state != TxnState::kOngoing && !is_prepare(m.state)) continue;
    auto g = m.groups.find(group);
    if (g != m.groups.end() && g->second.contains(tp)) return true;
  }
  return false;
}

int TxnCoordinator::abort_expired() {
  std::vector<std::string> expired;
  {
    std::lock_guard lock(mu_);
    if (!loaded_) return 0;
    const int64_t t = now();
    for (auto& [tid, m] : txns_) {
      if (m.state != TxnState::kOngoing || m.start_ms < 0 || t - m.start_ms <= m.timeout_ms) {
        continue;
      }
      // Bump the epoch so that the producer is fenced (its next request fails), as Kafka's
      // coordinator does when it aborts a timed-out transaction.
      TxnMetadata next = m;
      next.last_producer_epoch = m.producer_epoch;
      next.producer_epoch = static_cast<int16_t>(m.producer_epoch + 1);
      next.state = TxnState::kPrepareAbort;
      next.update_ms = t;
      if (!persist(tid, next).ok()) continue;
      spdlog::info("transaction '{}' timed out after {} ms: aborting", tid, t - m.start_ms);
      m = std::move(next);
      expired.push_back(tid);
    }
  }
  int n = 0;
  for (const auto& tid : expired) {
    if (complete(tid).ok()) ++n;
  }
  return n;
}

std::vector<TxnDescription> TxnCoordinator::describe(const std::vector<std::string>& tids) {
  std::lock_guard lock(mu_);
  std::vector<TxnDescription> out;
  for (const auto& tid : tids) {
    TxnDescription d;
    d.transactional_id = tid;
    if (!loaded_) {
      d.error = ErrorCode::kCoordinatorLoadInProgress;
    } else if (auto it = txns_.find(tid); it == txns_.end()) {
      d.error = ErrorCode::kTransactionalIdNotFound;
    } else {
      d.meta = it->second;
    }
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<std::pair<std::string, TxnMetadata>> TxnCoordinator::list(
    const std::vector<std::string>& states, const std::vector<int64_t>& producer_ids,
    int64_t min_duration_ms) {
  std::lock_guard lock(mu_);
  std::vector<std::pair<std::string, TxnMetadata>> out;
  const int64_t t = now();
  for (const auto& [tid, m] : txns_) {
    if (!states.empty()) {
      bool match = false;
      for (const auto& s : states) match = match || s == txn_state_name(m.state);
      if (!match) continue;
    }
    if (!producer_ids.empty()) {
      bool match = false;
      for (int64_t p : producer_ids) match = match || p == m.producer_id;
      if (!match) continue;
    }
    if (min_duration_ms >= 0 && (m.start_ms < 0 || t - m.start_ms < min_duration_ms)) continue;
    out.emplace_back(tid, m);
  }
  return out;
}

}  // namespace shale::broker
