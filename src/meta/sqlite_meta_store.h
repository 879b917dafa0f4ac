// SqliteMetaStore: the embedded MetaStore — one SQLite file (WAL journal mode,
// synchronous=FULL) holding keys, revisions, leases and a bounded history of changes for watches.
//
// Why synchronous=FULL: in WAL mode NORMAL syncs only at checkpoints, so a power loss can roll
// back the last committed transactions. The storage engine trims its WAL right after an object
// commit returns, so a lost commit would lose acknowledged data; FULL makes every commit
// durable before commit() returns (one fsync of the -wal file per transaction).
//
// Key design mirrors etcd (flat byte-string keys, one global revision, per-key create/mod
// revision, leases, prefix watches) so an etcd implementation can replace it unchanged. An
// empty range end in range() is not special here: callers pass prefix_end(p).
//
// Threading: every public method is thread-safe (one mutex around one connection) and may
// block on disk. One store-owned thread expires leases and delivers watch events; callbacks run
// there in revision order and must not call watch()/cancel_watch() (they may read or write).
// History: the last `history_revisions` revisions of changes are kept for watch(from_revision);
// older starting points fail with kOutOfRange (etcd's "compacted").
#pragma once

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "meta/meta_store.h"

struct sqlite3;
struct sqlite3_stmt;

namespace shale::meta {

struct SqliteOptions {
  std::string path;                   // database file; ":memory:" for tests
  int64_t history_revisions = 10000;  // watch history kept
  int64_t lease_check_ms = 50;        // how often expired leases are swept
};

class SqliteMetaStore final : public MetaStore {
 public:
  static Result<std::unique_ptr<SqliteMetaStore>> open(const SqliteOptions& opts);
  ~SqliteMetaStore() override;

  Result<std::optional<KeyValue>> get(std::string_view key) override;
  Result<std::vector<KeyValue>> range(std::string_view begin, std::string_view end,
                                      size_t limit = 0) override;
  Result<std::vector<KeyValue>> prefix(std::string_view prefix, size_t limit = 0) override;
  Result<int64_t> commit(const Txn& txn) override;
  Result<int64_t> revision() override;

  Result<int64_t> grant_lease(int64_t ttl_ms) override;
  Status keep_alive(int64_t lease) override;
  Status revoke_lease(int64_t lease) override;

  Result<int64_t> watch(std::string_view prefix, int64_t from_revision, WatchCallback cb) override;
  void cancel_watch(int64_t watch_id) override;

 private:
  explicit SqliteMetaStore(SqliteOptions opts);
  Status init();
  Status exec(const char* sql);
  Error db_error(const char* what);
  // The following run with mu_ held.
  Result<std::vector<KeyValue>> query_range(std::string_view begin, std::string_view end,
                                            size_t limit);
  Result<int64_t> apply_locked(const Txn& txn, std::vector<WatchEvent>* events);
  Status delete_keys_locked(std::string_view begin, std::string_view end, int64_t rev,
                            std::vector<WatchEvent>* events);
  Status record_history_locked(int64_t rev, const std::vector<WatchEvent>& events);
  void dispatch_locked(int64_t rev, std::vector<WatchEvent> events);
  Status revoke_lease_locked(int64_t lease);
  sqlite3_stmt* prepared(const char* sql);
  void expire_leases();
  void run();

  struct Watcher {
    std::string prefix;
    WatchCallback cb;
    int64_t start_rev;  // broadcast events at or below this come from history replay instead
  };
  struct Lease {
    int64_t ttl_ms;
    int64_t expires_ms;  // monotonic clock
  };
  struct Pending {
    int64_t watch_id;  // 0: for every watcher; else a history replay for one watcher
    int64_t rev;
    std::vector<WatchEvent> events;
  };

  SqliteOptions opts_;
  std::mutex mu_;  // guards db_, rev_, watchers_, queue_, stop_
  sqlite3* db_ = nullptr;
  int64_t rev_ = 0;
  std::unordered_map<std::string, sqlite3_stmt*> stmts_;
  std::map<int64_t, Lease> lease_expiry_;
  std::map<int64_t, std::shared_ptr<Watcher>> watchers_;
  int64_t next_watch_id_ = 1;
  std::deque<Pending> queue_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::mutex deliver_mu_;  // held while a callback runs, so cancel_watch waits for it
  std::thread thread_;
};

}  // namespace shale::meta
