#include "storage/file.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include <fmt/format.h>

namespace shale::storage {

namespace {

// (op, path) rather than a concatenated string: GCC 12's -Wrestrict misfires on
// `"literal" + std::string` at -O3.
Error errno_error(const char* op, const std::string& path, int err) {
  Errc c = err == ENOSPC || err == EDQUOT ? Errc::kNoSpace : Errc::kIoError;
  bool retryable = err == ENOSPC || err == EDQUOT || err == EINTR || err == EAGAIN;
  return Error::make(c, fmt::format("{} {}: {}", op, path, std::strerror(err)), retryable);
}

class PosixFile final : public File {
 public:
  PosixFile(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~PosixFile() override { ::close(fd_); }

  Status write_at(const void* buf, size_t n, uint64_t offset) override {
    const char* p = static_cast<const char*>(buf);
    while (n > 0) {
      ssize_t w = ::pwrite(fd_, p, n, static_cast<off_t>(offset));
      if (w < 0) {
        if (errno == EINTR) continue;
        return errno_error("pwrite", path_, errno);
      }
      p += w;
      n -= static_cast<size_t>(w);
      offset += static_cast<uint64_t>(w);
    }
    return ok_status();
  }

  Result<size_t> read_at(void* buf, size_t n, uint64_t offset) override {
    size_t done = 0;
    char* p = static_cast<char*>(buf);
    while (done < n) {
      ssize_t r = ::pread(fd_, p + done, n - done, static_cast<off_t>(offset + done));
      if (r < 0) {
        if (errno == EINTR) continue;
        return errno_error("pread", path_, errno);
      }
      if (r == 0) break;
      done += static_cast<size_t>(r);
    }
    return done;
  }

  Status sync() override {
    if (::fdatasync(fd_) != 0) {
      Error e = errno_error("fdatasync", path_, errno);
      e.retryable = false;
      return e;
    }
    return ok_status();
  }

  Result<uint64_t> size() override {
    struct stat st;
    if (::fstat(fd_, &st) != 0) return errno_error("fstat", path_, errno);
    if (S_ISBLK(st.st_mode)) {
      // A raw block device (AutoMQ's block WAL): fstat reports size 0; ask the device.
      uint64_t bytes = 0;
      if (::ioctl(fd_, BLKGETSIZE64, &bytes) != 0) {
        return errno_error("ioctl(BLKGETSIZE64)", path_, errno);
      }
      return bytes;
    }
    return static_cast<uint64_t>(st.st_size);
  }

 private:
  int fd_;
  std::string path_;
};

Status sync_dir(const std::string& path) {
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  const std::string dir = parent.empty() ? std::string(".") : parent.string();
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return errno_error("open dir", dir, errno);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  // Some file systems (and NFS in some modes) refuse fsync on a directory; the rename/create is
  // still ordered by the server, so only real I/O errors matter.
  if (rc != 0 && err != EINVAL && err != EBADF) return errno_error("fsync dir", dir, err);
  return ok_status();
}

class PosixFileSystem final : public FileSystem {
 public:
  Result<std::unique_ptr<File>> open(const std::string& path, const OpenOptions& o) override {
    int flags = o.read_only ? O_RDONLY : O_RDWR;
    if (o.create) flags |= O_CREAT;
    if (o.direct) flags |= O_DIRECT | O_DSYNC;
    flags |= O_CLOEXEC;
    int fd = ::open(path.c_str(), flags, 0644);
    if (fd < 0) return errno_error("open", path, errno);
    return std::unique_ptr<File>(new PosixFile(fd, path));
  }

  Status preallocate(const std::string& path, uint64_t size) override {
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return errno_error("create", path, errno);
    int rc = ::posix_fallocate(fd, 0, static_cast<off_t>(size));
    if (rc == EOPNOTSUPP || rc == EINVAL) {
      // NFS without ALLOCATE support: write zeros so the space is really reserved.
      std::vector<char> zeros(1 << 20, 0);
      rc = 0;
      for (uint64_t off = 0; off < size && rc == 0; off += zeros.size()) {
        size_t n = static_cast<size_t>(std::min<uint64_t>(zeros.size(), size - off));
        if (::pwrite(fd, zeros.data(), n, static_cast<off_t>(off)) != static_cast<ssize_t>(n)) {
          rc = errno;
        }
      }
    }
    // A half-allocated file must not stay behind: the next start would take it for an
    // existing WAL of the wrong size and refuse to open it.
    if (rc != 0) {
      ::close(fd);
      ::unlink(path.c_str());
      return errno_error("allocate", path, rc);
    }
    if (::fsync(fd) != 0) {
      int err = errno;
      ::close(fd);
      ::unlink(path.c_str());
      return errno_error("fsync", path, err);
    }
    ::close(fd);
    return sync_dir(path);
  }

  bool exists(const std::string& path) override {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0;
  }

  Status create_dirs(const std::string& path) override {
    std::error_code ec;
    std::filesystem::create_directories(path, ec);
    if (ec) return Error::make(Errc::kIoError, "mkdir " + path + ": " + ec.message());
    return ok_status();
  }
};

}  // namespace

FileSystem* posix_fs() {
  static PosixFileSystem fs;
  return &fs;
}

}  // namespace shale::storage
