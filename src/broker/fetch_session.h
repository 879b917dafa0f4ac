// Incremental fetch sessions (KIP-227). A session remembers, per partition, what the client
// last asked for (fetch offset, max bytes) and what it was last told (high watermark, log start
// offset), so that an incremental request lists only changed partitions and its response only
// partitions with news.
//
// Threads: the cache is shared by all shards; its mutex guards the session map. A Session is
// used by one request at a time (its epoch check makes a second concurrent use fail), so the
// handler holding a Session pointer reads and writes it without the cache lock.
// Invariants: at most `capacity` sessions; the least recently used one is evicted first.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <unordered_map>

#include "protocol/wire.h"

namespace shale::broker {

struct SessionPartition {
  protocol::Uuid topic_id;
  int64_t fetch_offset = 0;
  int32_t max_bytes = 0;
  int64_t last_high_watermark = -1;
  int64_t last_log_start = -1;
};

struct FetchSession {
  int32_t id = 0;
  std::mutex mu;  // guards next_epoch (two requests may race on one session id)
  int32_t next_epoch = 1;
  // Keyed by (topic name, partition); v13+ requests are resolved to names first.
  std::map<std::pair<std::string, int32_t>, SessionPartition> partitions;
};

class FetchSessionCache {
 public:
  explicit FetchSessionCache(size_t capacity) : capacity_(capacity) {}
  // A new session (evicting the least recently used one when full).
  std::shared_ptr<FetchSession> create();
  // The session with this id, or nullptr.
  std::shared_ptr<FetchSession> find(int32_t id);
  void remove(int32_t id);
  size_t size() const;

 private:
  size_t capacity_;
  mutable std::mutex mu_;
  std::mt19937 rng_{std::random_device{}()};
  std::list<int32_t> lru_;  // front = most recently used
  std::unordered_map<int32_t,
                     std::pair<std::shared_ptr<FetchSession>, std::list<int32_t>::iterator>>
      sessions_;
};

}  // namespace shale::broker
