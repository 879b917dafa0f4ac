// PosixDirStore: a minimal ObjectStore over a local directory, for the crash test only (the
// objstore module's posix backend replaces it once merged). Objects are files under the root;
// a put writes a temp file, fsyncs it, renames it into place and fsyncs the directory, so an
// object is either wholly present or absent after a crash. Calls are synchronous: callbacks run
// inline on the calling thread. Thread-safe (no shared mutable state besides an atomic).
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <mutex>

#include "objstore/object_store.h"

namespace shale::crashtest {

class PosixDirStore final : public objstore::ObjectStore {
 public:
  explicit PosixDirStore(std::string root) : root_(std::move(root)) {
    std::filesystem::create_directories(root_);
    std::filesystem::create_directories(root_ + "/.tmp");
  }

  void put(const std::string& key, BufferChain data, objstore::StatusCallback done) override {
    done(write_object(key, data));
  }

  void get(const std::string& key, objstore::Range range, objstore::GetCallback done) override {
    int fd = ::open(path(key).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      done(Error::make(errno == ENOENT ? Errc::kNotFound : Errc::kIoError, "open " + key));
      return;
    }
    struct stat st;
    ::fstat(fd, &st);
    uint64_t size = static_cast<uint64_t>(st.st_size);
    uint64_t off = std::min(range.offset, size);
    uint64_t len =
        range.length == objstore::Range::kToEnd ? size - off : std::min(range.length, size - off);
    std::vector<uint8_t> buf(len);
    uint64_t got = 0;
    while (got < len) {
      ssize_t r = ::pread(fd, buf.data() + got, len - got, static_cast<off_t>(off + got));
      if (r <= 0) break;
      got += static_cast<uint64_t>(r);
    }
    ::close(fd);
    if (got != len) {
      done(Error::make(Errc::kIoError, "short read " + key, true));
      return;
    }
    done(Buffer::take(std::move(buf)));
  }

  void remove(std::vector<std::string> keys, objstore::StatusCallback done) override {
    for (auto& k : keys) ::unlink(path(k).c_str());
    done(ok_status());
  }

  void list(const std::string& prefix, objstore::ListCallback done) override {
    std::vector<objstore::ObjectInfo> out;
    std::error_code ec;
    for (auto it = std::filesystem::recursive_directory_iterator(root_, ec);
         it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
      if (!it->is_regular_file()) continue;
      std::string key = std::filesystem::relative(it->path(), root_).string();
      if (key.rfind(".tmp", 0) == 0 || key.rfind(prefix, 0) != 0) continue;
      out.push_back({key, static_cast<uint64_t>(it->file_size()), 0});
    }
    std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.key < b.key; });
    done(std::move(out));
  }

  void create_multipart(const std::string& key, objstore::MultipartCallback done) override {
    done(std::unique_ptr<objstore::MultipartUpload>(new Multipart(this, key)));
  }

  std::string describe() const override { return "file://" + root_; }

 private:
  class Multipart final : public objstore::MultipartUpload {
   public:
    Multipart(PosixDirStore* s, std::string key) : s_(s), key_(std::move(key)) {}
    void upload_part(int n, BufferChain data, objstore::StatusCallback done) override {
      std::lock_guard lk(mu_);
      parts_[n] = data.flatten();
      done(ok_status());
    }
    void complete(objstore::StatusCallback done) override {
      BufferChain all;
      {
        std::lock_guard lk(mu_);
        for (auto& [n, b] : parts_) all.push_back(b);
      }
      done(s_->write_object(key_, all));
    }
    void abort(objstore::StatusCallback done) override { done(ok_status()); }

   private:
    PosixDirStore* s_;
    std::string key_;
    std::mutex mu_;
    std::map<int, Buffer> parts_;
  };

  std::string path(const std::string& key) const { return root_ + "/" + key; }

  Status write_object(const std::string& key, const BufferChain& data) {
    std::string final_path = path(key);
    std::filesystem::create_directories(std::filesystem::path(final_path).parent_path());
    std::string tmp = root_ + "/.tmp/" + std::to_string(getpid()) + "-" + std::to_string(seq_++);
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return Error::make(Errc::kIoError, "create " + tmp, true);
    for (auto& b : data.parts()) {
      size_t off = 0;
      while (off < b.size()) {
        ssize_t w = ::write(fd, b.data() + off, b.size() - off);
        if (w <= 0) {
          ::close(fd);
          return Error::make(Errc::kIoError, "write " + tmp, true);
        }
        off += static_cast<size_t>(w);
      }
    }
    if (::fsync(fd) != 0) {
      ::close(fd);
      return Error::make(Errc::kIoError, "fsync " + tmp, true);
    }
    ::close(fd);
    if (::rename(tmp.c_str(), final_path.c_str()) != 0) {
      return Error::make(Errc::kIoError, "rename " + tmp, true);
    }
    int dfd = ::open(std::filesystem::path(final_path).parent_path().c_str(), O_RDONLY);
    if (dfd >= 0) {
      ::fsync(dfd);
      ::close(dfd);
    }
    return ok_status();
  }

  std::string root_;
  std::atomic<uint64_t> seq_{0};
};

}  // namespace shale::crashtest
