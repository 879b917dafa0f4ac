// BlockCache: data blocks read from objects, for catch-up reads (docs/storage.md), bounded by
// s3.block.cache.size.
//
// - Single flight: concurrent requests for the same (object, block) share one ranged GET,
//   including blocks that an asynchronous read-ahead GET is bringing in (try_claim).
// - Reader-aware eviction (beyond AutoMQ's read-once rule): the cache knows where active
//   sequential readers of each stream are. When space is needed it first evicts, oldest first,
//   blocks that no active reader is still approaching (least recently used first). If that is
//   not enough, every cached block is ahead of some reader: it then evicts the block whose
//   nearest approaching reader is farthest away (Belady's rule, with distance in offsets as
//   the time of next use), and a read-ahead block farther away than everything it would
//   displace is not cached at all. So staggered consumers of the same cold data fetch each
//   block about once instead of once per consumer, and a block every reader has passed is
//   freed first.
// Threading: thread-safe (one mutex); get() blocks the calling read worker while loading.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "base/buffer.h"
#include "base/result.h"

namespace shale::storage {

struct BlockKey {
  int64_t object_id = 0;
  uint32_t index = 0;
  bool operator==(const BlockKey& o) const { return object_id == o.object_id && index == o.index; }
};
struct BlockKeyHash {
  size_t operator()(const BlockKey& k) const {
    return std::hash<int64_t>()(k.object_id) * 31 + k.index;
  }
};

struct BlockSpan {
  int64_t stream_id = 0;
  int64_t start = 0;
  int64_t end = 0;
};

class BlockCache {
 public:
  BlockCache(uint64_t capacity, uint64_t horizon) : capacity_(capacity), horizon_(horizon) {}

  // Returns the block, calling load() (a blocking ranged GET) only if no other thread has it
  // or is loading it. *loaded tells whether the block was not cached yet: this call fetched
  // it, or waited for a fetch in flight (either way the reader stalled on the store).
  Result<Buffer> get(const BlockKey& key, const BlockSpan& span,
                     const std::function<Result<Buffer>()>& load, bool* loaded = nullptr);
  bool contains(const BlockKey& key) const;
  // Adds a block fetched by someone else (read-ahead fetches runs of blocks in one GET).
  void insert(const BlockKey& key, const BlockSpan& span, Buffer data);
  // Read-ahead's single flight: claims `key` (`size` bytes) for loading unless it is cached or
  // already being loaded (kPresent), or the cache would not keep it (kNoRoom: full of blocks
  // that readers need sooner; fetching it would be a wasted GET, and so would every block
  // farther ahead). A reader asking for a claimed block waits for it instead of fetching it
  // again. Every kClaimed must be ended by exactly one finish_load. Modes: kReadAhead as above;
  // kApproached also refuses (kNoRoom) a block no active reader is approaching even when there
  // is room (a merged GET takes other streams' blocks only for readers that will use them),
  // except for a stream no reader has read yet while the cache has free room;
  // kDemand is a reader's miss: the block is needed now (distance 0), so anything may make
  // room for it.
  enum class Claim { kClaimed, kPresent, kNoRoom };
  enum class Mode { kReadAhead, kApproached, kDemand };
  Claim try_claim(const BlockKey& key, const BlockSpan& span, uint64_t size,
                  Mode mode = Mode::kReadAhead);
  // Ends a claimed load: waiting readers get the block (or, on an error, load it themselves),
  // and a fetched block is cached as insert() would.
  void finish_load(const BlockKey& key, const BlockSpan& span, Result<Buffer> r);
  // Sequential reader bookkeeping: a reader of `stream` moved from `from` (-1: new) to `to`.
  void move_reader(int64_t stream, int64_t from, int64_t to, int64_t now_ms);
  void drop_object(int64_t object_id);
  uint64_t bytes() const;
  // Bytes claimed by try_claim and still loading (counted against the capacity, so that many
  // concurrent read-ahead GETs cannot together claim more than fits).
  uint64_t loading_bytes() const;
  // Bytes a new block could have without displacing one an active reader is approaching:
  // free space (claims in flight count as used) plus blocks no reader approaches.
  uint64_t reclaimable_bytes(int64_t now_ms) const;
  // Sequential readers seen within the idle limit (each position counts its readers).
  size_t active_readers(int64_t now_ms) const;
  uint64_t capacity() const { return capacity_; }

 private:
  struct Entry {
    Buffer data;
    BlockSpan span;
    std::list<BlockKey>::iterator lru;
    bool foreign = false;  // taken by a kApproached claim and not read yet
  };
  struct Loading {
    uint64_t claimed = 0;  // bytes reserved by try_claim (0 for get()'s own loads)
    bool foreign = false;  // a kApproached claim
    bool done = false;
    Result<Buffer> result = Error::make(Errc::kInternal, "loading");
    std::condition_variable cv;
  };
  // Offsets from the nearest active reader still approaching the block to its start (0 if a
  // reader is inside it); -1 if no active reader is approaching it.
  int64_t distance_locked(const BlockSpan& s, int64_t now_ms) const;
  // Evicts until `need` more bytes fit. With `incoming` (a read-ahead block), gives up and
  // returns false rather than evict blocks needed sooner than it (then only blocks no reader
  // approaches may have been evicted).
  bool make_room_locked(uint64_t need, const BlockSpan* incoming);
  // Whether make_room_locked(need, &incoming) would succeed, without evicting anything;
  // demand: the incoming block is needed now.
  bool would_admit_locked(uint64_t need, const BlockSpan& incoming, int64_t now_ms,
                          bool demand = false) const;

  uint64_t capacity_;
  uint64_t horizon_;  // offsets: how far ahead of a reader a block counts as "approached"
  mutable std::mutex mu_;
  std::unordered_map<BlockKey, Entry, BlockKeyHash> entries_;
  std::list<BlockKey> lru_;  // front = least recently used
  std::unordered_map<BlockKey, std::shared_ptr<Loading>, BlockKeyHash> loading_;
  // stream -> (reader position -> (reader count at that position, last use))
  std::map<int64_t, std::map<int64_t, std::pair<int, int64_t>>> readers_;
  uint64_t bytes_ = 0;
  uint64_t loading_bytes_ = 0;  // sum of Loading::claimed
  // Blocks fetched for readers of other streams (kApproached), loading or cached and not read
  // yet; and how many such bytes were fetched and how many evicted unread (decayed as blocks
  // are loaded). When more than a quarter (and over capacity / 8) went unread, the cache is too
  // small for the readers' working set (e.g. several consumer groups far apart, each needing a
  // whole stream-set object's worth): kApproached claims are refused for a while, so GETs stay
  // within one stream instead of fetching data twice.
  uint64_t foreign_bytes_ = 0;
  uint64_t foreign_fetched_ = 0;
  uint64_t foreign_wasted_ = 0;
  uint64_t loaded_since_decay_ = 0;
  void drop_entry_locked(std::unordered_map<BlockKey, Entry, BlockKeyHash>::iterator e);
};

}  // namespace shale::storage
