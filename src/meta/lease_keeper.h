// LeaseKeeper: holds a MetaStore lease alive. It grants a lease, renews it every ttl/3 on its
// own thread, and knows until when the lease is surely valid: the monotonic time at which the
// last successful grant or renewal request was *sent*, plus the TTL (the store counts the TTL
// from when it received the request, which is later). A broker checks valid_until_ms() before
// acknowledging anything that its lease protects.
//
// When a renewal fails the keeper retries quickly; once valid_until_ms() has passed it calls
// on_expired (once per lapse, on its thread) and keeps trying. If the store comes back while
// the lease still exists (etcd renews every lease after a leader change), the keeper is valid
// again. If the store answers that the lease no longer exists: without `regrant` the keeper
// stops for good (expired() turns true); with it, the keeper grants a new lease (lease()
// changes; keys attached to the old one are gone and must be written again) and carries on.
//
// Threads: all methods are thread-safe; on_expired runs on the keeper's thread and must not
// destroy the keeper. Invariant: valid_until_ms() never moves past send time + TTL.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "meta/meta_store.h"

namespace shale::meta {

class LeaseKeeper {
 public:
  static Result<std::unique_ptr<LeaseKeeper>> start(MetaStore* store, int64_t ttl_ms,
                                                    std::function<void()> on_expired = {},
                                                    bool regrant = false);
  ~LeaseKeeper();  // stops renewing; does not revoke (call revoke() for a clean exit)
  LeaseKeeper(const LeaseKeeper&) = delete;
  LeaseKeeper& operator=(const LeaseKeeper&) = delete;

  int64_t lease() const { return lease_.load(); }
  int64_t ttl_ms() const { return ttl_ms_; }
  // Monotonic milliseconds (base/clock.h mono_ms) before which the lease is surely valid.
  int64_t valid_until_ms() const { return valid_until_.load(); }
  bool valid() const;
  // The store said the lease is gone: it will not come back.
  bool expired() const { return expired_.load(); }
  Status revoke();

 private:
  LeaseKeeper(MetaStore* store, int64_t lease, int64_t ttl_ms, int64_t valid_until,
              std::function<void()> on_expired, bool regrant);
  void run();

  MetaStore* store_;
  std::atomic<int64_t> lease_;
  const int64_t ttl_ms_;
  std::atomic<int64_t> valid_until_;
  std::atomic<bool> expired_{false};
  std::function<void()> on_expired_;
  const bool regrant_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace shale::meta
