#include "meta/sqlite_meta_store.h"

#include <sqlite3.h>

#include <chrono>
#include <unordered_map>

#include "base/clock.h"
#include "base/log.h"

namespace shale::meta {

namespace {

// A prepared statement that resets itself when it goes out of scope, so cached statements can
// be reused by the next caller.
class Stmt {
 public:
  Stmt(sqlite3_stmt* s) : s_(s) {}  // NOLINT
  ~Stmt() {
    if (s_) {
      sqlite3_reset(s_);
      sqlite3_clear_bindings(s_);
    }
  }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  sqlite3_stmt* get() const { return s_; }
  void bind(int i, std::string_view v) {
    sqlite3_bind_blob(s_, i, v.empty() ? "" : v.data(), static_cast<int>(v.size()),
                      SQLITE_TRANSIENT);
  }
  void bind(int i, int64_t v) { sqlite3_bind_int64(s_, i, v); }
  int step() { return sqlite3_step(s_); }
  int64_t i64(int col) { return sqlite3_column_int64(s_, col); }
  std::string blob(int col) {
    const void* p = sqlite3_column_blob(s_, col);
    int n = sqlite3_column_bytes(s_, col);
    return p ? std::string(static_cast<const char*>(p), static_cast<size_t>(n)) : std::string();
  }

 private:
  sqlite3_stmt* s_;
};

bool has_prefix(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

}  // namespace

sqlite3_stmt* SqliteMetaStore::prepared(const char* sql) {
  auto it = stmts_.find(sql);
  if (it != stmts_.end()) return it->second;
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, nullptr) != SQLITE_OK) {
    return nullptr;
  }
  stmts_.emplace(sql, s);
  return s;
}

SqliteMetaStore::SqliteMetaStore(SqliteOptions opts) : opts_(std::move(opts)) {}

Result<std::unique_ptr<SqliteMetaStore>> SqliteMetaStore::open(const SqliteOptions& opts) {
  std::unique_ptr<SqliteMetaStore> s(new SqliteMetaStore(opts));
  SHALE_TRY(s->init());
  s->thread_ = std::thread([p = s.get()] { p->run(); });
  return s;
}

SqliteMetaStore::~SqliteMetaStore() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (db_) {
    for (auto& [sql, st] : stmts_) sqlite3_finalize(st);
    sqlite3_close(db_);
  }
}

Error SqliteMetaStore::db_error(const char* what) {
  return Error::make(Errc::kIoError,
                     std::string("sqlite ") + what + ": " + (db_ ? sqlite3_errmsg(db_) : "?"),
                     true);
}

Status SqliteMetaStore::exec(const char* sql) {
  char* msg = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &msg) != SQLITE_OK) {
    std::string m = msg ? msg : "?";
    sqlite3_free(msg);
    return Error::make(Errc::kIoError, std::string("sqlite: ") + m + " in: " + sql);
  }
  return ok_status();
}

Status SqliteMetaStore::init() {
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
  if (sqlite3_open_v2(opts_.path.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
    return db_error("open");
  }
  sqlite3_busy_timeout(db_, 5000);
  SHALE_TRY(exec("PRAGMA journal_mode=WAL"));
  SHALE_TRY(exec("PRAGMA synchronous=FULL"));
  SHALE_TRY(
      exec("CREATE TABLE IF NOT EXISTS kv(key BLOB PRIMARY KEY, value BLOB NOT NULL,"
           " create_rev INTEGER NOT NULL, mod_rev INTEGER NOT NULL, lease INTEGER NOT NULL)"));
  SHALE_TRY(exec("CREATE INDEX IF NOT EXISTS kv_lease ON kv(lease) WHERE lease != 0"));
  SHALE_TRY(
      exec("CREATE TABLE IF NOT EXISTS leases(id INTEGER PRIMARY KEY, ttl_ms INTEGER NOT NULL)"));
  SHALE_TRY(exec("CREATE TABLE IF NOT EXISTS state(name TEXT PRIMARY KEY, v INTEGER NOT NULL)"));
  SHALE_TRY(
      exec("CREATE TABLE IF NOT EXISTS history(rev INTEGER NOT NULL, seq INTEGER NOT NULL,"
           " type INTEGER NOT NULL, key BLOB NOT NULL, value BLOB NOT NULL, create_rev INTEGER,"
           " mod_rev INTEGER, lease INTEGER, PRIMARY KEY(rev, seq))"));
  SHALE_TRY(exec("INSERT OR IGNORE INTO state VALUES('rev', 0), ('lease', 0)"));
  Stmt q(prepared("SELECT v FROM state WHERE name='rev'"));
  if (!q.get() || q.step() != SQLITE_ROW) return db_error("read revision");
  rev_ = q.i64(0);
  // Leases survive a restart with a fresh TTL, as etcd does after a leader change.
  Stmt l(prepared("SELECT id, ttl_ms FROM leases"));
  int64_t now = clock::mono_ms();
  while (l.step() == SQLITE_ROW) lease_expiry_[l.i64(0)] = {l.i64(1), now + l.i64(1)};
  return ok_status();
}

Result<std::vector<KeyValue>> SqliteMetaStore::query_range(std::string_view begin,
                                                           std::string_view end, size_t limit) {
  // An end of "\0" (prefix_end of an all-0xff prefix) means "no upper bound", as in etcd.
  bool unbounded = end.size() == 1 && end[0] == '\0';
  Stmt q(prepared(unbounded ? "SELECT key, value, create_rev, mod_rev, lease FROM kv"
                              " WHERE key >= ?1 ORDER BY key LIMIT ?3"
                            : "SELECT key, value, create_rev, mod_rev, lease FROM kv"
                              " WHERE key >= ?1 AND key < ?2 ORDER BY key LIMIT ?3"));
  if (!q.get()) return db_error("prepare range");
  q.bind(1, begin);
  if (!unbounded) q.bind(2, end);
  q.bind(3, limit == 0 ? int64_t{-1} : static_cast<int64_t>(limit));
  std::vector<KeyValue> out;
  int rc;
  while ((rc = q.step()) == SQLITE_ROW) {
    out.push_back(KeyValue{q.blob(0), q.blob(1), q.i64(2), q.i64(3), q.i64(4)});
  }
  if (rc != SQLITE_DONE) return db_error("range");
  return out;
}

Result<std::optional<KeyValue>> SqliteMetaStore::get(std::string_view key) {
  std::lock_guard lk(mu_);
  Stmt q(prepared("SELECT value, create_rev, mod_rev, lease FROM kv WHERE key = ?1"));
  if (!q.get()) return db_error("prepare get");
  q.bind(1, key);
  int rc = q.step();
  if (rc == SQLITE_ROW) {
    return std::optional<KeyValue>(
        KeyValue{std::string(key), q.blob(0), q.i64(1), q.i64(2), q.i64(3)});
  }
  if (rc != SQLITE_DONE) return db_error("get");
  return std::optional<KeyValue>();
}

Result<std::vector<KeyValue>> SqliteMetaStore::range(std::string_view begin, std::string_view end,
                                                     size_t limit) {
  std::lock_guard lk(mu_);
  return query_range(begin, end, limit);
}

Result<std::vector<KeyValue>> SqliteMetaStore::prefix(std::string_view p, size_t limit) {
  std::lock_guard lk(mu_);
  return query_range(p, prefix_end(p), limit);
}

Result<int64_t> SqliteMetaStore::revision() {
  std::lock_guard lk(mu_);
  return rev_;
}

Status SqliteMetaStore::delete_keys_locked(std::string_view begin, std::string_view end,
                                           int64_t rev, std::vector<WatchEvent>* events) {
  auto keys = query_range(begin, end, 0);
  if (!keys.ok()) return std::move(keys).error();
  for (auto& kv : *keys) {
    Stmt d(prepared("DELETE FROM kv WHERE key = ?1"));
    d.bind(1, kv.key);
    if (d.step() != SQLITE_DONE) return db_error("delete");
    WatchEvent ev;
    ev.type = WatchEvent::Type::kDelete;
    ev.kv.key = std::move(kv.key);
    ev.kv.mod_revision = rev;
    events->push_back(std::move(ev));
  }
  return ok_status();
}

Status SqliteMetaStore::record_history_locked(int64_t rev, const std::vector<WatchEvent>& events) {
  int64_t seq = 0;
  for (const auto& ev : events) {
    Stmt h(prepared("INSERT INTO history VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"));
    h.bind(1, rev);
    h.bind(2, seq++);
    h.bind(3, static_cast<int64_t>(ev.type == WatchEvent::Type::kPut ? 0 : 1));
    h.bind(4, ev.kv.key);
    h.bind(5, ev.kv.value);
    h.bind(6, ev.kv.create_revision);
    h.bind(7, ev.kv.mod_revision);
    h.bind(8, ev.kv.lease);
    if (h.step() != SQLITE_DONE) return db_error("history");
  }
  if (rev % 256 == 0) {
    Stmt t(prepared("DELETE FROM history WHERE rev <= ?1"));
    t.bind(1, rev - opts_.history_revisions);
    if (t.step() != SQLITE_DONE) return db_error("history trim");
  }
  return ok_status();
}

Result<int64_t> SqliteMetaStore::apply_locked(const Txn& txn, std::vector<WatchEvent>* events) {
  for (const auto& c : txn.compares) {
    Stmt q(prepared("SELECT mod_rev FROM kv WHERE key = ?1"));
    q.bind(1, c.key);
    int rc = q.step();
    int64_t have = rc == SQLITE_ROW ? q.i64(0) : 0;
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return db_error("compare");
    if (have != c.mod_revision) {
      return Error::make(Errc::kConflict, "compare failed on key " + c.key);
    }
  }
  if (txn.ops.empty()) return rev_;
  int64_t rev = rev_ + 1;
  for (const auto& op : txn.ops) {
    switch (op.type) {
      case Op::Type::kPut: {
        if (op.lease != 0 && !lease_expiry_.count(op.lease)) {
          return Error::make(Errc::kNotFound, "no such lease " + std::to_string(op.lease));
        }
        Stmt q(prepared("SELECT create_rev FROM kv WHERE key = ?1"));
        q.bind(1, op.key);
        int64_t create = q.step() == SQLITE_ROW ? q.i64(0) : rev;
        Stmt p(prepared("INSERT OR REPLACE INTO kv VALUES(?1, ?2, ?3, ?4, ?5)"));
        p.bind(1, op.key);
        p.bind(2, op.value);
        p.bind(3, create);
        p.bind(4, rev);
        p.bind(5, op.lease);
        if (p.step() != SQLITE_DONE) return db_error("put");
        events->push_back(
            WatchEvent{WatchEvent::Type::kPut, KeyValue{op.key, op.value, create, rev, op.lease}});
        break;
      }
      case Op::Type::kDelete: {
        std::string end = op.key;
        end.push_back('\0');
        SHALE_TRY(delete_keys_locked(op.key, end, rev, events));
        break;
      }
      case Op::Type::kDeletePrefix:
        SHALE_TRY(delete_keys_locked(op.key, prefix_end(op.key), rev, events));
        break;
    }
  }
  SHALE_TRY(record_history_locked(rev, *events));
  Stmt s(prepared("UPDATE state SET v = ?1 WHERE name = 'rev'"));
  s.bind(1, rev);
  if (s.step() != SQLITE_DONE) return db_error("revision");
  return rev;
}

Result<int64_t> SqliteMetaStore::commit(const Txn& txn) {
  std::lock_guard lk(mu_);
  SHALE_TRY(exec("BEGIN IMMEDIATE"));
  std::vector<WatchEvent> events;
  auto r = apply_locked(txn, &events);
  if (!r.ok()) {
    (void)exec("ROLLBACK");
    return r;
  }
  if (*r == rev_) {
    SHALE_TRY(exec("COMMIT"));
    return rev_;
  }
  auto c = exec("COMMIT");
  if (!c.ok()) {
    (void)exec("ROLLBACK");
    return std::move(c).error();
  }
  rev_ = *r;
  dispatch_locked(rev_, std::move(events));
  return rev_;
}

Result<int64_t> SqliteMetaStore::grant_lease(int64_t ttl_ms) {
  if (ttl_ms <= 0) return Error::make(Errc::kInvalidArgument, "lease ttl must be positive");
  std::lock_guard lk(mu_);
  SHALE_TRY(exec("BEGIN IMMEDIATE"));
  Stmt u(prepared("UPDATE state SET v = v + 1 WHERE name = 'lease' RETURNING v"));
  if (u.step() != SQLITE_ROW) {
    (void)exec("ROLLBACK");
    return db_error("lease id");
  }
  int64_t id = u.i64(0);
  while (u.step() == SQLITE_ROW) {
  }
  Stmt i(prepared("INSERT INTO leases VALUES(?1, ?2)"));
  i.bind(1, id);
  i.bind(2, ttl_ms);
  if (i.step() != SQLITE_DONE) {
    (void)exec("ROLLBACK");
    return db_error("lease insert");
  }
  SHALE_TRY(exec("COMMIT"));
  lease_expiry_[id] = {ttl_ms, clock::mono_ms() + ttl_ms};
  return id;
}

Status SqliteMetaStore::keep_alive(int64_t lease) {
  std::lock_guard lk(mu_);
  auto it = lease_expiry_.find(lease);
  if (it == lease_expiry_.end()) {
    return Error::make(Errc::kNotFound, "no such lease " + std::to_string(lease));
  }
  it->second.expires_ms = clock::mono_ms() + it->second.ttl_ms;
  return ok_status();
}

Status SqliteMetaStore::revoke_lease_locked(int64_t lease) {
  if (!lease_expiry_.count(lease)) {
    return Error::make(Errc::kNotFound, "no such lease " + std::to_string(lease));
  }
  SHALE_TRY(exec("BEGIN IMMEDIATE"));
  std::vector<WatchEvent> events;
  int64_t rev = rev_ + 1;
  auto fail = [&](Error e) -> Status {
    (void)exec("ROLLBACK");
    return e;
  };
  std::vector<std::string> keys;
  {
    Stmt q(prepared("SELECT key FROM kv WHERE lease = ?1"));
    q.bind(1, lease);
    while (q.step() == SQLITE_ROW) keys.push_back(q.blob(0));
  }
  for (auto& k : keys) {
    std::string end = k;
    end.push_back('\0');
    auto s = delete_keys_locked(k, end, rev, &events);
    if (!s.ok()) return fail(std::move(s).error());
  }
  Stmt d(prepared("DELETE FROM leases WHERE id = ?1"));
  d.bind(1, lease);
  if (d.step() != SQLITE_DONE) return fail(db_error("lease delete"));
  if (!events.empty()) {
    auto h = record_history_locked(rev, events);
    if (!h.ok()) return fail(std::move(h).error());
    Stmt s(prepared("UPDATE state SET v = ?1 WHERE name = 'rev'"));
    s.bind(1, rev);
    if (s.step() != SQLITE_DONE) return fail(db_error("revision"));
  }
  SHALE_TRY(exec("COMMIT"));
  lease_expiry_.erase(lease);
  if (!events.empty()) {
    rev_ = rev;
    dispatch_locked(rev_, std::move(events));
  }
  return ok_status();
}

Status SqliteMetaStore::revoke_lease(int64_t lease) {
  std::lock_guard lk(mu_);
  return revoke_lease_locked(lease);
}

void SqliteMetaStore::expire_leases() {
  std::lock_guard lk(mu_);
  int64_t now = clock::mono_ms();
  std::vector<int64_t> expired;
  for (auto& [id, l] : lease_expiry_) {
    if (l.expires_ms <= now) expired.push_back(id);
  }
  for (int64_t id : expired) {
    auto s = revoke_lease_locked(id);
    if (!s.ok()) SPDLOG_WARN("meta: expiring lease {} failed: {}", id, s.error().to_string());
  }
}

void SqliteMetaStore::dispatch_locked(int64_t rev, std::vector<WatchEvent> events) {
  queue_.push_back(Pending{0, rev, std::move(events)});
  cv_.notify_all();
}

Result<int64_t> SqliteMetaStore::watch(std::string_view prefix, int64_t from_revision,
                                       WatchCallback cb) {
  std::lock_guard lk(mu_);
  int64_t id = next_watch_id_++;
  auto w = std::make_shared<Watcher>(Watcher{std::string(prefix), std::move(cb), rev_});
  if (from_revision > 0 && from_revision <= rev_) {
    // Replay history (from_revision, rev_] now; live events after rev_ follow in queue order.
    Stmt oldest(prepared("SELECT min(rev) FROM history"));
    int64_t min_rev = oldest.step() == SQLITE_ROW ? oldest.i64(0) : 0;
    if (from_revision < rev_ && (min_rev == 0 || min_rev > from_revision + 1)) {
      return Error::make(Errc::kOutOfRange,
                         "watch history compacted before revision " + std::to_string(min_rev));
    }
    Stmt h(
        prepared("SELECT rev, type, key, value, create_rev, mod_rev, lease FROM history"
                 " WHERE rev > ?1 ORDER BY rev, seq"));
    h.bind(1, from_revision);
    std::vector<WatchEvent> batch;
    int64_t cur = -1;
    while (h.step() == SQLITE_ROW) {
      int64_t rev = h.i64(0);
      if (rev != cur && !batch.empty()) {
        queue_.push_back(Pending{id, cur, std::move(batch)});
        batch.clear();
      }
      cur = rev;
      std::string key = h.blob(2);
      if (!has_prefix(key, prefix)) continue;
      batch.push_back(
          WatchEvent{h.i64(1) == 0 ? WatchEvent::Type::kPut : WatchEvent::Type::kDelete,
                     KeyValue{std::move(key), h.blob(3), h.i64(4), h.i64(5), h.i64(6)}});
    }
    if (!batch.empty()) queue_.push_back(Pending{id, cur, std::move(batch)});
    cv_.notify_all();
  }
  watchers_[id] = std::move(w);
  return id;
}

void SqliteMetaStore::cancel_watch(int64_t watch_id) {
  {
    std::lock_guard lk(mu_);
    watchers_.erase(watch_id);
  }
  // Wait for a callback that may be running for this watcher (unless we are that callback).
  if (std::this_thread::get_id() != thread_.get_id()) std::lock_guard dl(deliver_mu_);
}

void SqliteMetaStore::run() {
  std::unique_lock lk(mu_);
  while (!stop_) {
    if (queue_.empty()) {
      cv_.wait_for(lk, std::chrono::milliseconds(opts_.lease_check_ms));
      if (stop_) break;
      if (queue_.empty()) {
        lk.unlock();
        expire_leases();
        lk.lock();
      }
      continue;
    }
    Pending p = std::move(queue_.front());
    queue_.pop_front();
    std::vector<std::pair<std::shared_ptr<Watcher>, std::vector<WatchEvent>>> out;
    for (auto& [id, w] : watchers_) {
      if (p.watch_id != 0 && p.watch_id != id) continue;
      if (p.watch_id == 0 && p.rev <= w->start_rev) continue;
      std::vector<WatchEvent> mine;
      for (const auto& ev : p.events) {
        if (has_prefix(ev.kv.key, w->prefix)) mine.push_back(ev);
      }
      if (!mine.empty()) out.emplace_back(w, std::move(mine));
    }
    std::lock_guard dl(deliver_mu_);
    lk.unlock();
    for (auto& [w, evs] : out) w->cb(evs);
    lk.lock();
  }
}

}  // namespace shale::meta
