// ObjectStore: the asynchronous interface to immutable objects in a bucket (S3-compatible
// service, POSIX directory, or memory for unit tests). Objects are written whole (put, or a
// multipart upload for large ones), read by byte range, listed by prefix and deleted in batches.
//
// Threading: every method may be called from any thread and returns at once. The callback runs
// exactly once, on a thread owned by the store (or inline on the calling thread when the result
// is known at once); callers that own state on an event loop must post back to it. Callbacks
// must not block.
// Errors: Result/Status; Error::retryable tells whether the same call may succeed later (5xx,
// SlowDown, timeouts, resets). A backend never crashes on a response, whatever it contains.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/buffer.h"
#include "base/result.h"

namespace shale::objstore {

struct ObjectInfo {
  std::string key;
  uint64_t size = 0;
  int64_t mtime_ms = 0;
};

// A byte range [offset, offset + length). length == kToEnd reads to the end of the object.
struct Range {
  static constexpr uint64_t kToEnd = ~0ull;
  uint64_t offset = 0;
  uint64_t length = kToEnd;
};

// Per-store counters for metrics and benchmarks (a snapshot; see counters.h). Counts are of
// logical operations the caller asked for; retries of one operation are counted in `retries`.
struct StoreStats {
  uint64_t puts = 0;       // put() calls plus completed multipart uploads
  uint64_t gets = 0;       // get() calls
  uint64_t deletes = 0;    // keys passed to remove()
  uint64_t lists = 0;      // list() calls
  uint64_t put_bytes = 0;  // bytes written by successful puts and parts
  uint64_t get_bytes = 0;  // bytes returned by successful gets
  uint64_t errors = 0;     // operations that ended in an error
  uint64_t retries = 0;    // requests re-sent after a retryable failure
  uint64_t requests = 0;   // requests sent to the backend (HTTP requests for S3)
};

using StatusCallback = std::function<void(Status)>;
using GetCallback = std::function<void(Result<Buffer>)>;
using ListCallback = std::function<void(Result<std::vector<ObjectInfo>>)>;

// An upload of one object in parts (each but the last at least 5 MiB for S3). The object
// becomes visible only when complete() succeeds; abort() discards the parts.
class MultipartUpload {
 public:
  virtual ~MultipartUpload() = default;
  // part_number starts at 1. Parts may be uploaded concurrently.
  virtual void upload_part(int part_number, BufferChain data, StatusCallback done) = 0;
  virtual void complete(StatusCallback done) = 0;
  virtual void abort(StatusCallback done) = 0;
};
using MultipartCallback = std::function<void(Result<std::unique_ptr<MultipartUpload>>)>;

class ObjectStore {
 public:
  virtual ~ObjectStore() = default;

  // Writes a whole object; it is visible to readers only once done(ok) runs.
  virtual void put(const std::string& key, BufferChain data, StatusCallback done) = 0;
  // Reads a byte range. A range past the end is clamped; a missing key is kNotFound.
  virtual void get(const std::string& key, Range range, GetCallback done) = 0;
  // Deletes keys (missing keys are not an error).
  virtual void remove(std::vector<std::string> keys, StatusCallback done) = 0;
  // Lists every object whose key starts with prefix, in key order.
  virtual void list(const std::string& prefix, ListCallback done) = 0;
  // Starts a multipart upload.
  virtual void create_multipart(const std::string& key, MultipartCallback done) = 0;

  // True where a multipart upload gains nothing and costs space: the POSIX store copies the
  // parts into one file at complete(), needing twice the object's size. Callers then put()
  // objects of any size.
  virtual bool prefers_single_put() const { return false; }

  // A short description for logs ("s3://bucket", "file:///data/objects", "memory").
  virtual std::string describe() const = 0;

  // Counters since the store was created. Backends that do not count return zeros.
  virtual StoreStats stats() const { return {}; }
};

// Blocking helpers for tests, tools and cold paths. Never call them on an event-loop thread.
Status put_sync(ObjectStore& s, const std::string& key, BufferChain data);
Result<Buffer> get_sync(ObjectStore& s, const std::string& key, Range range = {});
Status remove_sync(ObjectStore& s, std::vector<std::string> keys);
Result<std::vector<ObjectInfo>> list_sync(ObjectStore& s, const std::string& prefix);

}  // namespace shale::objstore
