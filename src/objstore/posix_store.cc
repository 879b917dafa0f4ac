#include "objstore/posix_store.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <random>

#include "base/log.h"

namespace shale::objstore {
namespace {

constexpr const char* kTmpName = ".shale-tmp";

std::string parent_of(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos || slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

Error PosixStore::errno_error(int neg_err, const std::string& what, const std::string& path,
                              uint64_t need) const {
  int e = -neg_err;
  std::string msg = what + " " + path + ": " + std::strerror(e);
  switch (e) {
    case ENOSPC:
    case EDQUOT: {
      struct statvfs sv {};
      if (need > 0) msg += " (the object needs " + std::to_string(need) + " bytes";
      if (::statvfs(root_.c_str(), &sv) == 0) {
        msg += std::string(need > 0 ? ", " : " (") +
               std::to_string(static_cast<uint64_t>(sv.f_bavail) * sv.f_frsize) +
               " bytes free in " + root_ + ")";
      } else if (need > 0) {
        msg += ")";
      }
      return Error::make(Errc::kNoSpace, msg, true);
    }
    case ENOENT:
      return Error::make(Errc::kNotFound, msg);
    case ESTALE:
    case EAGAIN:
    case ETIMEDOUT:
      return Error::make(Errc::kUnavailable, msg, true);
    default:
      return Error::make(Errc::kIoError, msg);
  }
}

Status PosixStore::validate_key(const std::string& key) {
  auto bad = [&](const char* why) {
    return Error::make(Errc::kInvalidArgument, "invalid object key '" + key + "': " + why);
  };
  if (key.empty()) return bad("empty");
  if (key.size() > 1024) return bad("longer than 1024 bytes");
  if (key.find('\0') != std::string::npos) return bad("contains NUL");
  size_t start = 0;
  bool first = true;
  while (true) {
    size_t slash = key.find('/', start);
    std::string seg =
        key.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (seg.empty()) return bad("empty path segment (leading, trailing or double '/')");
    if (seg == "." || seg == "..") return bad("'.' or '..' segment");
    if (seg.size() > 255) return bad("segment longer than 255 bytes");
    if (first && seg == kTmpName) return bad("reserved first segment");
    first = false;
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return ok_status();
}

PosixStore::PosixStore(std::string root, PosixStoreOptions options)
    : root_(std::move(root)),
      opts_(options),
      fs_(options.fs ? options.fs : &real_posix_fs()),
      salt_(std::random_device{}() ^ (static_cast<uint64_t>(std::random_device{}()) << 32)),
      pool_(options.threads) {
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0') std::strcpy(host, "host");
  for (char* p = host; *p; ++p) {
    if (*p == '/' || *p == '.') *p = '_';
  }
  host_ = host;
}

PosixStore::~PosixStore() = default;

Result<std::unique_ptr<PosixStore>> PosixStore::open(const std::string& root,
                                                     PosixStoreOptions options) {
  if (root.empty() || root[0] != '/') {
    return Error::make(Errc::kInvalidArgument, "posix store root must be absolute: " + root);
  }
  std::unique_ptr<PosixStore> s(new PosixStore(root, options));
  SHALE_TRY(s->mkdirs(s->tmp_dir()));
  struct stat st;
  if (int r = s->fs_->stat(root, &st); r < 0) return s->errno_error(r, "stat", root);
  if (!S_ISDIR(st.st_mode)) {
    return Error::make(Errc::kInvalidArgument, "posix store root is not a directory: " + root);
  }
  if (size_t n = s->sweep_temp_files(); n > 0) {
    spdlog::info("posix store {}: removed {} temp files left by interrupted writes", root, n);
  }
  return s;
}

size_t PosixStore::sweep_temp_files() {
  std::vector<DirEntry> entries;
  if (fs_->list_dir(tmp_dir(), &entries) < 0) return 0;
  const int64_t now = static_cast<int64_t>(::time(nullptr));
  const std::string own_prefix_tail = "-" + host_ + ".";
  size_t removed = 0;
  for (const auto& e : entries) {
    const std::string path = tmp_dir() + "/" + e.name;
    // Names are <kind>-<host>.<pid>.<seq>.<salt> (unique_name); host has no '.'.
    bool writer_gone = false;
    if (size_t dash = e.name.find('-');
        dash != std::string::npos &&
        e.name.compare(dash, own_prefix_tail.size(), own_prefix_tail) == 0) {
      const char* pid_text = e.name.c_str() + dash + own_prefix_tail.size();
      char* end = nullptr;
      long pid = std::strtol(pid_text, &end, 10);
      if (end != pid_text && *end == '.' && pid > 0 && pid != getpid()) {
        writer_gone = ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
      }
    }
    bool too_old = false;
    if (!writer_gone && opts_.stale_temp_age_s > 0) {
      struct stat st;
      if (fs_->stat(path, &st) == 0) too_old = now - st.st_mtime > opts_.stale_temp_age_s;
    }
    if (!writer_gone && !too_old) continue;
    if (e.is_dir) {
      // An interrupted multipart upload: its parts, then the directory.
      std::vector<DirEntry> parts;
      if (fs_->list_dir(path, &parts) < 0) continue;
      for (const auto& part : parts) fs_->unlink(path + "/" + part.name);
      if (fs_->rmdir(path) == 0) ++removed;
    } else if (fs_->unlink(path) == 0) {
      ++removed;
    }
  }
  return removed;
}

std::string PosixStore::unique_name(const char* kind) {
  // Unique across brokers sharing an NFS mount without any coordination: host and pid tell
  // writers apart, the counter tells this process's writes apart, and the random salt covers
  // pid reuse on a host whose crashed broker left temp files behind.
  char buf[64];
  std::snprintf(buf, sizeof(buf), ".%d.%llu.%016llx", static_cast<int>(getpid()),
                static_cast<unsigned long long>(seq_.fetch_add(1)),
                static_cast<unsigned long long>(salt_));
  return tmp_dir() + "/" + kind + "-" + host_ + buf;
}

Status PosixStore::mkdirs(const std::string& dir) {
  int r = fs_->mkdir(dir, 0755);
  if (r == 0 || r == -EEXIST) {
    if (r == 0 && opts_.fsync) SHALE_TRY(fsync_dir(parent_of(dir)));
    return ok_status();
  }
  if (r != -ENOENT) return errno_error(r, "mkdir", dir);
  if (dir == "/" || dir.empty()) return errno_error(r, "mkdir", dir);
  SHALE_TRY(mkdirs(parent_of(dir)));
  r = fs_->mkdir(dir, 0755);
  if (r < 0 && r != -EEXIST) return errno_error(r, "mkdir", dir);
  if (r == 0 && opts_.fsync) SHALE_TRY(fsync_dir(parent_of(dir)));
  return ok_status();
}

Status PosixStore::fsync_dir(const std::string& dir) {
  int fd = fs_->open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
  if (fd < 0) return errno_error(fd, "open dir", dir);
  int r = fs_->fsync(fd);
  fs_->close(fd);
  // Some file systems (and NFS servers) refuse fsync on a directory; the rename is then as
  // durable as that file system makes it, which is all we can ask.
  if (r < 0 && r != -EINVAL && r != -EROFS) return errno_error(r, "fsync dir", dir);
  return ok_status();
}

Result<std::string> PosixStore::write_temp(const BufferChain& data) {
  std::string tmp = unique_name("put");
  int fd = fs_->open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd == -ENOENT) {  // someone removed the temp dir (e.g. an operator cleaning up)
    SHALE_TRY(mkdirs(tmp_dir()));
    fd = fs_->open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  }
  if (fd < 0) return errno_error(fd, "create", tmp);
  auto fail = [&](int err, const char* what) {
    fs_->close(fd);
    fs_->unlink(tmp);
    return errno_error(err, what, tmp, data.size());
  };
  off_t off = 0;
  for (const Buffer& part : data.parts()) {
    size_t done = 0;
    while (done < part.size()) {
      ssize_t n = fs_->pwrite(fd, part.data() + done, part.size() - done, off);
      if (n < 0) return fail(static_cast<int>(n), "write");
      if (n == 0) return fail(-EIO, "write (no progress)");
      done += static_cast<size_t>(n);
      off += n;
    }
  }
  if (opts_.fsync) {
    if (int r = fs_->fsync(fd); r < 0) return fail(r, "fsync");
  }
  // close() can report a deferred write error on NFS; treat it like a write error.
  if (int r = fs_->close(fd); r < 0) {
    fs_->unlink(tmp);
    return errno_error(r, "close", tmp, data.size());
  }
  return tmp;
}

Status PosixStore::publish(const std::string& tmp, const std::string& key) {
  std::string dst = path_of(key);
  std::string dir = parent_of(dst);
  int r = -ENOENT;
  // A concurrent remove() may delete a just-emptied parent directory between our mkdir and
  // rename; recreate it and try again a few times.
  for (int attempt = 0; attempt < 5 && r == -ENOENT; ++attempt) {
    if (Status s = mkdirs(dir); !s.ok()) {
      fs_->unlink(tmp);
      return s;
    }
    r = fs_->rename(tmp, dst);
  }
  if (r < 0) {
    fs_->unlink(tmp);
    if (r == -EISDIR || r == -ENOTDIR || r == -ENOTEMPTY || r == -EEXIST) {
      return Error::make(Errc::kAlreadyExists,
                         "key " + key + " clashes with a directory of other keys (or a key " +
                             "that is a prefix directory of it)");
    }
    return errno_error(r, "rename to", dst);
  }
  if (opts_.fsync) return fsync_dir(dir);
  return ok_status();
}

Status PosixStore::do_put(const std::string& key, const BufferChain& data) {
  SHALE_TRY(validate_key(key));
  auto tmp = write_temp(data);
  if (!tmp.ok()) return std::move(tmp).error();
  return publish(*tmp, key);
}

Result<Buffer> PosixStore::do_get(const std::string& key, Range range) {
  SHALE_TRY(validate_key(key));
  std::string path = path_of(key);
  int fd = fs_->open(path, O_RDONLY | O_CLOEXEC, 0);
  if (fd == -ENOENT || fd == -ENOTDIR || fd == -EISDIR) {
    return Error::make(Errc::kNotFound, "no such object: " + key);
  }
  if (fd < 0) return errno_error(fd, "open", path);
  struct stat st;
  if (int r = fs_->fstat(fd, &st); r < 0) {
    fs_->close(fd);
    return errno_error(r, "fstat", path);
  }
  if (S_ISDIR(st.st_mode)) {
    fs_->close(fd);
    return Error::make(Errc::kNotFound, "no such object: " + key);
  }
  uint64_t size = static_cast<uint64_t>(st.st_size);
  uint64_t off = std::min(range.offset, size);
  uint64_t len = std::min(range.length, size - off);
  BufferBuilder b(len);
  uint8_t* p = b.grow(len);
  uint64_t done = 0;
  while (done < len) {
    ssize_t n = fs_->pread(fd, p + done, len - done, static_cast<off_t>(off + done));
    if (n < 0) {
      fs_->close(fd);
      return errno_error(static_cast<int>(n), "read", path);
    }
    if (n == 0) {  // file shorter than fstat said: objects are immutable, so this is damage
      fs_->close(fd);
      return Error::make(Errc::kCorruption, "object " + key + " shrank while being read");
    }
    done += static_cast<uint64_t>(n);
  }
  fs_->close(fd);
  return std::move(b).freeze();
}

Status PosixStore::do_remove(const std::vector<std::string>& keys) {
  for (const auto& key : keys) SHALE_TRY(validate_key(key));
  for (const auto& key : keys) {
    std::string path = path_of(key);
    int r = fs_->unlink(path);
    if (r < 0 && r != -ENOENT && r != -ENOTDIR && r != -EISDIR) {
      return errno_error(r, "unlink", path);
    }
    // Drop directories left empty so prefixes of deleted objects do not pile up. Failures
    // (not empty, already gone) are expected when other keys share the directory.
    for (std::string dir = parent_of(path); dir.size() > root_.size(); dir = parent_of(dir)) {
      if (fs_->rmdir(dir) < 0) break;
    }
  }
  return ok_status();
}

Result<std::vector<ObjectInfo>> PosixStore::do_list(const std::string& prefix) {
  // Start at the deepest directory fully named by the prefix; filter the rest by string.
  std::string start_rel;
  if (size_t slash = prefix.rfind('/'); slash != std::string::npos) {
    start_rel = prefix.substr(0, slash);
  }
  std::vector<ObjectInfo> out;
  std::vector<std::string> stack{start_rel};
  while (!stack.empty()) {
    std::string rel = std::move(stack.back());
    stack.pop_back();
    std::string dir = rel.empty() ? root_ : root_ + "/" + rel;
    std::vector<DirEntry> entries;
    int r = fs_->list_dir(dir, &entries);
    if (r == -ENOENT || r == -ENOTDIR) continue;  // nothing under this prefix (or raced a delete)
    if (r < 0) return errno_error(r, "list", dir);
    for (auto& e : entries) {
      if (rel.empty() && e.name == kTmpName) continue;
      std::string key = rel.empty() ? e.name : rel + "/" + e.name;
      if (e.is_dir) {
        // Descend only if keys below can still match the prefix.
        std::string as_prefix = key + "/";
        size_t n = std::min(as_prefix.size(), prefix.size());
        if (as_prefix.compare(0, n, prefix, 0, n) == 0) stack.push_back(std::move(key));
        continue;
      }
      if (key.compare(0, prefix.size(), prefix) != 0) continue;
      struct stat st;
      if (int sr = fs_->stat(root_ + "/" + key, &st); sr < 0) {
        if (sr == -ENOENT) continue;  // deleted while listing
        return errno_error(sr, "stat", key);
      }
      out.push_back(
          {key, static_cast<uint64_t>(st.st_size),
           static_cast<int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000});
    }
  }
  std::sort(out.begin(), out.end(),
            [](const ObjectInfo& a, const ObjectInfo& b) { return a.key < b.key; });
  return out;
}

void PosixStore::put(const std::string& key, BufferChain data, StatusCallback done) {
  pool_.submit([this, key, data = std::move(data), done = std::move(done)] {
    StoreCounters::add(counters_.requests);
    Status s = do_put(key, data);
    StoreCounters::add(counters_.puts);
    if (s.ok()) {
      StoreCounters::add(counters_.put_bytes, data.size());
    } else {
      StoreCounters::add(counters_.errors);
    }
    done(std::move(s));
  });
}

void PosixStore::get(const std::string& key, Range range, GetCallback done) {
  pool_.submit([this, key, range, done = std::move(done)] {
    StoreCounters::add(counters_.requests);
    auto r = do_get(key, range);
    StoreCounters::add(counters_.gets);
    if (r.ok()) {
      StoreCounters::add(counters_.get_bytes, r->size());
    } else {
      StoreCounters::add(counters_.errors);
    }
    done(std::move(r));
  });
}

void PosixStore::remove(std::vector<std::string> keys, StatusCallback done) {
  pool_.submit([this, keys = std::move(keys), done = std::move(done)] {
    StoreCounters::add(counters_.requests);
    Status s = do_remove(keys);
    StoreCounters::add(counters_.deletes, keys.size());
    if (!s.ok()) StoreCounters::add(counters_.errors);
    done(std::move(s));
  });
}

void PosixStore::list(const std::string& prefix, ListCallback done) {
  pool_.submit([this, prefix, done = std::move(done)] {
    StoreCounters::add(counters_.requests);
    auto r = do_list(prefix);
    StoreCounters::add(counters_.lists);
    if (!r.ok()) StoreCounters::add(counters_.errors);
    done(std::move(r));
  });
}

// Parts are files "<n>" in a private temp directory; nothing is visible under the key until
// complete() publishes the concatenation.
class PosixMultipart final : public MultipartUpload {
 public:
  PosixMultipart(PosixStore* store, std::string key, std::string dir)
      : store_(store), key_(std::move(key)), dir_(std::move(dir)) {}

  void upload_part(int part_number, BufferChain data, StatusCallback done) override {
    if (part_number < 1 || part_number > 10000) {
      done(Error::make(Errc::kInvalidArgument, "part numbers are 1..10000"));
      return;
    }
    store_->pool_.submit([this, part_number, data = std::move(data), done = std::move(done)] {
      StoreCounters::add(store_->counters_.requests);
      Status s = write_part(part_number, data);
      if (s.ok()) {
        StoreCounters::add(store_->counters_.put_bytes, data.size());
      } else {
        StoreCounters::add(store_->counters_.errors);
      }
      done(std::move(s));
    });
  }

  void complete(StatusCallback done) override {
    store_->pool_.submit([this, done = std::move(done)] {
      StoreCounters::add(store_->counters_.requests);
      Status s = do_complete();
      StoreCounters::add(store_->counters_.puts);
      if (!s.ok()) StoreCounters::add(store_->counters_.errors);
      done(std::move(s));
    });
  }

  void abort(StatusCallback done) override {
    store_->pool_.submit([this, done = std::move(done)] {
      cleanup();
      done(ok_status());
    });
  }

 private:
  Status write_part(int n, const BufferChain& data) {
    PosixFs* fs = store_->fs_;
    auto tmp = store_->write_temp(data);
    if (!tmp.ok()) return std::move(tmp).error();
    std::string dst = dir_ + "/" + std::to_string(n);
    if (int r = fs->rename(*tmp, dst); r < 0) {
      fs->unlink(*tmp);
      if (r == -ENOENT) return Error::make(Errc::kNotFound, "multipart upload was aborted");
      return store_->errno_error(r, "rename part to", dst);
    }
    return ok_status();
  }

  Status do_complete() {
    PosixFs* fs = store_->fs_;
    std::vector<DirEntry> entries;
    if (int r = fs->list_dir(dir_, &entries); r < 0) {
      if (r == -ENOENT) return Error::make(Errc::kNotFound, "multipart upload was aborted");
      return store_->errno_error(r, "list", dir_);
    }
    std::map<int, std::string> parts;
    for (auto& e : entries) parts[std::atoi(e.name.c_str())] = dir_ + "/" + e.name;
    if (parts.empty()) {
      return Error::make(Errc::kInvalidArgument, "multipart upload of " + key_ + " has no parts");
    }
    // Parts are already on the same file system; read them back into a chain of buffers and
    // write the object through the normal temp + fsync + rename path.
    BufferChain all;
    for (auto& [n, path] : parts) {
      int fd = fs->open(path, O_RDONLY | O_CLOEXEC, 0);
      if (fd < 0) return store_->errno_error(fd, "open", path);
      struct stat st;
      if (int r = fs->fstat(fd, &st); r < 0) {
        fs->close(fd);
        return store_->errno_error(r, "fstat", path);
      }
      BufferBuilder b(static_cast<size_t>(st.st_size));
      uint8_t* p = b.grow(static_cast<size_t>(st.st_size));
      size_t done = 0;
      while (done < static_cast<size_t>(st.st_size)) {
        ssize_t k = fs->pread(fd, p + done, st.st_size - done, static_cast<off_t>(done));
        if (k <= 0) {
          fs->close(fd);
          return k < 0 ? store_->errno_error(static_cast<int>(k), "read", path)
                       : Error::make(Errc::kCorruption, "part file shrank: " + path);
        }
        done += static_cast<size_t>(k);
      }
      fs->close(fd);
      all.push_back(std::move(b).freeze());
    }
    auto tmp = store_->write_temp(all);
    if (!tmp.ok()) return std::move(tmp).error();
    SHALE_TRY(store_->publish(*tmp, key_));
    cleanup();
    return ok_status();
  }

  void cleanup() {
    PosixFs* fs = store_->fs_;
    std::vector<DirEntry> entries;
    if (fs->list_dir(dir_, &entries) < 0) return;
    for (auto& e : entries) fs->unlink(dir_ + "/" + e.name);
    fs->rmdir(dir_);
  }

  PosixStore* store_;
  std::string key_;
  std::string dir_;
};

void PosixStore::create_multipart(const std::string& key, MultipartCallback done) {
  pool_.submit([this, key, done = std::move(done)] {
    if (Status s = validate_key(key); !s.ok()) {
      done(std::move(s).error());
      return;
    }
    std::string dir = unique_name("mpu");
    if (int r = fs_->mkdir(dir, 0755); r < 0) {
      done(errno_error(r, "mkdir", dir));
      return;
    }
    done(std::unique_ptr<MultipartUpload>(new PosixMultipart(this, key, dir)));
  });
}

}  // namespace shale::objstore
