// Upload: LogCache block -> prepare object ids -> write objects -> commit in order -> trim WAL.
#include <algorithm>
#include <atomic>
#include <future>
#include <thread>

#include "base/clock.h"
#include "base/log.h"
#include "storage/engine_impl.h"

namespace shale::storage {

void EngineImpl::request_upload() {
  std::lock_guard lk(cache_mu_);
  force_upload_ = true;
  upload_cv_.notify_all();
}

Status EngineImpl::flush() {
  std::unique_lock lk(cache_mu_);
  cache_.seal_active();
  if (!cache_.next_to_upload()) return ok_status();
  uint64_t target = cache_.last_block_id();
  uint64_t errors = upload_errors_;
  upload_cv_.notify_all();
  flushed_cv_.wait(
      lk, [&] { return uploaded_block_ >= target || upload_errors_ != errors || uploader_stop_; });
  if (uploaded_block_ >= target) return ok_status();
  if (upload_errors_ != errors) return last_upload_error_;
  return Error::make(Errc::kShutdown, "uploader stopped");
}

void EngineImpl::uploader_loop() {
  log::RateLimiter errlog(5000);
  int failures = 0;
  std::unique_lock lk(cache_mu_);
  while (true) {
    upload_cv_.wait_for(lk, std::chrono::milliseconds(100), [&] {
      return uploader_stop_ || force_upload_ || cache_.next_to_upload() != nullptr;
    });
    int64_t created = cache_.active_created_ms();
    bool timer = opts_.upload_interval_ms >= 0 && created > 0 &&
                 clock::mono_ms() - created >= opts_.upload_interval_ms;
    if (force_upload_ || timer || uploader_stop_) {
      cache_.seal_active();
      force_upload_ = false;
    }
    auto block = cache_.next_to_upload();
    if (!block) {
      if (uploader_stop_) break;
      continue;
    }
    lk.unlock();
    upload_started_ms_.store(clock::mono_ms());
    Status st = upload_block(*block);
    upload_started_ms_.store(0);
    lk.lock();
    if (st.ok()) {
      failures = 0;
      if (degraded_.load()) {
        lk.unlock();
        upload_succeeded();
        lk.lock();
      }
      cache_.mark_uploaded(block->id);
      uploaded_block_ = block->id;
      if (block->wal_end > 0) wal_->trim(block->wal_end);
      cache_.evict();
      flushed_cv_.notify_all();
      continue;
    }
    ++upload_errors_;
    ++failures;
    last_upload_error_ = st.error();
    last_upload_error_.retryable = true;
    flushed_cv_.notify_all();
    lk.unlock();
    upload_failed(st.error(), last_upload_need_.load());
    lk.lock();
    uint64_t dropped = 0;
    if (errlog.allow(&dropped)) {
      SPDLOG_WARN("storage upload failed ({} similar suppressed): {}", dropped,
                  st.error().to_string());
    }
    // Back off (100 ms, doubling, at most 2 s), then retry the same block: data leaves the WAL
    // only after its commit. A trim or a flush wakes the uploader early.
    if (uploader_stop_ && failures >= 3) break;
    upload_cv_.wait_for(lk, std::chrono::milliseconds(std::min<int64_t>(
                                int64_t{100} << std::min(failures - 1, 5), 2000)));
  }
}

std::vector<PlannedObject> EngineImpl::plan_objects(
    std::map<int64_t, std::pair<int64_t, std::vector<StreamRecord>>> data, bool all_stream_objects,
    uint64_t max_stream_set_bytes) {
  std::vector<PlannedObject> out;
  PlannedObject sso;
  sso.type = ObjectType::kStreamSet;
  uint64_t sso_stored = 0;
  bool single = data.size() == 1;
  for (auto& [stream, run] : data) {
    if (run.second.empty()) continue;
    uint64_t bytes = 0;
    for (auto& r : run.second) bytes += r.payload.size();
    // What the run occupies in an object: record headers, block headers and index entries.
    uint64_t stored = bytes + run.second.size() * kRecordHeaderSize +
                      (bytes / std::max<uint64_t>(1, opts_.object_block_size) + 2) *
                          (kDataBlockHeader + kIndexEntrySize);
    if (single || all_stream_objects || bytes >= opts_.stream_split_size) {
      PlannedObject so;
      so.type = ObjectType::kStream;
      so.bytes = bytes;
      so.streams.emplace(stream, std::move(run));
      out.push_back(std::move(so));
    } else {
      if (max_stream_set_bytes > 0 && !sso.streams.empty() &&
          sso_stored + stored + kFooterSize > max_stream_set_bytes) {
        out.push_back(std::move(sso));
        sso = PlannedObject();
        sso.type = ObjectType::kStreamSet;
        sso_stored = 0;
      }
      sso.bytes += bytes;
      sso_stored += stored;
      sso.streams.emplace(stream, std::move(run));
    }
  }
  if (!sso.streams.empty()) out.push_back(std::move(sso));
  return out;
}

Result<int64_t> EngineImpl::prepare_objects(size_t n, int64_t ttl_ms) {
  std::string ckey = keys_.object_id_counter();
  for (int attempt = 0; attempt < 100; ++attempt) {
    auto kv = meta_->get(ckey);
    if (!kv.ok()) return std::move(kv).error();
    int64_t first = kv->has_value() ? std::stoll((*kv)->value) : 1;
    meta::Txn t;
    t.compares.push_back({ckey, kv->has_value() ? (*kv)->mod_revision : 0});
    t.ops.push_back(meta::Op::put(ckey, std::to_string(first + static_cast<int64_t>(n))));
    ObjectMeta om;
    om.state = ObjectState::kPrepared;
    om.node = opts_.node_id;
    om.time_ms = clock::wall_ms() + ttl_ms;
    for (size_t i = 0; i < n; ++i) {
      t.ops.push_back(
          meta::Op::put(keys_.object(first + static_cast<int64_t>(i)), encode_object(om)));
    }
    auto r = meta_->commit(t);
    if (r.ok()) return first;
    if (r.error().code != Errc::kConflict) return std::move(r).error();
  }
  return Error::make(Errc::kConflict, "object id allocation kept conflicting", true);
}

namespace {
template <typename T>
T wait_cb(const std::function<void(std::function<void(T)>)>& call) {
  auto p = std::make_shared<std::promise<T>>();
  auto f = p->get_future();
  call([p](T v) { p->set_value(std::move(v)); });
  return f.get();
}
}  // namespace

Status EngineImpl::put_object(const std::string& key, BufferChain data) {
  // A store that would copy the parts together (POSIX) needs twice the object's size for a
  // multipart upload: there, one put, so an upload proceeds as soon as the object itself fits.
  if (data.size() <= 2 * opts_.object_part_size || store_->prefers_single_put()) {
    {
      std::lock_guard lk(stats_mu_);
      ++stats_.object_puts;
    }
    return objstore::put_sync(*store_, key, std::move(data));
  }
  // Large objects: multipart, parts of object_part_size cut from the chain without copying.
  auto mp = wait_cb<Result<std::unique_ptr<objstore::MultipartUpload>>>(
      [&](auto cb) { store_->create_multipart(key, std::move(cb)); });
  if (!mp.ok()) return std::move(mp).error();
  auto& up = *mp.value();
  int part = 1;
  BufferChain cur;
  std::vector<std::future<Status>> pending;
  auto send = [&] {
    auto p = std::make_shared<std::promise<Status>>();
    pending.push_back(p->get_future());
    up.upload_part(part++, std::move(cur), [p](Status s) { p->set_value(std::move(s)); });
    cur = BufferChain();
    std::lock_guard lk(stats_mu_);
    ++stats_.object_puts;
  };
  for (const auto& b : data.parts()) {
    size_t off = 0;
    while (off < b.size()) {
      size_t take = std::min<size_t>(b.size() - off, opts_.object_part_size - cur.size());
      cur.push_back(b.slice(off, take));
      off += take;
      if (cur.size() == opts_.object_part_size) send();
    }
  }
  if (!cur.empty()) send();
  Status st = ok_status();
  for (auto& f : pending) {
    Status s = f.get();
    if (!s.ok() && st.ok()) st = std::move(s);
  }
  if (st.ok()) st = wait_cb<Status>([&](auto cb) { up.complete(std::move(cb)); });
  if (!st.ok()) (void)wait_cb<Status>([&](auto cb) { up.abort(std::move(cb)); });
  return st;
}

Result<std::vector<uint64_t>> EngineImpl::write_objects(const std::vector<int64_t>& ids,
                                                        std::vector<PlannedObject>& objs) {
  std::vector<Result<uint64_t>> res(objs.size(), Error::make(Errc::kInternal, "not written"));
  size_t workers = std::min<size_t>(objs.size(), std::max(1, opts_.upload_parallelism));
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < objs.size(); i = next++) res[i] = write_object(ids[i], objs[i]);
  };
  // The calling thread is one of the workers; the others live for this batch only (a thread
  // start is microseconds, an object write is milliseconds).
  std::vector<std::thread> helpers;
  for (size_t k = 1; k < workers; ++k) helpers.emplace_back(work);
  work();
  for (auto& t : helpers) t.join();
  std::vector<uint64_t> sizes;
  for (auto& r : res) {
    if (!r.ok()) return std::move(r).error();
    sizes.push_back(*r);
  }
  return sizes;
}

Result<uint64_t> EngineImpl::write_object(int64_t id, PlannedObject& obj) {
  // Size hint: payloads, record headers, and a block header per block of each run.
  uint64_t hint = 0;
  for (auto& [stream, run] : obj.streams) {
    uint64_t bytes = 0;
    for (auto& r : run.second) bytes += r.payload.size() + kRecordHeaderSize;
    hint += bytes + (bytes / std::max<uint64_t>(1, opts_.object_block_size) + 2) * kDataBlockHeader;
  }
  // The object's bytes exist twice until the PUT is done (the records stay in the LogCache or
  // the compaction's sources): EngineStats::upload_buffer_bytes shows how much.
  upload_buffer_bytes_ += hint;
  struct Release {
    std::atomic<uint64_t>& n;
    uint64_t v;
    ~Release() { n -= v; }
  } release{upload_buffer_bytes_, hint};
  ObjectWriter w(opts_.object_block_size, hint);
  for (auto& [stream, run] : obj.streams) {
    for (auto& r : run.second) w.add(stream, run.first, r.base_offset, r.count, r.payload);
  }
  BufferChain data = w.finish();
  uint64_t size = data.size();
  SHALE_TRY(put_object(keys_.object_name(id), std::move(data)));
  std::lock_guard lk(stats_mu_);
  ++stats_.objects_uploaded;
  stats_.bytes_uploaded += size;
  return size;
}

Status EngineImpl::upload_block(const CacheBlock& block) {
  // A metadata store with a transaction limit (etcd's --max-txn-ops) gets the block in groups of
  // streams, one commit each. Each stream appears in exactly one object, so a commit carries at
  // most 2 compares and 3 ops per stream (object, stream, range row). Splitting is safe: a
  // stream's end and range rows always move in one transaction, the WAL is trimmed only after
  // the last group, and a retry or a recovery re-upload skips what is already committed.
  const size_t limit = meta_->max_txn_ops();
  const size_t per_commit = limit == 0 ? SIZE_MAX : std::max<size_t>(1, (limit - 1) / 3);
  std::map<int64_t, std::pair<int64_t, std::vector<StreamRecord>>> data;
  uint64_t group = 0;
  for (auto& [stream, run] : block.streams) {
    data[stream] = {run.epoch, run.records};
    if (data.size() >= per_commit) {
      SHALE_TRY(upload_streams(std::move(data), block.id, group++));
      data.clear();
    }
  }
  return upload_streams(std::move(data), block.id, group);
}

Status EngineImpl::upload_streams(
    std::map<int64_t, std::pair<int64_t, std::vector<StreamRecord>>> data, uint64_t block_id,
    uint64_t group) {
  if (data.empty()) return ok_status();
  // Stream-set objects are capped at what one PUT carries, so a block with many streams
  // becomes several objects written in parallel instead of one long multipart upload.
  auto objs = plan_objects(std::move(data), false, 2 * opts_.object_part_size);
  if (objs.empty()) return ok_status();
  uint64_t need = 0;
  for (auto& o : objs) need = std::max(need, o.bytes);
  last_upload_need_.store(need);
  // A retry of the same block reuses the ids prepared by the failed attempt (rewriting an
  // uncommitted object is harmless), so an outage does not pile up prepared ids.
  int64_t first = 0;
  if (retry_ids_ > 0 && retry_block_ == block_id && retry_group_ == group &&
      retry_ids_ == objs.size()) {
    first = retry_first_id_;
  } else {
    auto p = prepare_objects(objs.size(), opts_.prepared_object_ttl_ms);
    if (!p.ok()) return std::move(p).error();
    first = *p;
  }
  // Until this block commits, its retries use these ids (if never committed, they expire and
  // are collected).
  retry_block_ = block_id;
  retry_group_ = group;
  retry_first_id_ = first;
  retry_ids_ = objs.size();
  std::vector<int64_t> ids;
  for (size_t i = 0; i < objs.size(); ++i) ids.push_back(first + static_cast<int64_t>(i));
  auto sizes = write_objects(ids, objs);
  if (!sizes.ok()) return std::move(sizes).error();
  Status st = commit_upload(ids, objs, *sizes);
  // Committed, or the prepared ids expired or vanished (kConflict): the next block or attempt
  // prepares anew.
  if (st.ok() || st.error().code == Errc::kConflict) retry_ids_ = 0;
  return st;
}

namespace {

DegradedCause classify(const Error& e) {
  auto has = [&](const char* s) { return e.message.find(s) != std::string::npos; };
  if (e.code == Errc::kNoSpace || has("No space left") || has("disk is full") ||
      has("Disk quota")) {
    return DegradedCause::kObjectStoreFull;
  }
  if (has("access denied") || has("AccessDenied") || has("InvalidAccessKeyId") ||
      has("SignatureDoesNotMatch") || has("ExpiredToken")) {
    return DegradedCause::kObjectStoreAccessDenied;
  }
  if (e.code == Errc::kUnavailable || e.code == Errc::kTimeout || e.retryable) {
    return DegradedCause::kObjectStoreUnavailable;
  }
  return DegradedCause::kObjectStoreError;
}

}  // namespace

void EngineImpl::upload_failed(const Error& e, uint64_t bytes) {
  if (e.code == Errc::kShutdown) return;
  DegradedCause cause = classify(e);
  EngineStats s = stats();
  bool entered = false;
  bool changed = false;
  {
    std::lock_guard lk(health_mu_);
    entered = !health_.degraded;
    changed = !entered && health_.cause != cause;
    if (entered) {
      health_ = EngineHealth();
      health_.degraded = true;
      health_.since_ms = clock::wall_ms();
      health_.store = store_->describe();
    }
    health_.cause = cause;
    health_.detail = e.message;
    health_.bytes_needed = bytes;
    ++health_.upload_failures;
  }
  degraded_.store(true);
  if (entered || changed) {
    SPDLOG_ERROR(
        "storage {} degraded state ({}): uploads to {} fail: {}; the upload needs {} bytes; {} "
        "bytes wait in the WAL ({} of {} bytes used); once it is full, produce is answered with "
        "KAFKA_STORAGE_ERROR until an upload succeeds (retrying with back-off)",
        entered ? "entered" : "still in", degraded_cause_name(cause), store_->describe(), e.message,
        bytes, s.log_cache_unuploaded_bytes, s.wal_used_bytes, opts_.wal_capacity);
  }
}

void EngineImpl::check_upload_stalled() {
  const int64_t started = upload_started_ms_.load();
  if (started == 0 || opts_.upload_stall_ms <= 0) return;
  const int64_t running = clock::mono_ms() - started;
  if (running < opts_.upload_stall_ms) return;
  const std::string detail =
      "an upload has had no answer for " + std::to_string(running) + " ms (still retrying)";
  {
    std::lock_guard lk(health_mu_);
    if (health_.degraded) return;
    health_ = EngineHealth();
    health_.degraded = true;
    health_.since_ms = clock::wall_ms();
    health_.store = store_->describe();
    health_.cause = DegradedCause::kObjectStoreUnavailable;
    health_.detail = detail;
    health_.bytes_needed = last_upload_need_.load();
  }
  degraded_.store(true);
  SPDLOG_ERROR(
      "storage entered degraded state (object_store_unavailable): uploads to {} stall: {}; the "
      "upload needs {} bytes; the WAL is full, so produce is answered with KAFKA_STORAGE_ERROR "
      "until an upload succeeds",
      store_->describe(), detail, last_upload_need_.load());
}

void EngineImpl::upload_succeeded() {
  EngineHealth was;
  {
    std::lock_guard lk(health_mu_);
    if (!health_.degraded) return;
    was = health_;
    health_ = EngineHealth();
  }
  degraded_.store(false);
  SPDLOG_ERROR(
      "storage left degraded state ({}): an upload to {} succeeded after {} failed attempts "
      "over {} ms; the WAL drains and appends are accepted again",
      degraded_cause_name(was.cause), was.store, was.upload_failures,
      clock::wall_ms() - was.since_ms);
}

Status EngineImpl::commit_upload(const std::vector<int64_t>& ids,
                                 const std::vector<PlannedObject>& objs,
                                 const std::vector<uint64_t>& sizes) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    meta::Txn t;
    std::vector<RangeRow> rows;
    std::map<int64_t, std::pair<meta::KeyValue, StreamMeta>> streams;
    std::vector<std::pair<int64_t, int64_t>> to_fence;  // (stream, epoch)
    for (size_t i = 0; i < objs.size(); ++i) {
      auto okv = meta_->get(keys_.object(ids[i]));
      if (!okv.ok()) return std::move(okv).error();
      if (!okv->has_value()) return Error::make(Errc::kConflict, "prepared object vanished", true);
      auto prepared = decode_object((*okv)->value);
      if (!prepared.ok()) return std::move(prepared).error();
      if (prepared->state != ObjectState::kPrepared) {
        return Error::make(Errc::kConflict, "prepared object expired before commit", true);
      }
      t.compares.push_back({keys_.object(ids[i]), (*okv)->mod_revision});
      ObjectMeta om;
      om.type = objs[i].type;
      om.state = ObjectState::kCommitted;
      om.node = opts_.node_id;
      om.size = sizes[i];
      om.time_ms = clock::wall_ms();
      om.data_time_ms = om.time_ms;
      for (auto& [stream, run] : objs[i].streams) {
        auto sit = streams.find(stream);
        if (sit == streams.end()) {
          auto kv = meta_->get(keys_.stream(stream));
          if (!kv.ok()) return std::move(kv).error();
          if (!kv->has_value()) continue;  // deleted: its data in this object is dead
          auto m = decode_stream((*kv)->value);
          if (!m.ok()) return std::move(m).error();
          sit = streams.emplace(stream, std::make_pair(**kv, *m)).first;
          t.compares.push_back({(*kv)->key, (*kv)->mod_revision});
        }
        StreamMeta& m = sit->second.second;
        int64_t rs = run.second.front().base_offset;
        int64_t re = run.second.back().end_offset();
        if (m.epoch != run.first) {
          to_fence.emplace_back(stream,
                                run.first);  // a newer owner: this data must not become visible
          continue;
        }
        if (re <= m.end) continue;  // already committed (re-upload after recovery)
        if (rs > m.end) {
          SPDLOG_ERROR("upload: stream {} would have a gap [{}, {}); not committing it", stream,
                       m.end, rs);
          to_fence.emplace_back(stream, run.first);
          continue;
        }
        RangeRow row{stream, std::max(rs, m.end), re, ids[i], sizes[i]};
        om.ranges.push_back({stream, row.start, row.end});
        rows.push_back(row);
        m.end = re;
      }
      if (om.ranges.empty()) {
        om.state = ObjectState::kMarkedForDeletion;  // nothing live in it
        om.time_ms = clock::wall_ms();
      }
      t.ops.push_back(meta::Op::put(keys_.object(ids[i]), encode_object(om)));
    }
    for (auto& [stream, p] : streams) {
      if (p.second.end != decode_stream(p.first.value)->end) {
        t.ops.push_back(meta::Op::put(p.first.key, encode_stream(p.second)));
      }
    }
    for (auto& r : rows) {
      t.ops.push_back(meta::Op::put(keys_.range(r.stream_id, r.end, r.object_id), encode_range(r)));
    }
    auto res = meta_->commit(t);
    if (!res.ok()) {
      if (res.error().code == Errc::kConflict) continue;  // a trim or put_meta raced: redo
      return std::move(res).error();
    }
    {
      std::lock_guard lk(index_mu_);
      for (auto& r : rows) {
        auto it = index_.find(r.stream_id);
        if (it != index_.end()) it->second[r.end] = r;
      }
    }
    for (auto [s, epoch] : to_fence) {
      std::lock_guard lk(mu_);
      auto it = streams_.find(s);
      if (it != streams_.end() && it->second->epoch() == epoch) {
        it->second->fence("upload commit refused (epoch or gap)");
      }
    }
    return ok_status();
  }
  return Error::make(Errc::kConflict, "upload commit kept conflicting", true);
}

}  // namespace shale::storage
