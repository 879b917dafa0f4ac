// PosixFs: the file-system calls the POSIX object store makes, behind a virtual interface so
// tests can fail any of them on purpose (ENOSPC, EIO, short writes) — LevelDB's Env idea.
// The default implementation forwards to the system calls. Every method returns the syscall's
// result, or -errno on failure (never sets or reads errno for the caller).
// Thread-safety: the default implementation is stateless; test subclasses must be thread-safe
// because the store calls them from several pool threads at once.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstddef>
#include <string>
#include <vector>

namespace shale::objstore {

struct DirEntry {
  std::string name;
  bool is_dir = false;
};

class PosixFs {
 public:
  virtual ~PosixFs() = default;
  virtual int open(const std::string& path, int flags, int mode);
  virtual ssize_t pwrite(int fd, const void* buf, size_t n, off_t off);
  virtual ssize_t pread(int fd, void* buf, size_t n, off_t off);
  virtual int fsync(int fd);
  virtual int close(int fd);
  virtual int fstat(int fd, struct stat* st);
  virtual int stat(const std::string& path, struct stat* st);
  virtual int rename(const std::string& from, const std::string& to);
  virtual int unlink(const std::string& path);
  virtual int mkdir(const std::string& path, int mode);
  virtual int rmdir(const std::string& path);
  // Entries of a directory except "." and "..", in no particular order.
  virtual int list_dir(const std::string& path, std::vector<DirEntry>* out);
};

// The process-wide real file system.
PosixFs& real_posix_fs();

}  // namespace shale::objstore
