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

BlockSpan span_of(const DataBlockIndex& x) {
  return BlockSpan{x.stream_id, x.start_offset, x.end_offset};
}
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
                                                                    uint64_t size, int64_t stream) {
  {
    // Single flight: readers and read-ahead of many streams reach a new object together.
    std::unique_lock lk(index_mu_);
    index_cv_.wait(lk, [&] { return !index_loading_.count(object_id); });
    auto it = object_indexes_.find(object_id);
    if (it != object_indexes_.end()) return it->second;
    index_loading_.insert(object_id);
  }
  struct Done {
    EngineImpl* e;
    int64_t id;
    ~Done() {
      {
        std::lock_guard lk(e->index_mu_);
        e->index_loading_.erase(id);
      }
      e->index_cv_.notify_all();
    }
  } done{this, object_id};
  std::string name = keys_.object_name(object_id);
  uint64_t want = index_read_size(size);
  // Read-ahead (stream >= 0) reads a whole merged window from the end of the object with the
  // index, if the BlockCache has that much room (free, or holding blocks no reader needs): the
  // data blocks in it are then cached too, instead of costing GETs of their own (without room
  // they would displace blocks needed sooner, and be fetched again).
  if (stream >= 0) {
    uint64_t w = std::min(size, merged_read_max_);
    if (block_cache_.reclaimable_bytes(clock::mono_ms()) >= w) {
      want = std::max(want, w);
    }
  }
  uint64_t needed = 0;
  Result<ObjectIndex> idx = Error::make(Errc::kInternal, "unread");
  Result<Buffer> tail = Buffer();
  for (int i = 0; i < 2; ++i) {
    tail = objstore::get_sync(*store_, name, objstore::Range{size - want, want});
    note_get(tail.ok() ? tail->size() : 0);
    if (!tail.ok()) return std::move(tail).error();
    idx = parse_object_index(*tail, size, &needed);
    if (idx.ok() || idx.error().code != Errc::kOutOfRange) break;
    want = needed;
  }
  if (!idx.ok()) return std::move(idx).error();
  auto shared = std::make_shared<const ObjectIndex>(std::move(idx).value());
  if (stream >= 0 && tail.ok() && tail->size() == want) {
    const uint64_t base = size - want;
    const bool cross = cross_stream_ok();
    for (size_t k = 0; k < shared->blocks.size(); ++k) {
      const auto& x = shared->blocks[k];
      if (x.position < base || (x.stream_id != stream && !cross)) continue;
      BlockKey key{object_id, static_cast<uint32_t>(k)};
      auto mode =
          x.stream_id == stream ? BlockCache::Mode::kReadAhead : BlockCache::Mode::kApproached;
      if (block_cache_.try_claim(key, span_of(x), x.size, mode) == BlockCache::Claim::kClaimed) {
        block_cache_.finish_load(key, span_of(x), tail->slice(x.position - base, x.size));
      }
    }
  }
  std::lock_guard lk(index_mu_);
  auto index_bytes = [](const ObjectIndex& x) {
    return sizeof(ObjectIndex) + x.blocks.capacity() * sizeof(DataBlockIndex);
  };
  if (object_indexes_.emplace(object_id, shared).second) {
    object_index_bytes_ += index_bytes(*shared);
    object_index_order_.push_back(object_id);
    if (object_index_order_.size() > kObjectIndexCacheEntries) {
      auto old = object_indexes_.find(object_index_order_.front());
      object_index_bytes_ -= index_bytes(*old->second);
      object_indexes_.erase(old);
      object_index_order_.pop_front();
    }
  }
  return std::shared_ptr<const ObjectIndex>(shared);
}

bool EngineImpl::cross_stream_ok() const {
  // Each active reader's share of the cache must hold a quarter of a window: below that (e.g.
  // 3 groups x 16 partitions on a 32 MiB cache) blocks taken for other streams' readers are
  // evicted before those readers come, and the data is fetched twice.
  uint64_t readers = std::max<uint64_t>(1, block_cache_.active_readers(clock::mono_ms()));
  return block_cache_.capacity() / readers >= merged_read_max_ / 4;
}

void EngineImpl::note_get(uint64_t bytes) {
  std::lock_guard lk(stats_mu_);
  ++stats_.object_gets;
  stats_.object_get_bytes += bytes;
}

Result<Buffer> EngineImpl::fetch_block(int64_t object_id, uint32_t index, const DataBlockIndex& b,
                                       bool* loaded) {
  return block_cache_.get(
      BlockKey{object_id, index}, BlockSpan{b.stream_id, b.start_offset, b.end_offset},
      [&]() -> Result<Buffer> {
        auto r = objstore::get_sync(*store_, keys_.object_name(object_id),
                                    objstore::Range{b.position, b.size});
        note_get(r.ok() ? r->size() : 0);
        return r;
      },
      loaded);
}

std::vector<size_t> EngineImpl::claim_run(int64_t object_id, const ObjectIndex& idx, size_t anchor,
                                          int64_t stream, int64_t stream_end) {
  const auto& blocks = idx.blocks;
  // Windows are aligned in the object (window w = bytes [w * max, (w + 1) * max)), so that runs
  // started by readers of different streams tile an object instead of cutting it into pieces
  // that end wherever another reader's run began.
  const uint64_t window = blocks[anchor].position / merged_read_max_;
  const bool cross = cross_stream_ok();
  auto claim = [&](size_t k) {
    const auto& n = blocks[k];
    bool own = n.stream_id == stream && n.start_offset < stream_end;
    if (!own && !cross) return false;
    auto mode = own ? BlockCache::Mode::kReadAhead : BlockCache::Mode::kApproached;
    return block_cache_.try_claim(BlockKey{object_id, static_cast<uint32_t>(k)}, span_of(n), n.size,
                                  mode) == BlockCache::Claim::kClaimed;
  };
  std::vector<size_t> run;
  for (size_t k = anchor; k > 0 && blocks[k - 1].position / merged_read_max_ == window &&
                          blocks[k - 1].position + blocks[k - 1].size == blocks[k].position;
       --k) {
    if (claim(k - 1)) run.push_back(k - 1);
  }
  std::reverse(run.begin(), run.end());
  run.push_back(anchor);
  for (size_t k = anchor + 1;
       k < blocks.size() && blocks[k].position / merged_read_max_ == window &&
       blocks[k - 1].position + blocks[k - 1].size == blocks[k].position;
       ++k) {
    if (claim(k)) run.push_back(k);
  }
  return run;
}

Result<Buffer> EngineImpl::get_run(int64_t object_id, std::shared_ptr<const ObjectIndex> idx,
                                   std::vector<size_t> run, bool sync, size_t anchor) {
  // One GET from the first claimed block to the end of the last: blocks in between that were
  // cached or loading already are fetched again but not kept (cheaper than a second GET).
  const auto& lo = idx->blocks[run.front()];
  const auto& hi = idx->blocks[run.back()];
  uint64_t base = lo.position;
  uint64_t len = hi.position + hi.size - base;
  // Ends every claim of the run: waiting readers get their block (or, on an error, load it
  // themselves), and the BlockCache keeps what it has room for.
  auto finish = [this, object_id, idx, run = std::move(run), base,
                 len](const Result<Buffer>& data) {
    for (size_t k : run) {
      const auto& x = idx->blocks[k];
      BlockKey key{object_id, static_cast<uint32_t>(k)};
      if (!data.ok()) {
        block_cache_.finish_load(key, span_of(x), data.error());
      } else if (data->size() != len) {
        block_cache_.finish_load(key, span_of(x),
                                 Error::make(Errc::kCorruption, "short merged GET"));
      } else {
        block_cache_.finish_load(key, span_of(x), data->slice(x.position - base, x.size));
      }
    }
  };
  std::string name = keys_.object_name(object_id);
  if (sync) {
    auto data = objstore::get_sync(*store_, name, objstore::Range{base, len});
    note_get(data.ok() ? data->size() : 0);
    finish(data);
    if (!data.ok()) return std::move(data).error();
    if (data->size() != len) return Error::make(Errc::kCorruption, "short merged GET");
    const auto& a = idx->blocks[anchor];
    return data->slice(a.position - base, a.size);
  }
  {
    std::lock_guard lk(readahead_mu_);
    ++readahead_gets_;
  }
  store_->get(name, objstore::Range{base, len}, [this, finish](Result<Buffer> data) {
    note_get(data.ok() ? data->size() : 0);
    finish(data);
    std::lock_guard lk(readahead_mu_);
    if (--readahead_gets_ == 0) readahead_cv_.notify_all();
  });
  return Buffer();
}

Result<EngineImpl::ReadOutcome> EngineImpl::read_objects(int64_t stream, int64_t start, int64_t end,
                                                         size_t max_bytes, bool sequential) {
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
    auto idx = object_index(row->object_id, row->object_size, sequential ? stream : -1);
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
      Result<Buffer> blk = Buffer();
      BlockKey key{row->object_id, static_cast<uint32_t>(bi)};
      if (block_cache_.try_claim(key, span_of(b), b.size, BlockCache::Mode::kDemand) ==
          BlockCache::Claim::kClaimed) {
        // A miss nobody is loading: one merged GET for this block and those that follow it
        // (readers of the other streams in a stream-set object find theirs cached).
        blk = get_run(row->object_id, *idx, claim_run(row->object_id, **idx, bi, stream, row->end),
                      true, bi);
        loaded = true;
      } else {
        blk = fetch_block(row->object_id, static_cast<uint32_t>(bi), b, &loaded);
      }
      if (!blk.ok()) return std::move(blk).error();
      out.missed |= loaded;
      auto recs = parse_data_block(*blk);
      if (!recs.ok()) return std::move(recs).error();
      for (auto& r : *recs) {
        int64_t rend = r.h.base_offset + r.h.count;
        if (r.h.stream_id != stream || rend <= pos) continue;
        // Stop before a record that would pass max_bytes (the first is always taken), as the
        // broker keeps whole batches within its limit: the next read then starts where this
        // one ended and the reader is recognised as sequential (read-ahead, BlockCache).
        if (r.h.base_offset >= limit ||
            (!out.records.empty() && bytes + r.payload.size() > max_bytes)) {
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
  {
    std::lock_guard lk(stats_mu_);
    stats_.object_read_bytes += bytes;
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
      auto idx = object_index(row->object_id, row->object_size, stream);
      if (!idx.ok()) return;
      const auto& blocks = (*idx)->blocks;
      size_t bi = (*idx)->find(stream, pos);
      if (bi >= blocks.size() || blocks[bi].stream_id != stream) return;
      // Fetch runs of adjacent blocks nobody has or is loading with one ranged GET each (up to
      // merged_read_max_), as AutoMQ's merged reads do: object stores charge per request. A run
      // goes on past this stream's blocks into those of other streams that readers approach.
      // The GETs run concurrently (the store's own threads or connections), so a cold catch-up
      // read keeps several requests in flight instead of one; readers wait for claimed blocks.
      while (bi < blocks.size() && got < budget) {
        const auto& b = blocks[bi];
        if (b.stream_id != stream || b.start_offset >= row->end) break;
        auto claim = block_cache_.try_claim(BlockKey{row->object_id, static_cast<uint32_t>(bi)},
                                            span_of(b), b.size);
        if (claim == BlockCache::Claim::kNoRoom) return;  // blocks farther ahead: no room either
        if (claim == BlockCache::Claim::kPresent) {
          got += b.size;
          pos = b.end_offset;
          ++bi;
          continue;
        }
        // A run, once started, goes on to merged_read_max_ even past the budget: the window
        // then refills in few large GETs rather than one block at a time.
        auto run = claim_run(row->object_id, **idx, bi, stream, row->end);
        const auto& lo = blocks[run.front()];
        got += blocks[run.back()].position + blocks[run.back()].size - lo.position;
        size_t last = run.back();
        (void)get_run(row->object_id, *idx, std::move(run), false, bi);
        // The stream's blocks up to the end of the window are fetched or were present.
        while (bi < last && blocks[bi + 1].stream_id == stream &&
               blocks[bi + 1].start_offset < row->end) {
          ++bi;
        }
        pos = blocks[bi].end_offset;
        ++bi;
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
    bool sequential = false;
    {
      std::lock_guard lk(readers_mu_);
      sequential = readers_.count({stream, start}) > 0;
    }
    auto r = read_objects(stream, start, obj_end, max_bytes, sequential);
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
      if (bytes + x.payload.size() > max_bytes || x.base_offset != next) break;
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
    int64_t now = clock::mono_ms();
    block_cache_.move_reader(stream, known ? start : -1, next, now);
    // The readers' windows together stay within half the BlockCache: windows that add up to
    // more than it holds get evicted before they are read, and then fetched twice.
    uint64_t share =
        block_cache_.capacity() / 4 / std::max<uint64_t>(1, block_cache_.active_readers(now));
    if (next < obj_end) readahead(stream, next, std::min(ra, std::max<uint64_t>(share, 1)));
    done(std::move(recs));
  });
}

}  // namespace shale::storage
