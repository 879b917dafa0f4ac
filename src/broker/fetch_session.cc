#include "broker/fetch_session.h"

namespace shale::broker {

std::shared_ptr<FetchSession> FetchSessionCache::create() {
  std::lock_guard lock(mu_);
  if (capacity_ == 0) return nullptr;
  while (sessions_.size() >= capacity_) {
    sessions_.erase(lru_.back());
    lru_.pop_back();
  }
  int32_t id = 0;
  do {
    id = static_cast<int32_t>(rng_() & 0x7fffffff);
  } while (id == 0 || sessions_.count(id) != 0);
  auto s = std::make_shared<FetchSession>();
  s->id = id;
  lru_.push_front(id);
  sessions_[id] = {s, lru_.begin()};
  return s;
}

std::shared_ptr<FetchSession> FetchSessionCache::find(int32_t id) {
  std::lock_guard lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second.second);
  return it->second.first;
}

void FetchSessionCache::remove(int32_t id) {
  std::lock_guard lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return;
  lru_.erase(it->second.second);
  sessions_.erase(it);
}

size_t FetchSessionCache::size() const {
  std::lock_guard lock(mu_);
  return sessions_.size();
}

}  // namespace shale::broker
