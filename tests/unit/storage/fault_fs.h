// FaultFs: a FileSystem wrapper for tests that can fail chosen operations on purpose — torn
// writes (only a prefix of the bytes reaches the file), ENOSPC, fsync failure — after
// LevelDB's fault-injection Env. Thread-safe (atomics); wraps the real POSIX file system.
#pragma once

#include <atomic>
#include <functional>
#include <memory>

#include "storage/file.h"

namespace shale::storage::testing {

struct Faults {
  std::atomic<int> fail_write_after{-1};  // >= 0: that many writes succeed, then ENOSPC
  std::atomic<int> torn_write_after{-1};  // >= 0: that many writes succeed, next one is torn
  std::atomic<size_t> torn_bytes{100};    // bytes of the torn write that reach the file
  std::atomic<int> fail_sync_after{-1};   // >= 0: that many syncs succeed, then EIO
  std::atomic<int> writes{0};
  std::atomic<int> writes_done{0};  // writes that returned (success or not)
  std::atomic<int> syncs{0};
  // Runs before write number k (0-based, counted by `writes`) on the writing thread; it may
  // block to hold the write back (tests reorder completions with it), and a non-ok status
  // fails the write without touching the file. Set it while no write is running.
  std::function<Status(int k, uint64_t off, size_t n)> before_write;
};

class FaultFile final : public File {
 public:
  FaultFile(std::unique_ptr<File> f, Faults* faults) : f_(std::move(f)), x_(faults) {}
  Status write_at(const void* buf, size_t n, uint64_t off) override {
    int k = x_->writes++;
    Status st = write(k, buf, n, off);
    ++x_->writes_done;
    return st;
  }
  Result<size_t> read_at(void* buf, size_t n, uint64_t off) override {
    return f_->read_at(buf, n, off);
  }
  Status sync() override {
    int k = x_->syncs++;
    if (x_->fail_sync_after >= 0 && k >= x_->fail_sync_after) {
      return Error::make(Errc::kIoError, "injected fsync EIO");
    }
    return f_->sync();
  }
  Result<uint64_t> size() override { return f_->size(); }

 private:
  Status write(int k, const void* buf, size_t n, uint64_t off) {
    if (x_->before_write) {
      Status st = x_->before_write(k, off, n);
      if (!st.ok()) return st;
    }
    if (x_->fail_write_after >= 0 && k >= x_->fail_write_after) {
      return Error::make(Errc::kNoSpace, "injected ENOSPC", true);
    }
    if (x_->torn_write_after >= 0 && k == x_->torn_write_after) {
      (void)f_->write_at(buf, std::min<size_t>(n, x_->torn_bytes), off);
      return Error::make(Errc::kIoError, "injected torn write");
    }
    return f_->write_at(buf, n, off);
  }

  std::unique_ptr<File> f_;
  Faults* x_;
};

class FaultFs final : public FileSystem {
 public:
  Faults faults;
  Result<std::unique_ptr<File>> open(const std::string& path, const OpenOptions& o) override {
    auto f = posix_fs()->open(path, o);
    if (!f.ok()) return f;
    return std::unique_ptr<File>(new FaultFile(std::move(f).value(), &faults));
  }
  Status preallocate(const std::string& path, uint64_t size) override {
    return posix_fs()->preallocate(path, size);
  }
  bool exists(const std::string& path) override { return posix_fs()->exists(path); }
  Status create_dirs(const std::string& path) override { return posix_fs()->create_dirs(path); }
};

}  // namespace shale::storage::testing
