#include "objstore/posix_fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace shale::objstore {
namespace {
template <typename T>
T neg_errno(T r) {
  return r < 0 ? static_cast<T>(-errno) : r;
}
}  // namespace

int PosixFs::open(const std::string& path, int flags, int mode) {
  int r;
  do r = ::open(path.c_str(), flags, mode);
  while (r < 0 && errno == EINTR);
  return neg_errno(r);
}
ssize_t PosixFs::pwrite(int fd, const void* buf, size_t n, off_t off) {
  ssize_t r;
  do r = ::pwrite(fd, buf, n, off);
  while (r < 0 && errno == EINTR);
  return neg_errno(r);
}
ssize_t PosixFs::pread(int fd, void* buf, size_t n, off_t off) {
  ssize_t r;
  do r = ::pread(fd, buf, n, off);
  while (r < 0 && errno == EINTR);
  return neg_errno(r);
}
int PosixFs::fsync(int fd) { return neg_errno(::fsync(fd)); }
// close() must not be retried on EINTR on Linux (the descriptor is already gone).
int PosixFs::close(int fd) { return neg_errno(::close(fd)); }
int PosixFs::fstat(int fd, struct stat* st) { return neg_errno(::fstat(fd, st)); }
int PosixFs::stat(const std::string& path, struct stat* st) {
  return neg_errno(::stat(path.c_str(), st));
}
int PosixFs::rename(const std::string& from, const std::string& to) {
  return neg_errno(::rename(from.c_str(), to.c_str()));
}
int PosixFs::unlink(const std::string& path) { return neg_errno(::unlink(path.c_str())); }
int PosixFs::mkdir(const std::string& path, int mode) {
  return neg_errno(::mkdir(path.c_str(), static_cast<mode_t>(mode)));
}
int PosixFs::rmdir(const std::string& path) { return neg_errno(::rmdir(path.c_str())); }

int PosixFs::list_dir(const std::string& path, std::vector<DirEntry>* out) {
  DIR* d = ::opendir(path.c_str());
  if (d == nullptr) return -errno;
  errno = 0;
  while (struct dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    DirEntry de{e->d_name, false};
    if (e->d_type == DT_DIR) {
      de.is_dir = true;
    } else if (e->d_type == DT_UNKNOWN) {  // some NFS/XFS setups do not fill d_type
      struct stat st;
      if (::fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        de.is_dir = S_ISDIR(st.st_mode);
      }
    }
    out->push_back(std::move(de));
    errno = 0;
  }
  int err = errno;
  ::closedir(d);
  return err != 0 ? -err : 0;
}

PosixFs& real_posix_fs() {
  static PosixFs fs;
  return fs;
}

}  // namespace shale::objstore
