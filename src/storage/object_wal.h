// ObjectWal: the WAL kept in the object store, for diskless deployments (docs/storage.md,
// s3.wal.path=object://<prefix>). Records are batched (by batch_interval_ms or batch_bytes)
// and each batch becomes one object:
//   key  <prefix>/<node>/<node epoch:016x>/<start:016x>
//   body header (48 B: magic, start, length, node, epoch, reserved, CRC) + records framed as
//        in the file WAL (24-byte header with CRC32C, body offset = logical offset + 24).
// Logical offsets restart at 0 for every node epoch (the epoch is part of the key).
//
// Fencing: at start the writer writes its node epoch into <prefix>/<node>/reservation; after
// every PUT, before completing any append, it re-reads the reservation. If a newer owner
// (a restart, or a failover that took over this node's WAL) has rewritten it, the WAL fails and
// nothing more is acknowledged, so a stale writer can never have acknowledged data the new
// owner's recovery listing could miss.
// Trim: objects whose records all end at or below the trim offset are deleted. Recovery lists
// the node's objects, orders them by (epoch, start) and replays each epoch's contiguous run.
// Threading: one writer thread does PUTs, checks and completions, in order.
#pragma once

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "objstore/object_store.h"
#include "storage/wal.h"

namespace shale::storage {

struct ObjectWalOptions {
  std::string prefix;  // key prefix in the store, e.g. "wal"
  int32_t node_id = 0;
  int64_t node_epoch = 1;  // must grow with every start of this node
  int64_t batch_interval_ms = 250;
  uint64_t batch_bytes = 8ull << 20;
  uint64_t max_unflushed = 1ull << 30;  // queued bytes before appends are refused
};

class ObjectWal final : public Wal {
 public:
  static constexpr size_t kObjectHeader = 48;
  static Result<std::unique_ptr<ObjectWal>> open(const ObjectWalOptions& opts,
                                                 objstore::ObjectStore* store);
  ~ObjectWal() override;

  Result<std::vector<WalRecord>> recover() override;
  Status reset() override;
  Status append(Buffer head, Buffer body, WalCallback done) override;
  void trim(uint64_t offset) override;
  WalStats stats() const override;
  void shutdown() override;

 private:
  struct Pending {
    Buffer head, body;
    WalCallback done;
  };
  ObjectWal(ObjectWalOptions opts, objstore::ObjectStore* store);
  std::string node_prefix() const;
  std::string object_key(int64_t epoch, uint64_t start) const;
  Status verify_reservation();
  void run();
  void delete_trimmed(uint64_t trim);

  ObjectWalOptions opts_;
  objstore::ObjectStore* store_;
  std::vector<std::string> recovered_keys_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending> queue_;
  uint64_t queued_bytes_ = 0;
  int64_t first_queued_ms_ = 0;
  uint64_t next_offset_ = 0;
  uint64_t trim_ = 0;
  uint64_t trimmed_ = 0;                  // trim already applied to the store
  std::map<uint64_t, uint64_t> objects_;  // start -> end of this epoch's live objects
  bool writable_ = false;
  bool stop_ = false;
  bool failed_ = false;
  Error fail_error_;
  WalStats stats_;
  std::thread thread_;
};

}  // namespace shale::storage
