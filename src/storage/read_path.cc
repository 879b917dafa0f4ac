// Read path: LogCache first; older data from objects through the BlockCache, with adaptive
// read-ahead for sequential catch-up readers.
#include <algorithm>

#include "base/clock.h"
#include "base/log.h"
#include "storage/engine_impl.h"

namespace shale::storage {

namespace {
constexpr uint64_t kReadaheadStep = 512 * kKiB;
constexpr size_t kObjectIndexCacheEntries = 4096;
constexpr uint64_t kMergedReadMax = 4 * kMiB;
}  // namespace

void EngineImpl::post_read(std::function<void()> fn) {
  {
    std::lock_guard lk(read_mu_);
    read_q_.push_back(std::move(fn));
  }
  read_cv_.notify_one();
}

void EngineImpl::read_worker() {
  std::unique_lock lk(read_mu_);
  while (true) {
    read_cv_.wait(lk, [&] { return read_stop_ || !read_q_.empty(); });
    if (read_q_.empty()) break;  // stopping and drained
    auto fn = std::move(read_q_.front());
    read_q_.pop_front();
    lk.unlock();
    fn();
    lk.lock();
  }
}

Status EngineImpl::load_stream_index(int64_t stream) {
  auto rows = meta_->prefix(keys_.ranges(stream));
  if (!rows.ok()) return std::move(rows).error();
  std::map<int64_t, RangeRow> m;
  for (auto& kv : *rows) {
    auto r = decode_range(kv.value);
    if (!r.ok()) return std::move(r).error();
    m[r->end] = *r;
  }
  std::lock_guard lk(index_mu_);
  index_[stream] = std::move(m);
  return ok_status();
}

std::optional<RangeRow> EngineImpl::find_range(int64_t stream, int64_t offset) {
  std::lock_guard lk(index_mu_);
  auto it = index_.find(stream);
  if (it == index_.end()) return std::nullopt;
  auto r = it->second.upper_bound(offset);
  if (r == it->second.end()) return std::nullopt;
  return r->second;
}

Result<std::shared_ptr<const ObjectIndex>> EngineImpl::object_index(int64_t object_id,
                                                                    uint64_t size) {
  {
    std::lock_guard lk(index_mu_);
    auto it = object_indexes_.find(object_id);
    if (it != object_indexes_.end()) return it->second;
  }
  std::string name = keys_.object_name(object_id);
  uint64_t want = index_read_size(size);
  uint64_t needed = 0;
  Result<ObjectIndex> idx = Error::make(Errc::kInternal, "unread");
  for (int i = 0; i < 2; ++i) {
    {
      std::lock_guard lk(stats_mu_);
      ++stats_.object_gets;
    }
    auto tail = objstore::get_sync(*store_, name, objstore::Range{size - want, want});
    if (!tail.ok()) return std::move(tail).error();
    idx = parse_object_index(*tail, size, &needed);
    if (idx.ok() || idx.error().code != Errc::kOutOfRange) break;
    want = needed;
  }
  if (!idx.ok()) return std::move(idx).error();
  auto shared = std::make_shared<const ObjectIndex>(std::move(idx).value());
  std::lock_guard lk(index_mu_);
  if (object_indexes_.emplace(object_id, shared).second) {
    object_index_order_.push_back(object_id);
    if (object_index_order_.size() > kObjectIndexCacheEntries) {
      object_indexes_.erase(object_index_order_.front());
      object_index_order_.pop_front();
    }
  }
  return std::shared_ptr<const ObjectIndex>(shared);
}

Result<Buffer> EngineImpl::fetch_block(int64_t object_id, uint32_t index, const DataBlockIndex& b,
                                       bool* loaded) {
  return block_cache_.get(
      BlockKey{object_id, index}, BlockSpan{b.stream_id, b.start_offset, b.end_offset},
      [&]() -> Result<Buffer> {
        {
          std::lock_guard lk(stats_mu_);
          ++stats_.object_gets;
        }
        return objstore::get_sync(*store_, keys_.object_name(object_id),
                                  objstore::Range{b.position, b.size});
      },
      loaded);
}

Result<EngineImpl::ReadOutcome> EngineImpl::read_objects(int64_t stream, int64_t start, int64_t end,
                                                         size_t max_bytes) {
  ReadOutcome out;
  size_t bytes = 0;
  int64_t pos = start;
  bool reloaded = false;
  // A compaction may replace (and later delete) objects under a reader: on a miss or a
  // vanished object, reload the stream's ranges once and continue.
  auto reload = [&]() -> bool {
    if (reloaded) return false;
    reloaded = true;
    return load_stream_index(stream).ok();
  };
  while (pos < end && (out.records.empty() || bytes < max_bytes)) {
    auto row = find_range(stream, pos);
    if (!row || row->start > pos) {
      if (reload()) continue;
      break;
    }
    auto idx = object_index(row->object_id, row->object_size);
    if (!idx.ok()) {
      if (idx.error().code == Errc::kNotFound && reload()) continue;
      return std::move(idx).error();
    }
    const auto& blocks = (*idx)->blocks;
    int64_t limit = std::min(end, row->end);
    bool progressed = false;
    bool full = false;
    for (size_t bi = (*idx)->find(stream, pos); bi < blocks.size() && !full; ++bi) {
      const auto& b = blocks[bi];
      if (b.stream_id != stream || b.start_offset >= limit) break;
      bool loaded = false;
      auto blk = fetch_block(row->object_id, static_cast<uint32_t>(bi), b, &loaded);
      if (!blk.ok()) return std::move(blk).error();
      out.missed |= loaded;
      auto recs = parse_data_block(*blk);
      if (!recs.ok()) return std::move(recs).error();
      for (auto& r : *recs) {
        int64_t rend = r.h.base_offset + r.h.count;
        if (r.h.stream_id != stream || rend <= pos) continue;
        if (r.h.base_offset >= limit || (!out.records.empty() && bytes >= max_bytes)) {
          full = true;
          break;
        }
        out.records.push_back(StreamRecord{r.h.base_offset, r.h.count, r.payload});
        bytes += r.payload.size();
        pos = rend;
        progressed = true;
      }
    }
    if (!progressed) {
      if (reload()) continue;
      break;
    }
  }
  return out;
}

void EngineImpl::readahead(int64_t stream, int64_t from, uint64_t budget) {
  post_read([this, stream, from, budget] {
    uint64_t got = 0;
    int64_t pos = from;
    while (got < budget && !stopping_) {
      auto row = find_range(stream, pos);
      if (!row || row->start > pos) return;
      auto idx = object_index(row->object_id, row->object_size);
      if (!idx.ok()) return;
      const auto& blocks = (*idx)->blocks;
      size_t bi = (*idx)->find(stream, pos);
      if (bi >= blocks.size() || blocks[bi].stream_id != stream) return;
      auto key = [&](size_t k) { return BlockKey{row->object_id, static_cast<uint32_t>(k)}; };
      auto span_of = [](const DataBlockIndex& x) {
        return BlockSpan{x.stream_id, x.start_offset, x.end_offset};
      };
      // Fetch runs of adjacent blocks nobody has or is loading with one ranged GET each (up to
      // 4 MiB), as AutoMQ's merged reads do: object stores charge per request. The GETs run
      // concurrently (the store's own threads or connections), so a cold catch-up read keeps
      // several requests in flight instead of one; readers wait for claimed blocks.
      while (bi < blocks.size() && got < budget) {
        const auto& b = blocks[bi];
        if (b.stream_id != stream || b.start_offset >= row->end) break;
        auto claim = block_cache_.try_claim(key(bi), span_of(b), b.size);
        if (claim == BlockCache::Claim::kNoRoom) return;  // blocks farther ahead: no room either
        if (claim == BlockCache::Claim::kPresent) {
          got += b.size;
          pos = b.end_offset;
          ++bi;
          continue;
        }
        size_t last = bi;
        uint64_t run = b.size;
        // A run, once started, goes on to kMergedReadMax even past the budget: the window
        // then refills in few large GETs rather than one block at a time.
        while (last + 1 < blocks.size() && run < kMergedReadMax) {
          const auto& n = blocks[last + 1];
          if (n.stream_id != stream || n.start_offset >= row->end) break;
          if (block_cache_.try_claim(key(last + 1), span_of(n), n.size) !=
              BlockCache::Claim::kClaimed) {
            break;
          }
          run += n.size;
          ++last;
        }
        {
          std::lock_guard lk(stats_mu_);
          ++stats_.object_gets;
        }
        auto parts = std::make_shared<std::vector<std::pair<BlockKey, DataBlockIndex>>>();
        for (size_t k = bi; k <= last; ++k) parts->emplace_back(key(k), blocks[k]);
        {
          std::lock_guard lk(readahead_mu_);
          ++readahead_gets_;
        }
        uint64_t base = b.position;
        store_->get(keys_.object_name(row->object_id), objstore::Range{base, run},
                    [this, parts, base, run](Result<Buffer> data) {
                      for (auto& [k, x] : *parts) {
                        BlockSpan span{x.stream_id, x.start_offset, x.end_offset};
                        if (!data.ok()) {
                          block_cache_.finish_load(k, span, data.error());
                        } else if (data->size() != run) {
                          block_cache_.finish_load(
                              k, span, Error::make(Errc::kCorruption, "short read-ahead GET"));
                        } else {
                          block_cache_.finish_load(k, span, data->slice(x.position - base, x.size));
                        }
                      }
                      std::lock_guard lk(readahead_mu_);
                      if (--readahead_gets_ == 0) readahead_cv_.notify_all();
                    });
        got += run;
        pos = blocks[last].end_offset;
        bi = last + 1;
      }
      if (pos < row->end) return;
      pos = row->end;
    }
  });
}

void EngineImpl::read(StreamImpl* s, int64_t start, int64_t end, size_t max_bytes,
                      ReadCallback done) {
  LogCache::Hit hit;
  {
    std::lock_guard lk(cache_mu_);
    hit = cache_.get(s->id(), start, end, max_bytes);
  }
  if (!hit.records.empty() && hit.first_base <= start) {
    done(std::move(hit.records));
    return;
  }
  int64_t stream = s->id();
  int64_t obj_end = hit.records.empty() ? end : hit.first_base;
  post_read([this, stream, start, obj_end, max_bytes, hit = std::move(hit),
             done = std::move(done)]() mutable {
    auto r = read_objects(stream, start, obj_end, max_bytes);
    if (!r.ok()) {
      done(std::move(r).error());
      return;
    }
    auto& recs = r->records;
    if (recs.empty()) {
      done(Error::make(
          Errc::kNotFound,
          "no object holds stream " + std::to_string(stream) + " offset " + std::to_string(start),
          true));
      return;
    }
    size_t bytes = 0;
    for (auto& x : recs) bytes += x.payload.size();
    int64_t next = recs.back().end_offset();
    // Continue into the LogCache tail ("right intersect") if the object part reached it.
    for (auto& x : hit.records) {
      if (bytes >= max_bytes || x.base_offset != next) break;
      bytes += x.payload.size();
      next = x.end_offset();
      recs.push_back(std::move(x));
    }
    // Sequential-reader bookkeeping and adaptive read-ahead (grows on misses).
    uint64_t ra = kReadaheadStep;
    bool known = false;
    {
      std::lock_guard lk(readers_mu_);
      // Several readers can be at one offset (staggered consumers that caught up with each
      // other): each read moves one of them, so the BlockCache keeps one position per reader
      // instead of leaving stale ones behind that would look like readers approaching.
      auto it = readers_.find({stream, start});
      if (it != readers_.end()) {
        ra = it->second.first;
        known = true;
        if (--it->second.second <= 0) readers_.erase(it);
      }
      // Doubling, not linear growth: a cold catch-up reaches the full window within a few
      // reads, so most GETs are merged 4 MiB runs instead of single blocks.
      if (r->missed) ra = std::min<uint64_t>(ra * 2, opts_.max_readahead);
      auto& slot = readers_[{stream, next}];
      slot.first = std::max(slot.first, ra);
      slot.second += 1;
      if (readers_.size() > 100000) readers_.clear();
    }
    block_cache_.move_reader(stream, known ? start : -1, next, clock::mono_ms());
    if (next < obj_end) readahead(stream, next, ra);
    done(std::move(recs));
  });
}

}  // namespace shale::storage
