#include "storage/block_cache.h"

#include <algorithm>
#include <vector>

#include "base/clock.h"

namespace shale::storage {

namespace {
constexpr int64_t kReaderIdleMs = 60000;
}

bool BlockCache::contains(const BlockKey& key) const {
  std::lock_guard lk(mu_);
  return entries_.count(key) > 0 || loading_.count(key) > 0;
}

uint64_t BlockCache::bytes() const {
  std::lock_guard lk(mu_);
  return bytes_;
}

uint64_t BlockCache::loading_bytes() const {
  std::lock_guard lk(mu_);
  return loading_bytes_;
}

uint64_t BlockCache::reclaimable_bytes(int64_t now_ms) const {
  std::lock_guard lk(mu_);
  uint64_t used = bytes_ + loading_bytes_;
  uint64_t n = used < capacity_ ? capacity_ - used : 0;
  for (auto& [k, e] : entries_) {
    if (distance_locked(e.span, now_ms) < 0) n += e.data.size();
  }
  return n;
}

size_t BlockCache::active_readers(int64_t now_ms) const {
  std::lock_guard lk(mu_);
  size_t n = 0;
  for (auto& [stream, rs] : readers_) {
    for (auto& [pos, info] : rs) {
      if (now_ms - info.second <= kReaderIdleMs) n += static_cast<size_t>(info.first);
    }
  }
  return n;
}

Result<Buffer> BlockCache::get(const BlockKey& key, const BlockSpan& span,
                               const std::function<Result<Buffer>()>& load, bool* loaded) {
  if (loaded) *loaded = false;
  std::unique_lock lk(mu_);
  // A reader waits for someone else's load at most once; if that load failed, it tries itself
  // (a failed read-ahead GET must not fail the read that was waiting for it).
  bool waited = false;
  while (true) {
    auto it = entries_.find(key);
    if (it != entries_.end()) {
      lru_.splice(lru_.end(), lru_, it->second.lru);
      if (it->second.foreign) {
        it->second.foreign = false;
        foreign_bytes_ -= it->second.data.size();
      }
      return it->second.data;
    }
    auto li = loading_.find(key);
    if (li == loading_.end()) break;
    auto l = li->second;
    if (loaded) *loaded = true;  // the caller stalls on a fetch: read-ahead is behind
    l->cv.wait(lk, [&] { return l->done; });
    if (l->result.ok() || waited) return l->result;
    waited = true;
  }
  auto l = std::make_shared<Loading>();
  loading_[key] = l;
  lk.unlock();
  Result<Buffer> r = load();
  if (loaded) *loaded = true;
  lk.lock();
  loading_.erase(key);
  l->done = true;
  l->result = r;
  l->cv.notify_all();
  if (r.ok() && r->size() <= capacity_ && !entries_.count(key) &&
      make_room_locked(r->size(), nullptr)) {
    lru_.push_back(key);
    entries_[key] = Entry{*r, span, std::prev(lru_.end())};
    bytes_ += r->size();
  }
  return r;
}

BlockCache::Claim BlockCache::try_claim(const BlockKey& key, const BlockSpan& span, uint64_t size,
                                        Mode mode) {
  std::lock_guard lk(mu_);
  if (entries_.count(key) || loading_.count(key)) return Claim::kPresent;
  int64_t now = clock::mono_ms();
  if (mode == Mode::kApproached && distance_locked(span, now) < 0) {
    // No reader approaches it. A stream nobody has read yet may be about to be (a consumer
    // starting on every partition of a topic reads them one after another): take it into free
    // room; it is among the first to go when room is needed.
    auto r = readers_.find(span.stream_id);
    bool unread = r == readers_.end() || r->second.empty();
    if (!unread || bytes_ + loading_bytes_ + size > capacity_) return Claim::kNoRoom;
  }
  if (mode == Mode::kApproached && foreign_wasted_ > capacity_ / 8 &&
      foreign_wasted_ * 4 > foreign_fetched_) {
    return Claim::kNoRoom;
  }
  if (size > capacity_ || !would_admit_locked(size, span, now, mode == Mode::kDemand)) {
    return Claim::kNoRoom;
  }
  auto l = std::make_shared<Loading>();
  l->claimed = size;
  if (mode == Mode::kApproached) {
    l->foreign = true;
    foreign_bytes_ += size;
  }
  loading_bytes_ += size;
  loading_[key] = std::move(l);
  return Claim::kClaimed;
}

bool BlockCache::would_admit_locked(uint64_t need, const BlockSpan& incoming, int64_t now_ms,
                                    bool demand) const {
  // Blocks being loaded for claims count as cached: they will be.
  const uint64_t used = bytes_ + loading_bytes_;
  if (used + need <= capacity_) return true;
  int64_t d = demand ? 0 : distance_locked(incoming, now_ms);
  if (d < 0) return false;
  // Evictable for it: blocks no reader approaches, and blocks needed later than it.
  uint64_t evictable = 0;
  for (auto& [k, e] : entries_) {
    int64_t ed = distance_locked(e.span, now_ms);
    if (ed < 0 || ed >= d) evictable += e.data.size();
    if (used - evictable + need <= capacity_) return true;
  }
  return false;
}

void BlockCache::finish_load(const BlockKey& key, const BlockSpan& span, Result<Buffer> r) {
  std::lock_guard lk(mu_);
  auto li = loading_.find(key);
  bool foreign = false;
  if (li != loading_.end()) {
    loading_bytes_ -= li->second->claimed;
    foreign = li->second->foreign;
    if (foreign) foreign_bytes_ -= li->second->claimed;
    li->second->done = true;
    li->second->result = r;
    li->second->cv.notify_all();
    loading_.erase(li);
  }
  if (foreign && r.ok()) foreign_fetched_ += r->size();
  if (r.ok()) {
    // Forget, every 4x the capacity loaded: the waste faster than the fetches, so that a
    // refusal (no cross-stream claims, no new fetches for them) ends and the cache tries again.
    loaded_since_decay_ += r->size();
    if (loaded_since_decay_ > 4 * capacity_) {
      loaded_since_decay_ = 0;
      foreign_fetched_ /= 2;
      foreign_wasted_ /= 4;
    }
  }
  bool kept = r.ok() && !entries_.count(key) && r->size() <= capacity_ &&
              make_room_locked(r->size(), &span);
  if (!kept) {
    if (foreign && r.ok()) foreign_wasted_ += r->size();
    return;
  }
  lru_.push_back(key);
  bytes_ += r->size();
  if (foreign) foreign_bytes_ += r->size();
  entries_[key] = Entry{std::move(r).value(), span, std::prev(lru_.end()), foreign};
}

void BlockCache::insert(const BlockKey& key, const BlockSpan& span, Buffer data) {
  std::lock_guard lk(mu_);
  if (entries_.count(key) || data.size() > capacity_) return;
  if (!make_room_locked(data.size(), &span)) return;
  lru_.push_back(key);
  bytes_ += data.size();
  entries_[key] = Entry{std::move(data), span, std::prev(lru_.end())};
}

int64_t BlockCache::distance_locked(const BlockSpan& s, int64_t now_ms) const {
  auto it = readers_.find(s.stream_id);
  if (it == readers_.end()) return -1;
  int64_t best = -1;
  for (auto& [pos, info] : it->second) {
    if (now_ms - info.second > kReaderIdleMs) continue;
    if (pos >= s.end || s.start - pos > static_cast<int64_t>(horizon_)) continue;
    int64_t d = std::max<int64_t>(0, s.start - pos);
    if (best < 0 || d < best) best = d;
  }
  return best;
}

bool BlockCache::make_room_locked(uint64_t need, const BlockSpan* incoming) {
  if (bytes_ + need <= capacity_) return true;
  int64_t now = clock::mono_ms();
  // Pass 1: blocks no active reader is approaching, least recently used first.
  for (auto k = lru_.begin(); k != lru_.end() && bytes_ + need > capacity_;) {
    auto e = entries_.find(*k);
    if (distance_locked(e->second.span, now) >= 0) {
      ++k;
      continue;
    }
    k = lru_.erase(k);
    drop_entry_locked(e);
  }
  if (bytes_ + need <= capacity_) return true;
  // Pass 2: every block is still ahead of some reader. Keep those needed soonest (Belady's
  // rule with reader distance as the time of next use): evict the farthest first, and do not
  // cache an incoming read-ahead block that is farther than everything it would displace.
  std::vector<std::pair<int64_t, std::list<BlockKey>::iterator>> order;
  order.reserve(entries_.size());
  for (auto k = lru_.begin(); k != lru_.end(); ++k) {
    order.emplace_back(distance_locked(entries_.at(*k).span, now), k);
  }
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  if (incoming) {
    int64_t d = distance_locked(*incoming, now);
    uint64_t freed = 0;
    for (auto& [dist, k] : order) {
      if (bytes_ - freed + need <= capacity_) break;
      if (d < 0 || dist < d) break;  // would displace a block needed sooner: skip it
      freed += entries_.at(*k).data.size();
    }
    if (bytes_ - freed + need > capacity_) return false;
  }
  for (auto& [dist, k] : order) {
    if (bytes_ + need <= capacity_) break;
    auto e = entries_.find(*k);
    lru_.erase(k);
    drop_entry_locked(e);
  }
  return bytes_ + need <= capacity_;
}

void BlockCache::drop_entry_locked(std::unordered_map<BlockKey, Entry, BlockKeyHash>::iterator e) {
  bytes_ -= e->second.data.size();
  if (e->second.foreign) {
    foreign_bytes_ -= e->second.data.size();
    foreign_wasted_ += e->second.data.size();
  }
  entries_.erase(e);
}

void BlockCache::move_reader(int64_t stream, int64_t from, int64_t to, int64_t now_ms) {
  std::lock_guard lk(mu_);
  auto& rs = readers_[stream];
  if (from >= 0) {
    auto it = rs.find(from);
    if (it != rs.end() && --it->second.first <= 0) rs.erase(it);
  }
  auto& slot = rs[to];
  slot.first += 1;
  slot.second = now_ms;
  for (auto it = rs.begin(); it != rs.end();) {
    it = now_ms - it->second.second > kReaderIdleMs ? rs.erase(it) : std::next(it);
  }
}

void BlockCache::drop_object(int64_t object_id) {
  std::lock_guard lk(mu_);
  for (auto k = lru_.begin(); k != lru_.end();) {
    if (k->object_id == object_id) {
      auto e = entries_.find(*k);
      k = lru_.erase(k);
      drop_entry_locked(e);
    } else {
      ++k;
    }
  }
}

}  // namespace shale::storage
