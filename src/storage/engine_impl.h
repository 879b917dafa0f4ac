// EngineImpl / StreamImpl: the implementation behind engine.h. Internal to storage/.
//
// Threads (all owned by the engine):
// - the WAL's threads (inside FileWal: several writer workers, which take turns running append
//   completions; ObjectWal: its flush thread): completions insert into the LogCache and call
//   the user callbacks, one at a time and in WAL order;
// - the uploader: seals LogCache blocks (size / timer / pressure / flush), turns each into
//   objects, commits them in block order, trims the WAL, evicts;
// - read workers (opts.read_threads): object reads through the BlockCache, read-ahead;
// - the background thread: stream closes, the compaction/GC timer.
// Locks, in acquisition order: StreamImpl::mu_ → EngineImpl::cache_mu_; EngineImpl::mu_ (stream
// table), index_mu_ (per-stream object ranges) and health_mu_ (degraded state) are leaves. No lock
// is held while calling the MetaStore, the ObjectStore or a user callback, except mu_ during
// open/create (MetaStore).
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <list>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "meta/meta_store.h"
#include "objstore/object_store.h"
#include "storage/block_cache.h"
#include "storage/engine.h"
#include "storage/log_cache.h"
#include "storage/meta_schema.h"
#include "storage/object_format.h"
#include "storage/wal.h"

namespace shale::storage {

class EngineImpl;

class StreamImpl final : public Stream {
 public:
  StreamImpl(EngineImpl* e, int64_t id, int64_t epoch, const StreamMeta& m);
  int64_t id() const override { return id_; }
  int64_t epoch() const override { return epoch_; }
  int64_t start_offset() const override { return start_.load(); }
  int64_t end_offset() const override { return end_.load(); }
  int64_t next_offset() const override;
  void append(int64_t expected_base, uint32_t count, Buffer payload, AppendCallback done) override;
  void read(int64_t start, int64_t end, size_t max_bytes, ReadCallback done) override;
  Status trim(int64_t new_start_offset) override;
  Status put_meta(const std::string& key, const std::string& value) override;
  Result<std::optional<std::string>> get_meta(const std::string& key) override;
  void close(std::function<void(Status)> done) override;

  enum class State { kOpen, kClosing, kClosed, kFenced };
  void on_durable(int64_t end);
  void on_failed();
  // expected: the owner itself deleted the stream, which is no warning.
  void fence(const char* why, bool expected = false);
  void mark_closed();
  bool wait_idle();  // waits for in-flight appends; false if fenced meanwhile
  State state() const {
    std::lock_guard lk(mu_);
    return state_;
  }

 private:
  EngineImpl* e_;
  const int64_t id_;
  const int64_t epoch_;
  mutable std::mutex mu_;
  std::condition_variable idle_cv_;
  State state_ = State::kOpen;
  int64_t next_;
  int pending_ = 0;
  std::atomic<int64_t> start_;
  std::atomic<int64_t> end_;
};

// One output object of an upload or a compaction.
struct PlannedObject {
  ObjectType type = ObjectType::kStreamSet;
  // stream -> (epoch, records in offset order)
  std::map<int64_t, std::pair<int64_t, std::vector<StreamRecord>>> streams;
  uint64_t bytes = 0;
};

class EngineImpl final : public Engine {
 public:
  EngineImpl(const EngineOptions& opts, objstore::ObjectStore* store, meta::MetaStore* meta);
  ~EngineImpl() override;
  Status start();

  Result<int64_t> create_stream(const StreamOptions& opts) override;
  Result<Stream*> open_stream(int64_t id) override;
  Status delete_stream(int64_t id) override;
  Result<std::map<int64_t, std::map<std::string, std::string>>> list_streams() override;
  Status flush() override;
  Status compact_now() override;
  EngineStats stats() const override;
  EngineHealth health() const override;
  void shutdown() override;

  // --- used by StreamImpl ---
  const EngineOptions& opts() const { return opts_; }
  const Keys& keys() const { return keys_; }
  meta::MetaStore* meta() { return meta_; }
  Status admit(uint64_t bytes);  // LogCache back-pressure
  // On failure the callback has not been called and *done is still usable by the caller.
  Status wal_append(StreamImpl* s, int64_t base, uint32_t count, Buffer payload,
                    std::shared_ptr<AppendCallback> done);
  void read(StreamImpl* s, int64_t start, int64_t end, size_t max_bytes, ReadCallback done);
  // Counts one object GET that returned `bytes` (EngineStats::object_gets, object_get_bytes).
  void note_get(uint64_t bytes);
  void post_background(std::function<void()> fn);
  void forget_stream(int64_t id);
  bool stopping() const { return stopping_.load(); }
  // A refusal (kUnavailable back-pressure) turned into the degraded error while degraded.
  Error refusal(Error e);

 private:
  // engine.cc
  Status recover();
  Result<int64_t> bump_node_epoch();
  void watch_streams();
  void background_loop();
  // upload.cc
  void uploader_loop();
  // Degraded-state bookkeeping, called by the uploader after each attempt.
  void upload_failed(const Error& e, uint64_t bytes);
  void upload_succeeded();
  // Called by a refused append: enters the degraded state if the upload attempt has run for
  // longer than opts_.upload_stall_ms.
  void check_upload_stalled();
  void request_upload();
  Status upload_block(const CacheBlock& block);
  bool fits_txn_limit(size_t ops, size_t ranges) const;
  // One commit's worth of a block's streams (group `group` of block `block_id`, which keys the
  // reuse of prepared object ids when the same group is retried).
  Status upload_streams(std::map<int64_t, std::pair<int64_t, std::vector<StreamRecord>>> data,
                        uint64_t block_id, uint64_t group);
  std::vector<PlannedObject> plan_objects(
      std::map<int64_t, std::pair<int64_t, std::vector<StreamRecord>>> data,
      bool all_stream_objects, uint64_t max_stream_set_bytes = 0);
  Result<int64_t> prepare_objects(size_t n, int64_t ttl_ms);
  Result<uint64_t> write_object(int64_t id, PlannedObject& obj);
  // Writes objs[i] under ids[i], up to opts_.upload_parallelism at a time; sizes in order.
  Result<std::vector<uint64_t>> write_objects(const std::vector<int64_t>& ids,
                                              std::vector<PlannedObject>& objs);
  Status commit_upload(const std::vector<int64_t>& ids, const std::vector<PlannedObject>& objs,
                       const std::vector<uint64_t>& sizes);
  Status put_object(const std::string& key, BufferChain data);
  // read_path.cc
  struct ReadOutcome {
    std::vector<StreamRecord> records;
    bool missed = false;  // some block had to be fetched
  };
  // sequential: the read continues an earlier one (a catch-up reader), so a new object's index
  // is fetched with the object's last merged window (object_index with the stream).
  Result<ReadOutcome> read_objects(int64_t stream, int64_t start, int64_t end, size_t max_bytes,
                                   bool sequential);
  // The object's parsed index (cached). With a stream (read-ahead for it), the GET also
  // brings in the last merged window of the object's data and caches its blocks.
  Result<std::shared_ptr<const ObjectIndex>> object_index(int64_t object_id, uint64_t size,
                                                          int64_t stream = -1);
  Result<Buffer> fetch_block(int64_t object_id, uint32_t index, const DataBlockIndex& b,
                             bool* loaded);
  // Merged reads. Block `anchor` of the object has been claimed (BlockCache::try_claim) by the
  // caller; claims the other blocks of its merged_read_max_ window of the object that are
  // adjacent on disk: blocks of `stream` (below `stream_end`), and blocks of other streams
  // that an active reader is approaching (a stream-set object holds every stream's share of
  // one upload, often well under a MiB each: GETs confined to one stream would be small).
  // Returns the claimed blocks in order, anchor included.
  // Whether merged GETs may take other streams' blocks: the BlockCache's share per active
  // reader holds at least a quarter of a window.
  bool cross_stream_ok() const;
  std::vector<size_t> claim_run(int64_t object_id, const ObjectIndex& idx, size_t anchor,
                                int64_t stream, int64_t stream_end);
  // Issues one GET covering the claimed blocks `run` (asynchronously; waiting readers get them
  // from the BlockCache). With sync, waits and returns block `anchor` (else an empty buffer).
  Result<Buffer> get_run(int64_t object_id, std::shared_ptr<const ObjectIndex> idx,
                         std::vector<size_t> run, bool sync, size_t anchor);
  void readahead(int64_t stream, int64_t from, uint64_t bytes);
  Status load_stream_index(int64_t stream);
  std::optional<RangeRow> find_range(int64_t stream, int64_t offset);
  void post_read(std::function<void()> fn);
  void read_worker();
  // compaction.cc
  Status collect_garbage();
  Status compact_stream_set_objects();
  Status merge_stream_objects();
  Status rewrite_objects(const std::vector<std::pair<int64_t, meta::KeyValue>>& sources,
                         bool all_stream_objects);

  friend class StreamImpl;

  EngineOptions opts_;
  objstore::ObjectStore* store_;
  meta::MetaStore* meta_;
  Keys keys_;
  int64_t node_epoch_ = 0;
  std::unique_ptr<Wal> wal_;

  std::mutex mu_;  // streams_, closed_
  std::map<int64_t, std::unique_ptr<StreamImpl>> streams_;
  std::vector<std::unique_ptr<StreamImpl>> closed_;  // kept so old Stream* stay valid
  int64_t watch_id_ = 0;

  // LogCache and upload state.
  std::mutex cache_mu_;
  std::condition_variable upload_cv_;   // wakes the uploader
  std::condition_variable flushed_cv_;  // wakes flush() waiters
  LogCache cache_;
  std::atomic<uint64_t> inflight_bytes_{0};
  std::atomic<int64_t> inflight_appends_{0};
  bool force_upload_ = false;
  uint64_t uploaded_block_ = 0;  // highest block id uploaded
  uint64_t upload_errors_ = 0;
  Error last_upload_error_;
  bool uploader_stop_ = false;
  std::thread uploader_;

  // Object ranges of open streams: stream -> end offset -> row.
  std::mutex index_mu_;
  std::map<int64_t, std::map<int64_t, RangeRow>> index_;
  std::map<int64_t, std::shared_ptr<const ObjectIndex>> object_indexes_;  // small LRU-ish
  std::list<int64_t> object_index_order_;
  std::set<int64_t> index_loading_;  // objects whose index a thread is fetching
  uint64_t object_index_bytes_ = 0;  // approximate bytes of object_indexes_
  std::condition_variable index_cv_;
  BlockCache block_cache_;
  uint64_t merged_read_max_;  // largest merged GET: block_cache_size / 4 within [512 KiB, 8 MiB]
  // Sequential readers: (stream, next offset) -> (read-ahead size, readers at that offset).
  std::mutex readers_mu_;
  std::map<std::pair<int64_t, int64_t>, std::pair<uint64_t, int>> readers_;

  // Read workers.
  std::mutex read_mu_;
  std::condition_variable read_cv_;
  std::deque<std::function<void()>> read_q_;
  bool read_stop_ = false;
  std::vector<std::thread> read_threads_;
  // Read-ahead GETs in flight (their callbacks touch the BlockCache): shutdown waits for them.
  std::mutex readahead_mu_;
  std::condition_variable readahead_cv_;
  int64_t readahead_gets_ = 0;

  // Background thread: closes and the compaction timer.
  std::mutex bg_mu_;
  std::condition_variable bg_cv_;
  std::deque<std::function<void()>> bg_q_;
  bool bg_stop_ = false;
  std::thread bg_;
  std::mutex compact_mu_;  // one compaction/GC round at a time

  // Health: degraded_ is read on every refused append; the rest under health_mu_.
  std::atomic<bool> degraded_{false};
  mutable std::mutex health_mu_;
  EngineHealth health_;
  // Object ids prepared for the block being retried (block id, first id, count): a run of
  // failed attempts reuses them instead of preparing new ones each time.
  // Largest object of the current/last upload attempt (written by the uploader).
  std::atomic<uint64_t> last_upload_need_{0};
  // When the running upload attempt started (clock::mono_ms), 0 when none runs: a refused
  // append finding it older than opts_.upload_stall_ms makes the engine degraded at once
  // instead of after the store's own retries and timeouts (minutes for a store that hangs).
  std::atomic<int64_t> upload_started_ms_{0};
  uint64_t retry_block_ = 0;
  uint64_t retry_group_ = 0;
  int64_t retry_first_id_ = 0;
  size_t retry_ids_ = 0;

  std::atomic<uint64_t> upload_buffer_bytes_{0};  // objects being built or written
  std::atomic<bool> stopping_{false};
  std::atomic<bool> shut_down_{false};
  mutable std::mutex stats_mu_;
  EngineStats stats_;
};

}  // namespace shale::storage
