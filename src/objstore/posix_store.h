// PosixStore: an ObjectStore in a directory on a local disk or an NFS mount shared by several
// brokers (AutoMQ's LocalFileObjectStorage pattern, docs/objstore.md).
//
// Layout: key "a/b/c" is the file <root>/a/b/c ('/' in keys maps to directories, so listing a
// prefix walks only the directories under it). Temporary files live in <root>/.shale-tmp/, on
// the same file system so rename() is atomic; keys whose first segment is ".shale-tmp" are
// refused, as are empty keys, keys starting or ending with '/', empty segments, "." and "..".
// A key that is also a "directory" of another key ("a" and "a/b") cannot exist in both forms.
//
// put: write to a unique temp file (host, pid, counter, random) + fsync + rename into place +
// fsync the directory, so a reader sees either nothing or the whole object, and brokers that
// share the mount need no locks (objects are immutable; the last rename wins).
// Multipart: parts are files in a temp directory; complete() concatenates them into a temp file
// and publishes it like put.
//
// Threading: every operation runs on the store's own thread pool (never on the caller's
// thread) and calls back on a pool thread. The destructor finishes queued operations first.
// A MultipartUpload must not outlive its store, and must stay alive until the callbacks of its
// own calls have run.
// Errors: ENOSPC/EDQUOT → kNoSpace (retryable), ENOENT → kNotFound, EIO → kIoError, ESTALE/
// EAGAIN/ETIMEDOUT → kUnavailable (retryable), others → kIoError with the path and strerror.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "objstore/counters.h"
#include "objstore/object_store.h"
#include "objstore/posix_fs.h"
#include "objstore/thread_pool.h"

namespace shale::objstore {

struct PosixStoreOptions {
  int threads = 4;
  // fsync files and directories. Turning it off is only for tests on tmpfs-like scratch dirs.
  bool fsync = true;
  // The file layer; nullptr = the real one. Not owned; must outlive the store.
  PosixFs* fs = nullptr;
  // open() removes temp files that a killed writer left behind: at once when the writer was a
  // process on this host that no longer exists, otherwise once older than this (a writer on
  // another host sharing the mount cannot be asked; no PUT takes this long). <= 0: never.
  int64_t stale_temp_age_s = 3600;
};

class PosixStore final : public ObjectStore {
 public:
  // Creates <root> and <root>/.shale-tmp if missing, and sweeps stale temp files (see
  // PosixStoreOptions::stale_temp_age_s). Errors if root is not a writable directory.
  static Result<std::unique_ptr<PosixStore>> open(const std::string& root,
                                                  PosixStoreOptions options = {});
  ~PosixStore() override;

  void put(const std::string& key, BufferChain data, StatusCallback done) override;
  void get(const std::string& key, Range range, GetCallback done) override;
  void remove(std::vector<std::string> keys, StatusCallback done) override;
  void list(const std::string& prefix, ListCallback done) override;
  void create_multipart(const std::string& key, MultipartCallback done) override;
  std::string describe() const override { return "file://" + root_; }
  bool prefers_single_put() const override { return true; }
  StoreStats stats() const override { return counters_.snapshot(); }

  // Checks a key against the rules above; kInvalidArgument if it breaks one.
  static Status validate_key(const std::string& key);

 private:
  friend class PosixMultipart;
  PosixStore(std::string root, PosixStoreOptions options);

  // Removes stale temp files; returns how many. Failures to remove are ignored (the next open
  // tries again): a leftover temp file costs space, never data.
  size_t sweep_temp_files();

  Status do_put(const std::string& key, const BufferChain& data);
  Result<Buffer> do_get(const std::string& key, Range range);
  Status do_remove(const std::vector<std::string>& keys);
  Result<std::vector<ObjectInfo>> do_list(const std::string& prefix);
  // Writes data to a fresh temp file, fsyncs and closes it; returns its path.
  Result<std::string> write_temp(const BufferChain& data);
  // Moves a finished temp file to the key's path and makes the rename durable.
  Status publish(const std::string& tmp, const std::string& key);
  Status mkdirs(const std::string& dir);
  Status fsync_dir(const std::string& dir);
  std::string unique_name(const char* kind);
  std::string path_of(const std::string& key) const { return root_ + "/" + key; }
  std::string tmp_dir() const { return root_ + "/.shale-tmp"; }
  // need: bytes the failed write wanted; for ENOSPC/EDQUOT the message then says how much was
  // needed and how much the file system has free.
  Error errno_error(int neg_err, const std::string& what, const std::string& path,
                    uint64_t need = 0) const;

  std::string root_;
  PosixStoreOptions opts_;
  PosixFs* fs_;
  std::string host_;
  std::atomic<uint64_t> seq_{0};
  uint64_t salt_;
  StoreCounters counters_;
  ThreadPool pool_;  // last member: destroyed first, so tasks finish while the rest is alive
};

}  // namespace shale::objstore
