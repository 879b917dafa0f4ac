// FileSystem / File: every disk access the storage engine makes goes through these, so tests
// can inject torn writes, ENOSPC and fsync failures (tests/unit/storage/fault_fs.h), after
// LevelDB's Env. The POSIX implementation uses plain pread/pwrite/fdatasync (no mmap), so it
// works on local disks and NFS alike.
// Threading: write_at/read_at may run on several threads at once (pread/pwrite carry their own
// offsets; the WAL's writer threads write disjoint ranges); sync is called by one thread at a
// time. FileSystem methods are thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "base/result.h"

namespace shale::storage {

class File {
 public:
  virtual ~File() = default;
  // Writes all n bytes at offset (retrying short writes); with O_DIRECT, buf, n and offset must
  // be 4 KiB aligned.
  virtual Status write_at(const void* buf, size_t n, uint64_t offset) = 0;
  // Reads up to n bytes; returns the count (short only at end of file).
  virtual Result<size_t> read_at(void* buf, size_t n, uint64_t offset) = 0;
  // Makes written data durable (fdatasync). A failure is not retryable: after a failed fsync
  // the kernel may have dropped the dirty pages, so the caller must treat the file as failed.
  virtual Status sync() = 0;
  virtual Result<uint64_t> size() = 0;
};

struct OpenOptions {
  bool create = false;
  bool direct = false;  // O_DIRECT | O_DSYNC: each write is durable when it returns
  bool read_only = false;
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;
  virtual Result<std::unique_ptr<File>> open(const std::string& path, const OpenOptions& o) = 0;
  // Creates the file with `size` bytes allocated (fallocate, or zero-fill where unsupported)
  // and syncs it and its directory.
  virtual Status preallocate(const std::string& path, uint64_t size) = 0;
  virtual bool exists(const std::string& path) = 0;
  virtual Status create_dirs(const std::string& path) = 0;
};

// The process-wide POSIX file system.
FileSystem* posix_fs();

}  // namespace shale::storage
