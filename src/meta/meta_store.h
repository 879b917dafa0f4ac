// MetaStore: a versioned key/value store with compare-and-put transactions, prefix/range reads,
// leases and watches, modelled on etcd's v3 API so that the embedded SQLite implementation and
// a later etcd implementation are interchangeable behind it.
//
// Versions: the store keeps one global revision that every successful write transaction bumps
// by one. Each key carries mod_revision (the revision of its last write) and create_revision.
// A Compare on mod_revision == 0 means "the key must not exist".
//
// Implementations: SqliteMetaStore (embedded) and EtcdMetaStore; open_store.h picks one from
// the `metadata.store` setting.
//
// Threading: thread-safe. Calls block (a local SQLite commit with fsync, or a network round trip
// for etcd): call them from worker threads, never from an event-loop thread. Watch callbacks run
// on a store-owned thread, in revision order, and must not call back into the store's watch API.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace shale::meta {

struct KeyValue {
  std::string key;
  std::string value;
  int64_t create_revision = 0;
  int64_t mod_revision = 0;
  int64_t lease = 0;  // 0: no lease
};

// A condition of a transaction: the key's mod_revision must equal `mod_revision`
// (0 = the key must be absent).
struct Compare {
  std::string key;
  int64_t mod_revision = 0;
};

struct Op {
  enum class Type { kPut, kDelete, kDeletePrefix };
  Type type = Type::kPut;
  std::string key;    // the key, or the prefix for kDeletePrefix
  std::string value;  // for kPut
  int64_t lease = 0;  // for kPut: attach to this lease (0: none)

  static Op put(std::string k, std::string v, int64_t lease = 0) {
    return Op{Type::kPut, std::move(k), std::move(v), lease};
  }
  static Op del(std::string k) { return Op{Type::kDelete, std::move(k), {}, 0}; }
  static Op del_prefix(std::string p) { return Op{Type::kDeletePrefix, std::move(p), {}, 0}; }
};

// All compares hold → all ops apply atomically; otherwise nothing changes and commit() returns
// an Error with code kConflict.
struct Txn {
  std::vector<Compare> compares;
  std::vector<Op> ops;
};

struct WatchEvent {
  enum class Type { kPut, kDelete };
  Type type = Type::kPut;
  KeyValue kv;  // for kDelete: key and mod_revision of the deletion
};
using WatchCallback = std::function<void(const std::vector<WatchEvent>&)>;

class MetaStore {
 public:
  virtual ~MetaStore() = default;

  virtual Result<std::optional<KeyValue>> get(std::string_view key) = 0;
  // Keys in [begin, end) in key order, at most `limit` (0 = no limit).
  virtual Result<std::vector<KeyValue>> range(std::string_view begin, std::string_view end,
                                              size_t limit = 0) = 0;
  virtual Result<std::vector<KeyValue>> prefix(std::string_view prefix, size_t limit = 0) = 0;
  // Applies a transaction; returns the new store revision.
  virtual Result<int64_t> commit(const Txn& txn) = 0;
  virtual Result<int64_t> revision() = 0;

  // Leases: keys put with a lease are deleted when it expires or is revoked.
  virtual Result<int64_t> grant_lease(int64_t ttl_ms) = 0;
  virtual Status keep_alive(int64_t lease) = 0;
  virtual Status revoke_lease(int64_t lease) = 0;

  // Watches every change to keys starting with prefix after revision `from_revision`
  // (0 = from now). Returns a watch id for cancel_watch.
  virtual Result<int64_t> watch(std::string_view prefix, int64_t from_revision,
                                WatchCallback cb) = 0;
  virtual void cancel_watch(int64_t watch_id) = 0;

  // The most compares, and the most ops, that one transaction may carry (0 = no limit; etcd:
  // its --max-txn-ops). commit() fails with kInvalidArgument above it. Callers that build large
  // transactions out of independent parts split them to stay within it.
  virtual size_t max_txn_ops() const { return 0; }

  // Convenience: unconditional put / delete.
  Result<int64_t> put(std::string key, std::string value) {
    Txn t;
    t.ops.push_back(Op::put(std::move(key), std::move(value)));
    return commit(t);
  }
  Result<int64_t> del(std::string key) {
    Txn t;
    t.ops.push_back(Op::del(std::move(key)));
    return commit(t);
  }
};

// The smallest key greater than every key starting with p (for range(p, prefix_end(p))).
std::string prefix_end(std::string_view p);

}  // namespace shale::meta
