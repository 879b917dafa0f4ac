// EtcdMetaStore: the MetaStore on an etcd v3 cluster, through etcd's JSON gateway (/v3/kv/*,
// /v3/lease/*, /v3/watch) over libcurl. Everything etcd 3.4 serves is enough.
//
// Namespace: every key of the store lives under `prefix` (may be empty); keys handed to and
// returned from this class never include it. Revisions are etcd's (one per cluster, shared with
// any other user of that etcd), so they start wherever the cluster is, not at 0.
//
// Endpoints: requests go to the current endpoint; a connection error (refused, reset, timed
// out) moves to the next one and retries within the call's deadline (`request_timeout_ms`).
// Writes are retried only when etcd cannot have applied them (the connection was refused, or
// etcd answered "no leader"/"leader changed" before proposing); otherwise the call fails with
// a retryable kUnavailable and the caller re-reads.
//
// Limits: a transaction whose compares or ops exceed `max_txn_ops`, or whose encoded size
// exceeds `max_request_bytes`, fails with kInvalidArgument naming etcd's --max-txn-ops /
// --max-request-bytes flag (never split: splitting would break the atomicity the interface
// promises). open() checks that the server accepts transactions of `max_txn_ops` compares, and
// fails naming --max-txn-ops if it does not.
//
// Watches: one reader thread per watch holds a /v3/watch stream; events go to one store-owned
// dispatcher thread that calls callbacks one at a time, one call per revision, in revision
// order for each watch (two watches' deliveries interleave in arrival order). A dropped
// stream (etcd restart, leader change, member killed) reconnects — to the next endpoint — and
// resumes from the last delivered revision + 1. If etcd answers that revision was compacted,
// the watcher reloads the prefix and emits synthesized events that bring it to the current
// state (puts for keys newer than what it saw, deletes for keys it knew that are gone), then
// resumes. For that each watch keeps the set of keys under its prefix that it knows exist.
//
// Not handled: an etcd cluster rebuilt from scratch (revisions going backwards) — watches would
// wait for revisions the new cluster has not reached.
//
// Threading: every public method is thread-safe and blocks on the network. Callbacks must not
// call watch()/cancel_watch() (they may read or write). cancel_watch() waits for a running
// callback unless called from one.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "meta/meta_store.h"

namespace shale::meta {

struct EtcdOptions {
  std::vector<std::string> endpoints;   // host:port, plain HTTP
  std::string prefix;                   // namespace of every key ("" = none)
  int64_t request_timeout_ms = 5000;    // deadline of one call, retries included
  int64_t connect_timeout_ms = 1000;    // per connection attempt
  int64_t max_txn_ops = 128;            // etcd's --max-txn-ops default
  int64_t max_request_bytes = 1572864;  // etcd's --max-request-bytes default (1.5 MiB)
  int64_t watch_retry_ms = 100;         // pause before a watch reconnects
};

// Parses `etcd://host:port[,host:port...][/prefix]` into endpoints and prefix.
Result<EtcdOptions> parse_etcd_uri(std::string_view uri);

class EtcdMetaStore final : public MetaStore {
 public:
  static Result<std::unique_ptr<EtcdMetaStore>> open(const EtcdOptions& opts);
  ~EtcdMetaStore() override;

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

  size_t max_txn_ops() const override { return static_cast<size_t>(opts_.max_txn_ops); }
  const EtcdOptions& options() const { return opts_; }

  // The opaque impl types below are public only so that the .cc's helpers can name them.
  struct Http;
  struct Watcher;

 private:
  explicit EtcdMetaStore(EtcdOptions opts);
  Status probe_limits();
  Result<std::vector<KeyValue>> range_raw(const std::string& begin, const std::string& end,
                                          size_t limit, int64_t* header_rev, bool keys_only,
                                          int64_t at_revision);
  void watch_loop(const std::shared_ptr<Watcher>& w);
  Status reload_after_compaction(Watcher& w);
  void enqueue(int64_t watch_id, std::vector<WatchEvent> events);
  void dispatch_loop();

  struct Pending {
    int64_t watch_id;
    std::vector<WatchEvent> events;  // one revision
  };

  EtcdOptions opts_;
  std::unique_ptr<Http> http_;

  std::mutex mu_;  // guards watchers_, queue_, stop_
  std::condition_variable cv_;
  std::map<int64_t, std::shared_ptr<Watcher>> watchers_;
  int64_t next_watch_id_ = 1;
  std::deque<Pending> queue_;
  bool stop_ = false;
  std::mutex deliver_mu_;  // held while a callback runs
  std::thread dispatcher_;
};

}  // namespace shale::meta
