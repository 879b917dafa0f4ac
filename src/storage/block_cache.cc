#include "storage/block_cache.h"

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

Result<Buffer> BlockCache::get(const BlockKey& key, const BlockSpan& span,
                               const std::function<Result<Buffer>()>& load, bool* loaded) {
  if (loaded) *loaded = false;
  std::unique_lock lk(mu_);
  auto it = entries_.find(key);
  if (it != entries_.end()) {
    lru_.splice(lru_.end(), lru_, it->second.lru);
    return it->second.data;
  }
  auto li = loading_.find(key);
  if (li != loading_.end()) {
    auto l = li->second;
    l->cv.wait(lk, [&] { return l->done; });
    return l->result;
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
  if (r.ok() && r->size() <= capacity_ && !entries_.count(key)) {
    make_room_locked(r->size());
    lru_.push_back(key);
    entries_[key] = Entry{*r, span, std::prev(lru_.end())};
    bytes_ += r->size();
  }
  return r;
}

void BlockCache::insert(const BlockKey& key, const BlockSpan& span, Buffer data) {
  std::lock_guard lk(mu_);
  if (entries_.count(key) || data.size() > capacity_) return;
  make_room_locked(data.size());
  lru_.push_back(key);
  bytes_ += data.size();
  entries_[key] = Entry{std::move(data), span, std::prev(lru_.end())};
}

bool BlockCache::wanted_locked(const BlockSpan& s, int64_t now_ms) const {
  auto it = readers_.find(s.stream_id);
  if (it == readers_.end()) return false;
  for (auto& [pos, info] : it->second) {
    if (now_ms - info.second > kReaderIdleMs) continue;
    if (pos < s.end && s.start - pos <= static_cast<int64_t>(horizon_)) return true;
  }
  return false;
}

void BlockCache::make_room_locked(uint64_t need) {
  if (bytes_ + need <= capacity_) return;
  int64_t now = clock::mono_ms();
  // Pass 1: blocks no active reader is approaching, oldest first. Pass 2: anything, LRU.
  for (int pass = 0; pass < 2 && bytes_ + need > capacity_; ++pass) {
    for (auto k = lru_.begin(); k != lru_.end() && bytes_ + need > capacity_;) {
      auto e = entries_.find(*k);
      if (pass == 0 && wanted_locked(e->second.span, now)) {
        ++k;
        continue;
      }
      bytes_ -= e->second.data.size();
      entries_.erase(e);
      k = lru_.erase(k);
    }
  }
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
      bytes_ -= e->second.data.size();
      entries_.erase(e);
      k = lru_.erase(k);
    } else {
      ++k;
    }
  }
}

}  // namespace shale::storage
