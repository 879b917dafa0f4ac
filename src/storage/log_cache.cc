#include "storage/log_cache.h"

#include <algorithm>

#include "base/clock.h"

namespace shale::storage {

std::shared_ptr<CacheBlock> LogCache::active() {
  if (blocks_.empty() || blocks_.back()->state != CacheBlock::State::kActive) {
    auto b = std::make_shared<CacheBlock>();
    b->id = next_id_++;
    b->created_ms = clock::mono_ms();
    blocks_.push_back(std::move(b));
  }
  return blocks_.back();
}

bool LogCache::insert(int64_t stream, int64_t epoch, StreamRecord rec, uint64_t wal_end) {
  auto b = active();
  if (b->bytes == 0) b->created_ms = clock::mono_ms();
  uint64_t charge = rec.payload.size() + kRecordOverhead;
  auto& run = b->streams[stream];
  run.epoch = epoch;
  run.bytes += rec.payload.size();
  run.records.push_back(std::move(rec));
  b->bytes += charge;
  b->wal_end = std::max(b->wal_end, wal_end);
  bytes_ += charge;
  unuploaded_ += charge;
  if (b->bytes >= block_max_) {
    b->state = CacheBlock::State::kSealed;
    return true;
  }
  return false;
}

bool LogCache::seal_active() {
  if (blocks_.empty()) return false;
  auto& b = blocks_.back();
  if (b->state != CacheBlock::State::kActive || b->bytes == 0) return false;
  b->state = CacheBlock::State::kSealed;
  return true;
}

std::shared_ptr<CacheBlock> LogCache::next_to_upload() const {
  for (auto& b : blocks_) {
    if (b->state == CacheBlock::State::kSealed) return b;
    if (b->state == CacheBlock::State::kActive) break;
  }
  return nullptr;
}

void LogCache::mark_uploaded(uint64_t block_id) {
  for (auto& b : blocks_) {
    if (b->id == block_id && b->state == CacheBlock::State::kSealed) {
      b->state = CacheBlock::State::kUploaded;
      unuploaded_ -= b->bytes;
    }
  }
}

void LogCache::evict() {
  while (!blocks_.empty() && blocks_.front()->state == CacheBlock::State::kUploaded &&
         (bytes_ > capacity_ / 10 * 9 || blocks_.size() > 64)) {
    bytes_ -= blocks_.front()->bytes;
    blocks_.pop_front();
  }
}

void LogCache::forget_stream(int64_t stream) {
  for (auto& b : blocks_) {
    if (b->state == CacheBlock::State::kUploaded) b->streams.erase(stream);
  }
}

LogCache::Hit LogCache::get(int64_t stream, int64_t start, int64_t end, size_t max_bytes) const {
  Hit hit;
  size_t got = 0;
  int64_t next = -1;
  for (const auto& b : blocks_) {
    auto it = b->streams.find(stream);
    if (it == b->streams.end()) continue;
    const auto& recs = it->second.records;
    auto r = recs.begin();
    if (next < 0) {
      r = std::partition_point(recs.begin(), recs.end(),
                               [&](const StreamRecord& x) { return x.end_offset() <= start; });
      if (r == recs.end()) continue;
      hit.first_base = r->base_offset;
      next = r->base_offset;
    }
    for (; r != recs.end(); ++r) {
      if (r->base_offset != next || r->base_offset >= end) return hit;
      if (!hit.records.empty() && got >= max_bytes) return hit;
      hit.records.push_back(*r);
      got += r->payload.size();
      next = r->end_offset();
    }
  }
  return hit;
}

int64_t LogCache::active_created_ms() const {
  if (blocks_.empty() || blocks_.back()->state != CacheBlock::State::kActive) return 0;
  return blocks_.back()->bytes == 0 ? 0 : blocks_.back()->created_ms;
}

bool LogCache::active_empty() const {
  return blocks_.empty() || blocks_.back()->state != CacheBlock::State::kActive ||
         blocks_.back()->bytes == 0;
}

}  // namespace shale::storage
