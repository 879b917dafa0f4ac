// LogCache: every record that is durable in the WAL, newest last, until it has been uploaded
// and the space is needed (docs/storage.md). It is both the tail-read cache and the upload staging
// area: a FIFO of blocks; only the last ("active") block takes records; a full active block is
// sealed and handed to the uploader; uploaded blocks are evicted from the head when the cache
// passes 90 % of its capacity.
// Threading: not thread-safe; the engine guards it with its cache mutex. Sealed blocks are
// immutable, so the uploader reads them without the lock.
// Invariants: records enter in WAL order, so within a stream they are contiguous and ascending
// across blocks; a block's wal_end is the WAL end offset of its last record (what the WAL may
// be trimmed to once the block is committed).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <vector>

#include "storage/engine.h"

namespace shale::storage {

struct CachedRun {
  int64_t epoch = 0;
  std::vector<StreamRecord> records;
  uint64_t bytes = 0;
};

struct CacheBlock {
  enum class State { kActive, kSealed, kUploaded };
  uint64_t id = 0;
  State state = State::kActive;
  std::map<int64_t, CachedRun> streams;
  uint64_t bytes = 0;  // charged bytes (payload + per-record overhead)
  uint64_t wal_end = 0;
  int64_t created_ms = 0;
};

class LogCache {
 public:
  static constexpr uint64_t kRecordOverhead = 64;

  LogCache(uint64_t capacity, uint64_t block_max) : capacity_(capacity), block_max_(block_max) {}

  // Adds a durable record to the active block. Returns true when that sealed the block.
  bool insert(int64_t stream, int64_t epoch, StreamRecord rec, uint64_t wal_end);
  // Seals the active block if it holds anything; returns true if it did.
  bool seal_active();
  // The oldest sealed block not yet uploaded (nullptr if none).
  std::shared_ptr<CacheBlock> next_to_upload() const;
  void mark_uploaded(uint64_t block_id);
  // Drops uploaded blocks from the head while over 90 % of capacity.
  void evict();
  // Drops a deleted stream's records from uploaded blocks' accounting view (reads stop).
  void forget_stream(int64_t stream);

  struct Hit {
    std::vector<StreamRecord> records;  // contiguous run
    int64_t first_base = -1;            // base of records[0]; -1 when empty
  };
  // Records of `stream` from the first one whose end > start, contiguous, until `end` or
  // max_bytes (at least one).
  Hit get(int64_t stream, int64_t start, int64_t end, size_t max_bytes) const;

  uint64_t bytes() const { return bytes_; }
  uint64_t unuploaded_bytes() const { return unuploaded_; }
  uint64_t capacity() const { return capacity_; }
  uint64_t last_block_id() const { return blocks_.empty() ? 0 : blocks_.back()->id; }
  // Age of the active block's first record (0 if empty).
  int64_t active_created_ms() const;
  bool active_empty() const;

 private:
  std::shared_ptr<CacheBlock> active();
  uint64_t capacity_;
  uint64_t block_max_;
  std::deque<std::shared_ptr<CacheBlock>> blocks_;
  uint64_t next_id_ = 1;
  uint64_t bytes_ = 0;
  uint64_t unuploaded_ = 0;
};

}  // namespace shale::storage
