// FileWal: the WAL as a preallocated ring file (simplified from AutoMQ's block WAL;
// format in docs/formats.md, reasoning in docs/storage.md).
//
// Layout: two 4 KiB header slots (A at 0, B at 4096; written alternately, newest valid wins),
// then a ring of (capacity - 8192) bytes. Logical offset o lives at 8192 + o % ring. Each
// group-commit write is one 4 KiB-aligned block: a 32-byte block header (its own logical
// offset, the end of the block before it, record count and length, CRC) followed by packed
// records (24-byte record header with CRC32C of header and body, body offset = logical offset
// + 24); padding to the 4 KiB boundary is zero. A block never wraps: it moves to the next ring
// cycle instead.
//
// Several writes in flight: `max_inflight` worker threads share the queue. An idle worker
// takes everything queued (up to max_write) as a block, assigns it the next ring position,
// encodes and writes it (O_DIRECT|O_DSYNC: durable when pwrite returns). Blocks complete in any
// order; they are acknowledged strictly in position order, by whichever worker finds the head
// of the in-flight list done (one at a time), so an append's callback runs only after it and
// every earlier record is durable. Batches adapt to load: a block starts as soon as a worker is
// free, so light load gives one record per write (latency) and heavy load, with every worker
// busy, lets the queue grow into large blocks (throughput). In the buffered fallback (write +
// fdatasync, used where O_DIRECT is refused, e.g. NFS) one write is in flight: concurrent
// fdatasyncs on one file can each miss the other's writeback error.
//
// Recovery reads block by block from the persisted scan start and stops at the first block
// that is missing, torn or corrupt — a later block that happens to be durable is never
// recovered past that gap (it was never acknowledged). A block is valid only if its header
// names its own logical offset (stale data from an earlier ring cycle cannot match) and every
// record in it is intact; a block at the start of the next ring cycle must also name the
// current position as its predecessor's end, so a torn block before a wrapped one is a gap.
// Trim: the header (trim offset, and the start of the block holding the first untrimmed record,
// where recovery scans from) is written and made durable by a WAL worker before any space it
// frees is reused. Threads: the workers; one at a time runs callbacks (acking_) and one at a
// time writes the header (trimming_); a block being written belongs to its worker until done.
// All shared state is under mu_.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "storage/file.h"
#include "storage/wal.h"

namespace shale::storage {

struct FileWalOptions {
  std::string path;
  uint64_t capacity = 2ull << 30;  // whole file, rounded down to 4 KiB
  bool direct_io = false;          // O_DIRECT|O_DSYNC; falls back to buffered if the FS refuses it
  uint64_t max_write = 4ull << 20;
  uint32_t max_inflight = 4;  // writes in flight with O_DIRECT (buffered: always 1)
  int32_t node_id = 0;
  int64_t node_epoch = 0;
  FileSystem* fs = nullptr;
};

class FileWal final : public Wal {
 public:
  static constexpr uint64_t kAlign = 4096;
  static constexpr uint64_t kHeaderArea = 2 * kAlign;
  static constexpr size_t kBlockHeader = 32;
  static constexpr size_t kRecordHeader = 24;
  static constexpr uint32_t kBlockMagic = 0x5357424B;  // "SWBK"
  static constexpr uint32_t kRecordMagic = 0x87654321;

  // Creates (preallocates) the file if missing; an existing file must have the same capacity.
  static Result<std::unique_ptr<FileWal>> open(const FileWalOptions& opts);
  ~FileWal() override;

  Result<std::vector<WalRecord>> recover() override;
  Status reset() override;
  Status append(Buffer head, Buffer body, WalCallback done) override;
  void trim(uint64_t offset) override;
  WalStats stats() const override;
  void shutdown() override;

  // Writes in flight at most (1 in the buffered fallback).
  uint32_t max_inflight() const { return inflight_limit_; }

 private:
  struct Pending {
    Buffer head, body;
    WalCallback done;
    uint64_t end = 0;
  };
  // One group-commit write. Owned by inflight_ from dispatch until it is acknowledged.
  struct Block {
    uint64_t at = 0;        // logical offset of the block header
    uint64_t prev_end = 0;  // logical end of the block before it (differs from at after a wrap)
    uint64_t records = 0;   // bytes of records (after the block header)
    uint64_t span = 0;      // 4 KiB-aligned bytes written
    std::vector<Pending> recs;
    bool done = false;
    Status st;
  };
  struct Acked {
    uint64_t at, rec_end;  // block start, end of its last record
  };
  explicit FileWal(FileWalOptions opts);
  Status load_header();
  Status write_header(uint64_t trim, uint64_t scan);
  void worker();
  // Encodes b into the aligned scratch buffer (an AlignedBuf) and writes it durably.
  Status write_block(Block* b, void* scratch);

  FileWalOptions opts_;
  uint64_t ring_ = 0;
  uint32_t inflight_limit_ = 1;
  std::unique_ptr<File> file_;
  uint64_t header_seq_ = 0;

  mutable std::mutex mu_;
  std::condition_variable cv_;  // wakes idle workers
  std::deque<Pending> queue_;
  uint64_t queued_bytes_ = 0;
  std::deque<std::unique_ptr<Block>> inflight_;  // in position order
  std::deque<Acked> acked_;                      // acknowledged blocks not yet trimmed away
  uint64_t acked_end_ = 0;                       // end (at + span) of the last acknowledged block
  uint64_t acked_rec_end_ = 0;                   // end of the last acknowledged record
  uint64_t write_pos_ = 0;                       // logical end of the last dispatched block
  uint64_t durable_trim_ = 0;                    // trim offset persisted in the header
  uint64_t durable_scan_ = 0;  // scan start persisted in the header (space before it is free)
  uint64_t trim_req_ = 0;      // highest trim asked for
  bool writable_ = false;      // after reset()
  bool stop_ = false;
  bool blocked_ = false;   // the next block does not fit until a trim frees space
  bool acking_ = false;    // a worker is running callbacks (one at a time keeps them in order)
  bool trimming_ = false;  // a worker is writing the header
  bool failed_ = false;
  uint64_t fail_at_ = UINT64_MAX;  // position of the first failed block: it and later ones fail
  Error fail_error_;
  WalStats stats_;
  std::vector<std::thread> workers_;
};

}  // namespace shale::storage
