// FileWal: the WAL as a preallocated ring file (brief §3.3, simplified as its Shale notes
// suggest; format in docs/formats.md).
//
// Layout: two 4 KiB header slots (A at 0, B at 4096; written alternately, newest valid wins),
// then a ring of (capacity - 8192) bytes. Logical offset o lives at 8192 + o % ring. Each
// group-commit write is one 4 KiB-aligned block of packed records (24-byte record header with
// CRC32C of header and body, body offset = logical offset + 24); padding to the 4 KiB
// boundary is zero. A block never wraps: it moves to the next ring cycle instead.
//
// Group commit: appends queue in memory; one WAL thread takes everything queued (up to
// wal_max_write), writes it with one pwrite and makes it durable (fdatasync, or O_DIRECT|O_DSYNC),
// then completes the callbacks in order. While it syncs, new appends pile up for the next write,
// so the batch size adapts to load. Exactly one write is in flight, so a torn write can only
// be the last block, which recovery detects by CRC and body offset and stops at.
// Trim: the header (trim offset) is written and synced by the WAL thread before any space it
// frees is reused, so recovery never starts from a point whose records were overwritten.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "storage/file.h"
#include "storage/wal.h"

namespace shale::storage {

struct FileWalOptions {
  std::string path;
  uint64_t capacity = 2ull << 30;  // whole file, rounded down to 4 KiB
  bool direct_io = false;          // O_DIRECT|O_DSYNC; falls back to buffered if the FS refuses it
  uint64_t max_write = 4ull << 20;
  int32_t node_id = 0;
  int64_t node_epoch = 0;
  FileSystem* fs = nullptr;
};

class FileWal final : public Wal {
 public:
  static constexpr uint64_t kAlign = 4096;
  static constexpr uint64_t kHeaderArea = 2 * kAlign;
  static constexpr size_t kRecordHeader = 24;
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

 private:
  struct Pending {
    Buffer head, body;
    WalCallback done;
    uint64_t end = 0;
  };
  explicit FileWal(FileWalOptions opts);
  Status load_header();
  Status write_header(uint64_t trim);
  void run();
  void fail_all(std::deque<Pending>* batch, const Error& e);

  FileWalOptions opts_;
  uint64_t ring_ = 0;
  std::unique_ptr<File> file_;
  uint64_t header_seq_ = 0;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending> queue_;
  uint64_t queued_bytes_ = 0;
  uint64_t write_pos_ = 0;     // logical offset where the next block starts
  uint64_t durable_trim_ = 0;  // trim offset persisted in the header
  uint64_t trim_req_ = 0;      // highest trim asked for
  bool writable_ = false;      // after reset()
  bool stop_ = false;
  bool failed_ = false;
  Error fail_error_;
  WalStats stats_;
  std::thread thread_;
};

}  // namespace shale::storage
