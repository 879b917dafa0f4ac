// Compaction and garbage collection (docs/storage.md): stream-set object compaction with split into
// stream objects, stream-object merging, and the object lifecycle
// PREPARED -> COMMITTED -> MARKED_FOR_DELETION -> deleted (after a grace delay).
#include <set>

#include "base/clock.h"
#include "base/log.h"
#include "storage/engine_impl.h"

namespace shale::storage {

namespace {
constexpr size_t kMaxSourcesPerRound = 64;
constexpr uint64_t kMaxBytesPerRound = 256 * kMiB;

// What rewrite_objects' one transaction holds for a source with `ranges` range rows, at most:
// the source's mark and its row deletes, plus (for the new objects) one object and one row
// per range. Compares (sources + new objects) are fewer.
size_t rewrite_txn_ops(size_t ranges) { return 3 * ranges + 1; }
}  // namespace

// Whether a rewrite round holding `ops` already may take a source with `ranges` rows within the
// metadata store's transaction limit (etcd's --max-txn-ops; 0 = none).
bool EngineImpl::fits_txn_limit(size_t ops, size_t ranges) const {
  size_t limit = meta_->max_txn_ops();
  return limit == 0 || ops + rewrite_txn_ops(ranges) <= limit;
}

Status EngineImpl::compact_now() {
  std::lock_guard lk(compact_mu_);
  SHALE_TRY(compact_stream_set_objects());
  SHALE_TRY(merge_stream_objects());
  SHALE_TRY(collect_garbage());
  std::lock_guard sl(stats_mu_);
  ++stats_.compactions;
  return ok_status();
}

// Decides object liveness from stream metadata: a range is live while its stream exists and
// the range ends above the stream's start offset.
Status EngineImpl::collect_garbage() {
  auto objs = meta_->prefix(keys_.objects());
  if (!objs.ok()) return std::move(objs).error();
  std::map<int64_t, std::optional<StreamMeta>> streams;
  auto stream_meta = [&](int64_t id) -> Result<std::optional<StreamMeta>> {
    auto it = streams.find(id);
    if (it != streams.end()) return it->second;
    auto kv = meta_->get(keys_.stream(id));
    if (!kv.ok()) return std::move(kv).error();
    std::optional<StreamMeta> m;
    if (kv->has_value()) {
      auto d = decode_stream((*kv)->value);
      if (!d.ok()) return std::move(d).error();
      m = *d;
    }
    streams[id] = m;
    return m;
  };
  int64_t now = clock::wall_ms();
  for (auto& kv : *objs) {
    int64_t id = Keys::parse_id(kv.key);
    auto om = decode_object(kv.value);
    if (!om.ok()) return std::move(om).error();
    meta::Txn t;
    t.compares.push_back({kv.key, kv.mod_revision});
    if (om->state == ObjectState::kPrepared) {
      if (om->time_ms > now) continue;
      om->state = ObjectState::kMarkedForDeletion;  // abandoned upload: never became visible
      om->time_ms = now;
      t.ops.push_back(meta::Op::put(kv.key, encode_object(*om)));
    } else if (om->state == ObjectState::kCommitted) {
      bool live = false;
      for (auto& r : om->ranges) {
        auto m = stream_meta(r.stream_id);
        if (!m.ok()) return std::move(m).error();
        if (m->has_value() && r.end > (*m)->start) live = true;
      }
      if (live) continue;
      for (auto& r : om->ranges)
        t.ops.push_back(meta::Op::del(keys_.range(r.stream_id, r.end, id)));
      om->state = ObjectState::kMarkedForDeletion;
      om->time_ms = now;
      t.ops.push_back(meta::Op::put(kv.key, encode_object(*om)));
    } else {
      if (om->time_ms + opts_.object_delete_delay_ms > now) continue;
      SHALE_TRY(objstore::remove_sync(*store_, {keys_.object_name(id)}));
      t.ops.push_back(meta::Op::del(kv.key));
      block_cache_.drop_object(id);
      std::lock_guard sl(stats_mu_);
      ++stats_.objects_deleted;
    }
    auto r = meta_->commit(t);
    if (!r.ok() && r.error().code != Errc::kConflict) return std::move(r).error();
    if (r.ok() && om->state == ObjectState::kMarkedForDeletion) {
      std::lock_guard lk(index_mu_);
      for (auto& rg : om->ranges) {
        auto it = index_.find(rg.stream_id);
        if (it != index_.end()) {
          auto row = it->second.find(rg.end);
          if (row != it->second.end() && row->second.object_id == id) it->second.erase(row);
        }
      }
    }
  }
  return ok_status();
}

// Merges this node's stream-set objects: streams with enough data move to stream objects, the
// rest are packed into one new stream-set object (docs/storage.md, Compaction).
Status EngineImpl::compact_stream_set_objects() {
  auto objs = meta_->prefix(keys_.objects());
  if (!objs.ok()) return std::move(objs).error();
  std::vector<std::pair<int64_t, meta::KeyValue>> sources;
  uint64_t bytes = 0;
  size_t ops = 0;
  for (auto& kv : *objs) {
    auto om = decode_object(kv.value);
    if (!om.ok()) return std::move(om).error();
    if (om->type != ObjectType::kStreamSet || om->state != ObjectState::kCommitted ||
        om->node != opts_.node_id) {
      continue;
    }
    if (sources.size() >= kMaxSourcesPerRound || bytes + om->size > kMaxBytesPerRound) break;
    if (!fits_txn_limit(ops, om->ranges.size())) break;
    bytes += om->size;
    ops += rewrite_txn_ops(om->ranges.size());
    sources.emplace_back(Keys::parse_id(kv.key), kv);
  }
  if (sources.size() < 2) return ok_status();
  return rewrite_objects(sources, false);
}

// Merges runs of small stream objects of one stream into one (physical merge; docs/storage.md).
Status EngineImpl::merge_stream_objects() {
  auto objs = meta_->prefix(keys_.objects());
  if (!objs.ok()) return std::move(objs).error();
  std::map<int64_t, std::vector<std::pair<int64_t, meta::KeyValue>>> small;  // by stream
  std::map<int64_t, uint64_t> small_bytes;
  for (auto& kv : *objs) {
    auto om = decode_object(kv.value);
    if (!om.ok()) return std::move(om).error();
    if (om->type != ObjectType::kStream || om->state != ObjectState::kCommitted ||
        om->ranges.size() != 1 || om->size >= opts_.stream_split_size / 2) {
      continue;
    }
    int64_t s = om->ranges[0].stream_id;
    if (small[s].size() >= kMaxSourcesPerRound ||
        small_bytes[s] + om->size > opts_.stream_split_size * 4 ||
        !fits_txn_limit(small[s].size() * rewrite_txn_ops(1), 1)) {
      continue;
    }
    small_bytes[s] += om->size;
    small[s].emplace_back(Keys::parse_id(kv.key), kv);
  }
  for (auto& [stream, srcs] : small) {
    {
      // Only the owner rewrites a stream's objects, so two nodes never race on them.
      std::lock_guard lk(mu_);
      auto it = streams_.find(stream);
      if (it == streams_.end() || it->second->state() != StreamImpl::State::kOpen) continue;
    }
    if (srcs.size() < 2) continue;
    SHALE_TRY(rewrite_objects(srcs, true));
  }
  return ok_status();
}

Status EngineImpl::rewrite_objects(const std::vector<std::pair<int64_t, meta::KeyValue>>& sources,
                                   bool all_stream_objects) {
  // 1. Read the live records of every source.
  std::map<int64_t, std::pair<int64_t, std::vector<StreamRecord>>> data;
  std::map<int64_t, std::optional<StreamMeta>> streams;
  for (auto& [id, kv] : sources) {
    // A round can read hundreds of MiB: give way to shutdown (the sources stay as they are).
    if (stopping_) return Error::make(Errc::kShutdown, "engine is shutting down");
    auto om = decode_object(kv.value);
    if (!om.ok()) return std::move(om).error();
    auto bytes = objstore::get_sync(*store_, keys_.object_name(id));
    note_get(bytes.ok() ? bytes->size() : 0);
    if (!bytes.ok()) return std::move(bytes).error();
    auto idx = parse_object_index(*bytes, bytes->size(), nullptr);
    if (!idx.ok()) return std::move(idx).error();
    for (auto& rg : om->ranges) {
      auto sit = streams.find(rg.stream_id);
      if (sit == streams.end()) {
        auto skv = meta_->get(keys_.stream(rg.stream_id));
        if (!skv.ok()) return std::move(skv).error();
        std::optional<StreamMeta> m;
        if (skv->has_value()) m = *decode_stream((*skv)->value);
        sit = streams.emplace(rg.stream_id, m).first;
      }
      if (!sit->second) continue;
      int64_t from = std::max(rg.start, sit->second->start);
      for (size_t bi = idx->find(rg.stream_id, from); bi < idx->blocks.size(); ++bi) {
        const auto& b = idx->blocks[bi];
        if (b.stream_id != rg.stream_id || b.start_offset >= rg.end) break;
        auto recs = parse_data_block(bytes->slice(b.position, b.size));
        if (!recs.ok()) return std::move(recs).error();
        for (auto& r : *recs) {
          int64_t rend = r.h.base_offset + r.h.count;
          if (rend <= from || r.h.base_offset >= rg.end) continue;
          auto& run = data[rg.stream_id];
          run.first = r.h.epoch;
          run.second.push_back(StreamRecord{r.h.base_offset, r.h.count, r.payload});
        }
      }
    }
  }
  for (auto& [s, run] : data) {
    std::sort(
        run.second.begin(), run.second.end(),
        [](const StreamRecord& a, const StreamRecord& b) { return a.base_offset < b.base_offset; });
  }
  // 2. Write the new objects.
  auto planned = plan_objects(data, all_stream_objects);
  std::vector<int64_t> ids;
  std::vector<uint64_t> sizes;
  if (!planned.empty()) {
    auto first = prepare_objects(planned.size(), opts_.prepared_object_ttl_ms);
    if (!first.ok()) return std::move(first).error();
    for (size_t i = 0; i < planned.size(); ++i) ids.push_back(*first + static_cast<int64_t>(i));
    auto written = write_objects(ids, planned);
    if (!written.ok()) return std::move(written).error();
    sizes = std::move(written).value();
  }
  // 3. One transaction: sources must be unchanged; they become marked for deletion and their
  // range rows are replaced by the new objects' rows. Readers holding old rows keep working
  // until the grace delay ends, then reload.
  meta::Txn t;
  std::vector<RangeRow> rows;
  std::vector<std::pair<int64_t, int64_t>> dropped;  // (stream, end) rows removed
  int64_t now = clock::wall_ms();
  for (auto& [id, kv] : sources) {
    auto om = *decode_object(kv.value);
    t.compares.push_back({kv.key, kv.mod_revision});
    for (auto& rg : om.ranges) {
      t.ops.push_back(meta::Op::del(keys_.range(rg.stream_id, rg.end, id)));
      dropped.emplace_back(rg.stream_id, rg.end);
    }
    om.state = ObjectState::kMarkedForDeletion;
    om.time_ms = now;
    t.ops.push_back(meta::Op::put(kv.key, encode_object(om)));
  }
  for (size_t i = 0; i < planned.size(); ++i) {
    auto okv = meta_->get(keys_.object(ids[i]));
    if (!okv.ok()) return std::move(okv).error();
    if (!okv->has_value()) return Error::make(Errc::kConflict, "prepared object vanished", true);
    t.compares.push_back({keys_.object(ids[i]), (*okv)->mod_revision});
    ObjectMeta om;
    om.type = planned[i].type;
    om.state = ObjectState::kCommitted;
    om.node = opts_.node_id;
    om.size = sizes[i];
    om.time_ms = now;
    om.data_time_ms = now;
    for (auto& [stream, run] : planned[i].streams) {
      // A stream's records may not be contiguous (other data lives in other objects): one
      // range row per contiguous run.
      size_t k = 0;
      while (k < run.second.size()) {
        int64_t rs = run.second[k].base_offset;
        int64_t re = run.second[k].end_offset();
        while (k + 1 < run.second.size() && run.second[k + 1].base_offset == re) {
          re = run.second[++k].end_offset();
        }
        ++k;
        om.ranges.push_back({stream, rs, re});
        rows.push_back(RangeRow{stream, rs, re, ids[i], sizes[i]});
      }
    }
    t.ops.push_back(meta::Op::put(keys_.object(ids[i]), encode_object(om)));
  }
  for (auto& r : rows) {
    t.ops.push_back(meta::Op::put(keys_.range(r.stream_id, r.end, r.object_id), encode_range(r)));
  }
  auto res = meta_->commit(t);
  if (!res.ok()) {
    // Lost a race (a source changed): the new objects stay PREPARED and expire into GC.
    if (res.error().code == Errc::kConflict) return ok_status();
    return std::move(res).error();
  }
  std::set<int64_t> touched;
  for (auto& [s, e] : dropped) touched.insert(s);
  for (auto& r : rows) touched.insert(r.stream_id);
  for (int64_t s : touched) {
    bool tracked;
    {
      std::lock_guard lk(index_mu_);
      tracked = index_.count(s) > 0;
    }
    if (tracked) SHALE_TRY(load_stream_index(s));
  }
  SPDLOG_DEBUG("compaction: {} objects -> {} objects", sources.size(), planned.size());
  return ok_status();
}

}  // namespace shale::storage
