// Wal: the contract shared by the file (ring) WAL and the object-store WAL (docs/storage.md).
//
// Records are opaque byte strings (encoded stream records). Each gets a logical, ever-growing
// WAL offset; `end` of a record is the logical offset just past it. The engine trims by `end`
// offsets once the records' data is committed in objects.
//
// Ordering: append callbacks run in append order on a WAL-owned thread (one at a time; the file
// WAL's workers take turns), only after the record and every earlier one are durable, or with
// an error. After any write/sync failure the WAL is failed for good: the failed record and
// every later one fail with kIoError, even if they reached the disk (the kernel may have
// dropped dirty pages after a failed fsync, so retrying cannot prove durability); reopen to
// recover.
// Threading: append/trim/stats are thread-safe; recover/reset/shutdown are called by the
// engine's owner thread, before appends start / at the end.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "base/buffer.h"
#include "base/result.h"

namespace shale::storage {

struct WalRecord {
  uint64_t end = 0;  // logical offset just past the record
  Buffer body;
};

struct WalStats {
  uint64_t bytes_written = 0;
  uint64_t writes = 0;
  uint64_t used_bytes = 0;  // untrimmed bytes (file WAL: ring usage)
};

using WalCallback = std::function<void(Result<uint64_t>)>;  // the record's end offset

class Wal {
 public:
  virtual ~Wal() = default;
  // Reads every record after the persisted trim point, in order, stopping safely at the first
  // torn or corrupt record. Call once, before any append.
  virtual Result<std::vector<WalRecord>> recover() = 0;
  // Discards everything recovered (after the engine uploaded it) and makes the WAL writable.
  virtual Status reset() = 0;
  // Appends head+body as one record. kUnavailable (retryable) when the WAL is full: the caller
  // should force an upload (which trims) and retry later. The callback is not called then.
  virtual Status append(Buffer head, Buffer body, WalCallback done) = 0;
  // Records whose end <= offset may be discarded. Durable before their space is reused.
  virtual void trim(uint64_t offset) = 0;
  virtual WalStats stats() const = 0;
  // Completes queued appends, then stops the thread.
  virtual void shutdown() = 0;
};

}  // namespace shale::storage
