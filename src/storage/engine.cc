#include <algorithm>
#include <cstring>

#include "base/clock.h"
#include "base/log.h"
#include "storage/engine_impl.h"
#include "storage/file_wal.h"
#include "storage/object_wal.h"
#include "storage/record.h"

namespace shale::storage {

// ---------------------------------------------------------------------------------------------
// StreamImpl

StreamImpl::StreamImpl(EngineImpl* e, int64_t id, int64_t epoch, const StreamMeta& m)
    : e_(e), id_(id), epoch_(epoch), next_(m.end), start_(m.start), end_(m.end) {}

int64_t StreamImpl::next_offset() const {
  std::lock_guard lk(mu_);
  return next_;
}

static Error state_error(StreamImpl::State s) {
  switch (s) {
    case StreamImpl::State::kFenced:
      return Error::make(Errc::kFenced, "stream is fenced (opened elsewhere or an append failed)");
    case StreamImpl::State::kClosing:
    case StreamImpl::State::kClosed:
      return Error::make(Errc::kShutdown, "stream is closed");
    case StreamImpl::State::kOpen:
      break;
  }
  return Error::make(Errc::kInternal, "stream state");
}

void StreamImpl::append(int64_t expected_base, uint32_t count, Buffer payload,
                        AppendCallback done) {
  std::optional<Error> err;
  {
    std::lock_guard lk(mu_);
    if (state_ != State::kOpen) {
      err = state_error(state_);
    } else if (e_->stopping()) {
      err = Error::make(Errc::kShutdown, "engine is shutting down");
    } else if (count == 0 || expected_base != next_) {
      err = Error::make(Errc::kInvalidArgument, "append at " + std::to_string(expected_base) +
                                                    ", next offset is " + std::to_string(next_));
    } else {
      Status st = e_->admit(payload.size() + LogCache::kRecordOverhead);
      // Shared so that a refusal by the WAL leaves the callback with us to report it.
      auto cb = std::make_shared<AppendCallback>(std::move(done));
      if (st.ok()) st = e_->wal_append(this, next_, count, std::move(payload), cb);
      if (!st.ok()) done = std::move(*cb);
      if (st.ok()) {
        next_ += count;
        ++pending_;
        return;
      }
      err = e_->refusal(std::move(st).error());
    }
  }
  done(std::move(*err));
}

void StreamImpl::on_durable(int64_t end) {
  std::lock_guard lk(mu_);
  end_.store(end);
  if (--pending_ == 0) idle_cv_.notify_all();
}

void StreamImpl::on_failed() {
  std::lock_guard lk(mu_);
  // A failed append leaves a hole at its offsets: no later append of this stream may succeed.
  if (state_ == State::kOpen || state_ == State::kClosing) state_ = State::kFenced;
  if (--pending_ == 0) idle_cv_.notify_all();
}

void StreamImpl::fence(const char* why, bool expected) {
  std::lock_guard lk(mu_);
  if (state_ == State::kOpen || state_ == State::kClosing) {
    if (expected) {
      SPDLOG_DEBUG("stream {} epoch {} fenced: {}", id_, epoch_, why);
    } else {
      SPDLOG_WARN("stream {} epoch {} fenced: {}", id_, epoch_, why);
    }
    state_ = State::kFenced;
  }
  idle_cv_.notify_all();
}

void StreamImpl::mark_closed() {
  std::lock_guard lk(mu_);
  if (state_ != State::kFenced) state_ = State::kClosed;
}

bool StreamImpl::wait_idle() {
  std::unique_lock lk(mu_);
  idle_cv_.wait(lk, [&] { return pending_ == 0; });
  return state_ != State::kFenced;
}

void StreamImpl::read(int64_t start, int64_t end, size_t max_bytes, ReadCallback done) {
  State st = state();
  if (st != State::kOpen && st != State::kClosing) {
    done(state_error(st));
    return;
  }
  int64_t durable = end_.load();
  end = std::min(end, durable);
  if (start < start_.load() || start > durable) {
    done(Error::make(Errc::kOutOfRange, "read at " + std::to_string(start) + " outside [" +
                                            std::to_string(start_.load()) + ", " +
                                            std::to_string(durable) + "]"));
    return;
  }
  if (start >= end) {
    done(std::vector<StreamRecord>());
    return;
  }
  e_->read(this, start, end, max_bytes, std::move(done));
}

Status StreamImpl::trim(int64_t new_start) {
  if (new_start <= start_.load()) return ok_status();
  if (new_start > end_.load()) return Error::make(Errc::kOutOfRange, "trim past the end");
  auto* meta = e_->meta();
  std::string key = e_->keys().stream(id_);
  for (int attempt = 0; attempt < 100; ++attempt) {
    auto kv = meta->get(key);
    if (!kv.ok()) return std::move(kv).error();
    if (!kv->has_value()) return Error::make(Errc::kNotFound, "stream deleted");
    auto m = decode_stream((*kv)->value);
    if (!m.ok()) return std::move(m).error();
    if (m->epoch != epoch_) {
      fence("epoch changed (trim)");
      return Error::make(Errc::kFenced, "stream opened elsewhere");
    }
    if (m->start >= new_start) break;
    m->start = new_start;
    meta::Txn t;
    t.compares.push_back({key, (*kv)->mod_revision});
    t.ops.push_back(meta::Op::put(key, encode_stream(*m)));
    auto r = meta->commit(t);
    if (r.ok()) break;
    if (r.error().code != Errc::kConflict) return std::move(r).error();
  }
  int64_t cur = start_.load();
  while (cur < new_start && !start_.compare_exchange_weak(cur, new_start)) {
  }
  return ok_status();
}

Status StreamImpl::put_meta(const std::string& k, const std::string& value) {
  auto* meta = e_->meta();
  std::string key = e_->keys().stream(id_);
  for (int attempt = 0; attempt < 100; ++attempt) {
    auto kv = meta->get(key);
    if (!kv.ok()) return std::move(kv).error();
    if (!kv->has_value()) return Error::make(Errc::kNotFound, "stream deleted");
    auto m = decode_stream((*kv)->value);
    if (!m.ok()) return std::move(m).error();
    if (m->epoch != epoch_) {
      fence("epoch changed (put_meta)");
      return Error::make(Errc::kFenced, "stream opened elsewhere");
    }
    meta::Txn t;
    t.compares.push_back({key, (*kv)->mod_revision});
    t.ops.push_back(meta::Op::put(e_->keys().stream_kv(id_, k), value));
    auto r = meta->commit(t);
    if (r.ok()) return ok_status();
    if (r.error().code != Errc::kConflict) return std::move(r).error();
  }
  return Error::make(Errc::kConflict, "put_meta kept conflicting", true);
}

Result<std::optional<std::string>> StreamImpl::get_meta(const std::string& k) {
  auto kv = e_->meta()->get(e_->keys().stream_kv(id_, k));
  if (!kv.ok()) return std::move(kv).error();
  if (!kv->has_value()) return std::optional<std::string>();
  return std::optional<std::string>((*kv)->value);
}

void StreamImpl::close(std::function<void(Status)> done) {
  {
    std::lock_guard lk(mu_);
    if (state_ != State::kOpen) {
      Status st = state_ == State::kFenced ? Status(state_error(state_)) : ok_status();
      done(st);
      return;
    }
    state_ = State::kClosing;
  }
  e_->post_background([this, done = std::move(done)] {
    bool clean = wait_idle();
    Status st = clean ? e_->flush() : Status(state_error(State::kFenced));
    if (st.ok()) {
      auto* meta = e_->meta();
      std::string key = e_->keys().stream(id_);
      for (int attempt = 0; attempt < 100; ++attempt) {
        auto kv = meta->get(key);
        if (!kv.ok()) {
          st = std::move(kv).error();
          break;
        }
        if (!kv->has_value()) break;
        auto m = decode_stream((*kv)->value);
        if (!m.ok() || m->epoch != epoch_) break;  // someone else owns it now: nothing to close
        m->state = StreamState::kClosed;
        meta::Txn t;
        t.compares.push_back({key, (*kv)->mod_revision});
        t.ops.push_back(meta::Op::put(key, encode_stream(*m)));
        auto r = meta->commit(t);
        if (r.ok() || r.error().code != Errc::kConflict) {
          if (!r.ok()) st = std::move(r).error();
          break;
        }
      }
    }
    mark_closed();
    e_->forget_stream(id_);
    done(st);
  });
}

// ---------------------------------------------------------------------------------------------
// EngineImpl: lifecycle

Result<std::unique_ptr<Engine>> Engine::open(const EngineOptions& opts,
                                             objstore::ObjectStore* store, meta::MetaStore* meta) {
  auto e = std::make_unique<EngineImpl>(opts, store, meta);
  SHALE_TRY(e->start());
  return std::unique_ptr<Engine>(std::move(e));
}

static uint64_t upload_threshold(const EngineOptions& o) {
  uint64_t auto_t = std::min<uint64_t>(o.log_cache_size / 3, 500 * kMiB);
  return o.upload_threshold == 0 ? auto_t : std::min(o.upload_threshold, auto_t);
}

EngineImpl::EngineImpl(const EngineOptions& opts, objstore::ObjectStore* store,
                       meta::MetaStore* meta)
    : opts_(opts),
      store_(store),
      meta_(meta),
      keys_(opts.ns),
      cache_(opts.log_cache_size, upload_threshold(opts)),
      block_cache_(opts.block_cache_size, 1 << 30),
      merged_read_max_(std::clamp<uint64_t>(opts.block_cache_size / 4, 512 * kKiB, 8 * kMiB)) {
  if (!opts_.fs) opts_.fs = posix_fs();
}

EngineImpl::~EngineImpl() { shutdown(); }

Result<int64_t> EngineImpl::bump_node_epoch() {
  std::string key = keys_.node(opts_.node_id);
  for (int attempt = 0; attempt < 100; ++attempt) {
    auto kv = meta_->get(key);
    if (!kv.ok()) return std::move(kv).error();
    int64_t epoch = kv->has_value() ? std::stoll((*kv)->value) + 1 : 1;
    meta::Txn t;
    t.compares.push_back({key, kv->has_value() ? (*kv)->mod_revision : 0});
    t.ops.push_back(meta::Op::put(key, std::to_string(epoch)));
    auto r = meta_->commit(t);
    if (r.ok()) return epoch;
    if (r.error().code != Errc::kConflict) return std::move(r).error();
  }
  return Error::make(Errc::kConflict, "node epoch kept conflicting", true);
}

Status EngineImpl::start() {
  if (opts_.log_cache_size < 4 * opts_.wal_max_write) {
    return Error::make(Errc::kInvalidArgument, "s3.wal.cache.size too small");
  }
  auto epoch = bump_node_epoch();
  if (!epoch.ok()) return std::move(epoch).error();
  node_epoch_ = *epoch;
  const std::string file_scheme = "file://";
  if (opts_.wal_path.rfind(file_scheme, 0) == 0) {
    FileWalOptions w;
    w.path = opts_.wal_path.substr(file_scheme.size());
    w.capacity = opts_.wal_capacity;
    w.direct_io = opts_.wal_direct_io;
    w.max_write = opts_.wal_max_write;
    w.node_id = opts_.node_id;
    w.node_epoch = node_epoch_;
    w.fs = opts_.fs;
    auto slash = w.path.rfind('/');
    if (slash != std::string::npos && slash > 0)
      SHALE_TRY(opts_.fs->create_dirs(w.path.substr(0, slash)));
    auto f = FileWal::open(w);
    if (!f.ok()) return std::move(f).error();
    wal_ = std::move(f).value();
  } else if (opts_.wal_path.rfind("object://", 0) == 0) {
    ObjectWalOptions w;
    w.prefix = opts_.wal_path.substr(9);
    w.node_id = opts_.node_id;
    w.node_epoch = node_epoch_;
    w.batch_interval_ms = opts_.object_wal_batch_interval_ms;
    w.batch_bytes = opts_.object_wal_batch_bytes;
    w.max_unflushed =
        opts_.object_wal_max_unflushed > 0 ? opts_.object_wal_max_unflushed : opts_.log_cache_size;
    if (w.prefix.empty()) return Error::make(Errc::kInvalidArgument, "object WAL needs a prefix");
    auto ow = ObjectWal::open(w, opts_.wal_store != nullptr ? opts_.wal_store : store_);
    if (!ow.ok()) return std::move(ow).error();
    wal_ = std::move(ow).value();
  } else {
    return Error::make(
        Errc::kInvalidArgument,
        "s3.wal.path must be file:///path or object://prefix, got '" + opts_.wal_path + "'");
  }
  SHALE_TRY(recover());
  watch_streams();
  uploader_ = std::thread([this] { uploader_loop(); });
  for (int i = 0; i < std::max(1, opts_.read_threads); ++i) {
    read_threads_.emplace_back([this] { read_worker(); });
  }
  bg_ = std::thread([this] { background_loop(); });
  return ok_status();
}

Status EngineImpl::recover() {
  auto recs = wal_->recover();
  if (!recs.ok()) return std::move(recs).error();
  struct Rec {
    EncodedRecordHeader h;
    Buffer payload;
  };
  std::vector<Rec> all;
  std::map<int64_t, std::optional<StreamMeta>> metas;
  for (auto& r : *recs) {
    size_t used = 0;
    auto d = decode_record(r.body, &used);
    if (!d.ok()) return std::move(d).error();  // CRC matched, so this is a bug, not a tear
    all.push_back(Rec{d->h, d->payload});
    metas[d->h.stream_id];
  }
  for (auto& [id, m] : metas) {
    auto kv = meta_->get(keys_.stream(id));
    if (!kv.ok()) return std::move(kv).error();
    if (!kv->has_value()) continue;  // deleted since
    auto sm = decode_stream((*kv)->value);
    if (!sm.ok()) return std::move(sm).error();
    m = *sm;
  }
  // Keep, per stream, the contiguous run that continues the committed end with the current
  // epoch: older records are already in objects; other epochs belong to a fenced owner.
  std::map<int64_t, int64_t> expect;
  size_t kept = 0;
  {
    std::lock_guard lk(cache_mu_);
    for (auto& r : all) {
      auto& m = metas[r.h.stream_id];
      if (!m || m->epoch != r.h.epoch) continue;
      auto [it, fresh] = expect.emplace(r.h.stream_id, m->end);
      int64_t end = r.h.base_offset + r.h.count;
      if (end <= it->second) continue;
      if (r.h.base_offset != it->second) {
        SPDLOG_ERROR("wal recovery: stream {} has a gap at {} (record at {}); dropping the rest",
                     r.h.stream_id, it->second, r.h.base_offset);
        it->second = INT64_MAX;
        continue;
      }
      it->second = end;
      cache_.insert(r.h.stream_id, r.h.epoch, StreamRecord{r.h.base_offset, r.h.count, r.payload},
                    0);
      ++kept;
    }
    cache_.seal_active();
  }
  while (true) {
    std::shared_ptr<CacheBlock> b;
    {
      std::lock_guard lk(cache_mu_);
      b = cache_.next_to_upload();
    }
    if (!b) break;
    SHALE_TRY(upload_block(*b));
    std::lock_guard lk(cache_mu_);
    cache_.mark_uploaded(b->id);
    uploaded_block_ = b->id;
  }
  if (kept > 0) SPDLOG_INFO("wal recovery: uploaded {} records of {} streams", kept, expect.size());
  return wal_->reset();
}

void EngineImpl::watch_streams() {
  // Another node opening one of our streams bumps its epoch: fence ours at once instead of
  // waiting for the next commit to fail. Best effort (commits are fenced regardless).
  auto w = meta_->watch(keys_.streams(), 0, [this](const std::vector<meta::WatchEvent>& evs) {
    for (auto& ev : evs) {
      int64_t id = Keys::parse_id(ev.kv.key);
      std::lock_guard lk(mu_);
      auto it = streams_.find(id);
      if (it == streams_.end()) continue;
      if (ev.type == meta::WatchEvent::Type::kDelete) {
        it->second->fence("stream deleted");
        continue;
      }
      auto m = decode_stream(ev.kv.value);
      if (m.ok() && m->epoch > it->second->epoch()) it->second->fence("opened with a newer epoch");
    }
  });
  if (w.ok()) watch_id_ = *w;
}

void EngineImpl::shutdown() {
  if (shut_down_.exchange(true)) return;
  stopping_.store(true);
  // Appends already accepted complete (the WAL thread keeps running); then upload everything
  // so the WAL is empty and the next start has nothing to recover.
  while (inflight_appends_.load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (uploader_.joinable()) {
    Status st = flush();
    if (!st.ok()) {
      SPDLOG_WARN("storage shutdown: final upload failed ({}); the WAL keeps the data",
                  st.error().to_string());
    }
  }
  if (watch_id_) meta_->cancel_watch(watch_id_);
  {
    std::lock_guard lk(bg_mu_);
    bg_stop_ = true;
  }
  bg_cv_.notify_all();
  if (bg_.joinable()) bg_.join();
  {
    std::lock_guard lk(cache_mu_);
    uploader_stop_ = true;
  }
  upload_cv_.notify_all();
  if (uploader_.joinable()) uploader_.join();
  {
    std::lock_guard lk(read_mu_);
    read_stop_ = true;
  }
  read_cv_.notify_all();
  for (auto& t : read_threads_) t.join();
  read_threads_.clear();
  {
    std::unique_lock lk(readahead_mu_);
    readahead_cv_.wait(lk, [&] { return readahead_gets_ == 0; });
  }
  if (wal_) wal_->shutdown();
}

// ---------------------------------------------------------------------------------------------
// Streams

Result<int64_t> EngineImpl::create_stream(const StreamOptions& so) {
  std::string ckey = keys_.stream_id_counter();
  for (int attempt = 0; attempt < 100; ++attempt) {
    auto kv = meta_->get(ckey);
    if (!kv.ok()) return std::move(kv).error();
    int64_t id = kv->has_value() ? std::stoll((*kv)->value) : 1;
    StreamMeta m;
    m.tags = so.tags;
    meta::Txn t;
    t.compares.push_back({ckey, kv->has_value() ? (*kv)->mod_revision : 0});
    t.compares.push_back({keys_.stream(id), 0});
    t.ops.push_back(meta::Op::put(ckey, std::to_string(id + 1)));
    t.ops.push_back(meta::Op::put(keys_.stream(id), encode_stream(m)));
    auto r = meta_->commit(t);
    if (r.ok()) return id;
    if (r.error().code != Errc::kConflict) return std::move(r).error();
  }
  return Error::make(Errc::kConflict, "stream id allocation kept conflicting", true);
}

Result<Stream*> EngineImpl::open_stream(int64_t id) {
  if (stopping_) return Error::make(Errc::kShutdown, "engine is shutting down");
  bool had_local = false;
  {
    std::lock_guard lk(mu_);
    auto it = streams_.find(id);
    if (it != streams_.end()) {
      if (it->second->state() == StreamImpl::State::kOpen)
        return static_cast<Stream*>(it->second.get());
      had_local = true;
    }
  }
  // Records of an earlier local incarnation may still sit in the LogCache: upload them first so
  // the new epoch starts from the true committed end.
  if (had_local) SHALE_TRY(flush());
  std::string key = keys_.stream(id);
  for (int attempt = 0; attempt < 100; ++attempt) {
    auto kv = meta_->get(key);
    if (!kv.ok()) return std::move(kv).error();
    if (!kv->has_value()) return Error::make(Errc::kNotFound, "no stream " + std::to_string(id));
    auto m = decode_stream((*kv)->value);
    if (!m.ok()) return std::move(m).error();
    m->epoch += 1;
    m->state = StreamState::kOpen;
    m->owner = opts_.node_id;
    meta::Txn t;
    t.compares.push_back({key, (*kv)->mod_revision});
    t.ops.push_back(meta::Op::put(key, encode_stream(*m)));
    auto r = meta_->commit(t);
    if (!r.ok()) {
      if (r.error().code == Errc::kConflict) continue;
      return std::move(r).error();
    }
    SHALE_TRY(load_stream_index(id));
    auto s = std::make_unique<StreamImpl>(this, id, m->epoch, *m);
    Stream* out = s.get();
    std::lock_guard lk(mu_);
    auto it = streams_.find(id);
    if (it != streams_.end()) {
      it->second->fence("reopened");
      closed_.push_back(std::move(it->second));
      streams_.erase(it);
    }
    streams_[id] = std::move(s);
    return out;
  }
  return Error::make(Errc::kConflict, "open kept conflicting", true);
}

void EngineImpl::forget_stream(int64_t id) {
  std::lock_guard lk(mu_);
  auto it = streams_.find(id);
  if (it != streams_.end() && it->second->state() != StreamImpl::State::kOpen) {
    closed_.push_back(std::move(it->second));
    streams_.erase(it);
  }
}

Status EngineImpl::delete_stream(int64_t id) {
  {
    std::lock_guard lk(mu_);
    auto it = streams_.find(id);
    if (it != streams_.end()) it->second->fence("deleted", true);
  }
  meta::Txn t;
  t.ops.push_back(meta::Op::del(keys_.stream(id)));
  t.ops.push_back(meta::Op::del_prefix(keys_.stream_kv_prefix(id)));
  t.ops.push_back(meta::Op::del_prefix(keys_.ranges(id)));
  auto r = meta_->commit(t);
  if (!r.ok()) return std::move(r).error();
  {
    std::lock_guard lk(index_mu_);
    index_.erase(id);
  }
  {
    std::lock_guard lk(cache_mu_);
    cache_.forget_stream(id);
  }
  forget_stream(id);
  return ok_status();
}

Result<std::map<int64_t, std::map<std::string, std::string>>> EngineImpl::list_streams() {
  auto kvs = meta_->prefix(keys_.streams());
  if (!kvs.ok()) return std::move(kvs).error();
  std::map<int64_t, std::map<std::string, std::string>> out;
  for (auto& kv : *kvs) {
    auto m = decode_stream(kv.value);
    if (!m.ok()) return std::move(m).error();
    out[Keys::parse_id(kv.key)] = m->tags;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Appends

Status EngineImpl::admit(uint64_t bytes) {
  std::lock_guard lk(cache_mu_);
  uint64_t cap = cache_.capacity();
  if (cache_.bytes() + inflight_bytes_.load() + bytes > cap) cache_.evict();
  uint64_t used = cache_.bytes() + inflight_bytes_.load();
  if (cache_.unuploaded_bytes() + inflight_bytes_.load() >= cap / 10 * 8) {
    force_upload_ = true;
    upload_cv_.notify_all();
  }
  if (used + bytes > cap) {
    std::lock_guard sl(stats_mu_);
    ++stats_.appends_refused;
    return Error::make(Errc::kUnavailable, "log cache full (s3.wal.cache.size)", true);
  }
  return ok_status();
}

Status EngineImpl::wal_append(StreamImpl* s, int64_t base, uint32_t count, Buffer payload,
                              std::shared_ptr<AppendCallback> done) {
  uint8_t head[kRecordHeaderSize];
  encode_record_header(head, EncodedRecordHeader{s->id(), s->epoch(), base, count,
                                                 static_cast<uint32_t>(payload.size())});
  uint64_t charge = payload.size() + LogCache::kRecordOverhead;
  inflight_bytes_ += charge;
  ++inflight_appends_;
  Buffer body = payload;
  Status st = wal_->append(
      Buffer::copy(head, sizeof head), std::move(body),
      [this, s, base, count, payload = std::move(payload), charge, done](Result<uint64_t> r) {
        if (r.ok()) {
          bool sealed;
          {
            std::lock_guard lk(cache_mu_);
            sealed = cache_.insert(s->id(), s->epoch(), StreamRecord{base, count, payload}, *r);
            inflight_bytes_ -= charge;
          }
          if (sealed) upload_cv_.notify_all();
          s->on_durable(base + count);
          (*done)(AppendResult{base, base + count});
        } else {
          inflight_bytes_ -= charge;
          s->on_failed();
          (*done)(std::move(r).error());
        }
        --inflight_appends_;
      });
  if (!st.ok()) {
    inflight_bytes_ -= charge;
    --inflight_appends_;
    if (st.error().code == Errc::kUnavailable) {
      request_upload();
      std::lock_guard sl(stats_mu_);
      ++stats_.appends_refused;
    }
  }
  return st;
}

// ---------------------------------------------------------------------------------------------
// Background thread

void EngineImpl::post_background(std::function<void()> fn) {
  {
    std::lock_guard lk(bg_mu_);
    bg_q_.push_back(std::move(fn));
  }
  bg_cv_.notify_all();
}

void EngineImpl::background_loop() {
  int64_t next_compaction = clock::mono_ms() + opts_.compaction_interval_ms;
  std::unique_lock lk(bg_mu_);
  while (true) {
    if (bg_q_.empty()) {
      if (bg_stop_) break;
      int64_t now = clock::mono_ms();
      if (opts_.compaction_interval_ms > 0 && now >= next_compaction) {
        lk.unlock();
        Status st = compact_now();
        if (!st.ok() && st.error().code != Errc::kShutdown)
          SPDLOG_WARN("storage compaction: {}", st.error().to_string());
        lk.lock();
        next_compaction = clock::mono_ms() + opts_.compaction_interval_ms;
        continue;
      }
      int64_t wait = opts_.compaction_interval_ms > 0 ? next_compaction - now : 1000;
      bg_cv_.wait_for(lk, std::chrono::milliseconds(std::min<int64_t>(wait, 1000)));
      continue;
    }
    auto fn = std::move(bg_q_.front());
    bg_q_.pop_front();
    lk.unlock();
    fn();
    lk.lock();
  }
}

// ---------------------------------------------------------------------------------------------
// Health

const char* degraded_cause_name(DegradedCause c) {
  switch (c) {
    case DegradedCause::kNone:
      return "none";
    case DegradedCause::kObjectStoreFull:
      return "object_store_full";
    case DegradedCause::kObjectStoreUnavailable:
      return "object_store_unavailable";
    case DegradedCause::kObjectStoreAccessDenied:
      return "object_store_access_denied";
    case DegradedCause::kObjectStoreError:
      return "object_store_error";
  }
  return "unknown";
}

Error EngineImpl::refusal(Error e) {
  if (e.code != Errc::kUnavailable) return e;
  if (!degraded_.load()) check_upload_stalled();
  if (!degraded_.load()) return e;
  std::string msg;
  bool first = false;
  {
    std::lock_guard lk(health_mu_);
    if (!health_.degraded) return e;
    first = !health_.wal_full;
    health_.wal_full = true;
    msg = std::string("storage degraded (") + degraded_cause_name(health_.cause) +
          "): uploads to " + health_.store + " are failing (" + health_.detail +
          "), so the WAL cannot drain (" + e.message +
          "); appends are refused until an upload succeeds";
  }
  if (first) SPDLOG_ERROR("{}", msg);
  return Error::make(Errc::kNoSpace, std::move(msg), true);
}

EngineHealth EngineImpl::health() const {
  std::lock_guard lk(health_mu_);
  return health_;
}

EngineStats EngineImpl::stats() const {
  EngineStats s;
  {
    std::lock_guard lk(stats_mu_);
    s = stats_;
  }
  if (wal_) {
    auto w = wal_->stats();
    s.wal_bytes_written = w.bytes_written;
    s.wal_writes = w.writes;
    s.wal_used_bytes = w.used_bytes;
  }
  {
    auto* self = const_cast<EngineImpl*>(this);
    std::lock_guard lk(self->cache_mu_);
    s.log_cache_bytes = cache_.bytes();
    s.log_cache_unuploaded_bytes = cache_.unuploaded_bytes();
  }
  s.block_cache_bytes = block_cache_.bytes();
  s.block_cache_loading_bytes = block_cache_.loading_bytes();
  s.upload_buffer_bytes = upload_buffer_bytes_.load();
  {
    auto* self = const_cast<EngineImpl*>(this);
    std::lock_guard lk(self->index_mu_);
    s.object_index_cache_bytes = object_index_bytes_;
  }
  return s;
}

}  // namespace shale::storage
