// The stream storage engine: the public API the broker uses (see README.md in this folder).
//
// One Engine per broker owns the WAL, the LogCache, the BlockCache, the uploader, the
// compactor and every open Stream. A Stream is one append-only log of dense offsets (one per
// Kafka partition, plus optional side streams such as a time index).
//
// Durability: append()'s callback reports success only after the record is durable in the WAL
// (fdatasync / O_DSYNC completed). Reads see only durable data (below end_offset()).
// Fencing: open_stream() bumps the stream's epoch in the MetaStore; every object commit and
// every side-key write compares the epoch, so a stale owner elsewhere can no longer commit.
//
// Threading: Engine and Stream methods are thread-safe and never block on I/O, except
// Engine::open, create_stream, open_stream, delete_stream, Stream::trim, put_meta/get_meta and
// shutdown, which call the MetaStore (blocking: do not call them on an event-loop thread).
// Callbacks run on engine-owned threads (the WAL completion thread for appends, a read worker
// for reads that needed object I/O) or inline when the result is known at once (errors, reads
// served from the LogCache). Callbacks must not block; post back to your own loop.
// Lifetime: a Stream* stays valid until the Engine is destroyed; after close() it refuses work.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/buffer.h"
#include "base/result.h"

namespace shale::objstore {
class ObjectStore;
}
namespace shale::meta {
class MetaStore;
}

namespace shale::storage {

class FileSystem;

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * kKiB;
constexpr uint64_t kGiB = 1024 * kMiB;

// Storage configuration; names in comments are the server.properties keys (AutoMQ's).
struct EngineOptions {
  int32_t node_id = 0;
  std::string ns = "shale";  // namespace of MetaStore keys and object names (one per cluster)
  // s3.wal.path: "file:///abs/path" (preallocated ring file) or "object://<prefix>" (object WAL
  // in the engine's ObjectStore, for diskless deployments).
  std::string wal_path;
  uint64_t wal_capacity = 2 * kGiB;            // s3.wal.capacity (file WAL ring size)
  bool wal_direct_io = true;                   // O_DIRECT|O_DSYNC (falls back to write+fdatasync)
  uint64_t wal_max_write = 4 * kMiB;           // largest group-commit write
  int64_t object_wal_batch_interval_ms = 250;  // object WAL: max wait before a PUT
  uint64_t object_wal_batch_bytes = 8 * kMiB;  // object WAL: PUT once a batch is this big
  uint64_t object_wal_max_unflushed = 0;       // object WAL: queued bytes (0: log_cache_size)
  // The object WAL's store when it is not the data store (AutoMQ's S3 WAL may name another
  // bucket); nullptr = the data store. Must outlive the engine.
  objstore::ObjectStore* wal_store = nullptr;
  uint64_t log_cache_size = 512 * kMiB;      // s3.wal.cache.size
  uint64_t block_cache_size = 256 * kMiB;    // s3.block.cache.size
  uint64_t upload_threshold = 0;             // s3.wal.upload.threshold (0: min(cache/3, 500M))
  int64_t upload_interval_ms = 60000;        // s3.wal.upload.interval.ms (-1: size only)
  uint64_t stream_split_size = 8 * kMiB;     // s3.stream.object.split.size
  uint64_t object_block_size = 512 * kKiB;   // s3.object.block.size
  uint64_t object_part_size = 16 * kMiB;     // s3.object.part.size (multipart above 2x this)
  int64_t prepared_object_ttl_ms = 3600000;  // prepared but uncommitted objects expire
  int64_t object_delete_delay_ms = 60000;    // s3.object.delete.retention (grace for readers)
  int64_t compaction_interval_ms = 300000;   // s3.stream.set.object.compaction.interval
  uint64_t max_readahead = 32 * kMiB;        // catch-up read-ahead ceiling
  int read_threads = 2;                      // workers for object reads
  // Objects of one upload written at once. 1 by default: with the WAL and a POSIX object store
  // on one disk, 4 concurrent 32 MiB writes+fsyncs starved the WAL (bench/vs-kafka tail read:
  // 200 msg/s sustained with 4, 800 with 1). Raise it for S3 or a separate object disk.
  int upload_parallelism = 1;
  // An upload attempt still running after this long while appends are refused (WAL or
  // LogCache full) makes the engine degraded (cause object_store_unavailable) without waiting
  // for the attempt to fail — an S3 endpoint that hangs fails it only after its timeouts.
  int64_t upload_stall_ms = 10000;
  FileSystem* fs = nullptr;  // nullptr: the real POSIX file system
};

struct AppendResult {
  int64_t base_offset = 0;
  int64_t end_offset = 0;  // exclusive
};

// One appended batch as stored: `count` offsets [base_offset, base_offset + count).
struct StreamRecord {
  int64_t base_offset = 0;
  uint32_t count = 0;
  Buffer payload;  // opaque to the engine (for the Kafka log stream: one record batch)
  int64_t end_offset() const { return base_offset + count; }
};

struct StreamOptions {
  std::map<std::string, std::string> tags;  // e.g. {"topic", "..."}, {"partition", "3"}
};

struct EngineStats {
  uint64_t wal_bytes_written = 0;
  uint64_t wal_writes = 0;  // group-commit writes (each followed by a sync)
  uint64_t wal_used_bytes = 0;
  uint64_t log_cache_bytes = 0;
  uint64_t log_cache_unuploaded_bytes = 0;
  uint64_t block_cache_bytes = 0;
  uint64_t block_cache_loading_bytes = 0;  // claimed by GETs in flight (counted in the capacity)
  uint64_t object_index_cache_bytes = 0;   // parsed object indexes kept for reads
  uint64_t upload_buffer_bytes = 0;        // objects being built/written (uploads, compaction)
  uint64_t object_puts = 0;
  uint64_t object_gets = 0;        // GETs issued (data runs, single blocks, object indexes)
  uint64_t object_get_bytes = 0;   // bytes those GETs returned
  uint64_t object_read_bytes = 0;  // payload bytes of records served to readers from objects
  uint64_t objects_uploaded = 0;
  uint64_t bytes_uploaded = 0;
  uint64_t appends_refused = 0;  // back-pressure refusals
  uint64_t compactions = 0;
  uint64_t objects_deleted = 0;
};

// Why the engine is degraded (docs/operations.md, "Degraded states"): uploads of the WAL's data
// into the object store keep failing, so the WAL cannot drain and, once full, refuses appends.
enum class DegradedCause {
  kNone,
  kObjectStoreFull,          // the object store's disk is full (ENOSPC/EDQUOT), or the meta DB's
  kObjectStoreUnavailable,   // unreachable, timing out, 5xx / SlowDown
  kObjectStoreAccessDenied,  // credentials refused (403)
  kObjectStoreError,         // any other failure of an upload
};
const char* degraded_cause_name(DegradedCause c);  // "none", "object_store_full", ...

// The engine's health. Degraded from the first failed upload attempt (the object store clients
// have already retried transient errors by then), or from an append refused while an upload
// attempt has run longer than upload_stall_ms, until the next upload commits.
struct EngineHealth {
  bool degraded = false;
  DegradedCause cause = DegradedCause::kNone;
  std::string detail;            // the last upload error
  std::string store;             // the object store ("file:///...", "s3://...")
  int64_t since_ms = 0;          // wall clock when the state was entered (0: not degraded)
  uint64_t bytes_needed = 0;     // size of the upload that failed (what must fit)
  uint64_t upload_failures = 0;  // failed upload attempts in this degraded period
  bool wal_full = false;         // appends are being refused right now
};

using AppendCallback = std::function<void(Result<AppendResult>)>;
using ReadCallback = std::function<void(Result<std::vector<StreamRecord>>)>;

class Engine;

class Stream {
 public:
  virtual ~Stream() = default;
  virtual int64_t id() const = 0;
  virtual int64_t epoch() const = 0;
  virtual int64_t start_offset() const = 0;
  // End of the durable prefix: reads are allowed in [start_offset, end_offset).
  virtual int64_t end_offset() const = 0;
  // Next offset to assign (end_offset plus appends in flight).
  virtual int64_t next_offset() const = 0;

  // Appends `count` offsets carried by payload. expected_base must equal next_offset() (the
  // broker wrote the offset into the batch first); otherwise kInvalidArgument. Errors:
  // kUnavailable (retryable: LogCache or WAL full — back-pressure while uploads are healthy),
  // kNoSpace (retryable: LogCache or WAL full and the engine is degraded — uploads are failing,
  // see Engine::health(); the message names the cause), kFenced (the stream was
  // opened elsewhere or an earlier append failed), kShutdown, kIoError. Callbacks complete in
  // append order.
  virtual void append(int64_t expected_base, uint32_t count, Buffer payload,
                      AppendCallback done) = 0;
  // Records covering [start, end) up to about max_bytes (always at least one record if any).
  // The first record may start before `start` (a batch is never split). kOutOfRange unless
  // start_offset() <= start < end <= end_offset().
  virtual void read(int64_t start, int64_t end, size_t max_bytes, ReadCallback done) = 0;
  // Moves start_offset forward (never back); data below becomes unreadable and is deleted.
  virtual Status trim(int64_t new_start_offset) = 0;
  // Small durable key/values owned by the stream (producer-state snapshots, leader-epoch
  // checkpoints, partition metadata). Writes are fenced by the stream epoch.
  virtual Status put_meta(const std::string& key, const std::string& value) = 0;
  virtual Result<std::optional<std::string>> get_meta(const std::string& key) = 0;
  // Waits for pending appends, uploads this stream's WAL data, marks it closed in the
  // MetaStore. Then the stream refuses appends and reads.
  virtual void close(std::function<void(Status)> done) = 0;
};

class Engine {
 public:
  // Opens (creating on first use) the WAL, recovers records not yet in committed objects,
  // uploads and commits them, and starts the background threads.
  static Result<std::unique_ptr<Engine>> open(const EngineOptions& opts,
                                              objstore::ObjectStore* store, meta::MetaStore* meta);
  virtual ~Engine() = default;

  virtual Result<int64_t> create_stream(const StreamOptions& opts) = 0;
  // Opens a stream for writing on this node, bumping its epoch (fencing any previous owner).
  // Opening a stream already open here returns the same Stream*.
  virtual Result<Stream*> open_stream(int64_t id) = 0;
  // Deletes a stream (open or closed); its objects are deleted after the grace delay.
  virtual Status delete_stream(int64_t id) = 0;
  // Streams known to the MetaStore: id → tags.
  virtual Result<std::map<int64_t, std::map<std::string, std::string>>> list_streams() = 0;

  // Uploads everything in the LogCache and waits for the commits (tests, close, shutdown).
  virtual Status flush() = 0;
  // Runs one compaction + garbage-collection round now (normally on a timer).
  virtual Status compact_now() = 0;
  virtual EngineStats stats() const = 0;
  virtual EngineHealth health() const = 0;
  // Graceful: refuses new appends, waits for in-flight ones, uploads everything so the WAL is
  // empty, and stops the threads. Idempotent; the destructor calls it.
  virtual void shutdown() = 0;
};

}  // namespace shale::storage
