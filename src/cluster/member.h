// Member: one broker's place in the cluster. It registers the broker at <ns>/brokers/<id> under
// the broker's lease (LeaseKeeper) with a node epoch that rises on every registration, keeps a
// view of the live brokers and of the controller through prefix watches, and campaigns for
// <ns>/controller whenever that key is absent.
//
// Controller fencing: the controller key is created only if absent (compare mod_revision == 0)
// and attached to the controller's lease; it is never rewritten, so its create revision (the
// token) stays its mod revision until the lease lapses and the key is deleted. Every controller
// write goes through controller_commit(), which adds the compare "controller key's mod_revision
// == token": a deposed controller's writes fail in the store, whatever its own view says.
//
// Re-registration: when the keeper re-grants a lost lease (its keys are gone), the member
// registers again with the new lease and a higher node epoch.
//
// Threads: start() and the destructor from any one thread; getters from any thread. Watch
// callbacks (the store's thread) only update the in-memory view; registration, campaigns and the
// listener run on the member's own thread, which may block on the store. The listener must not
// destroy the member. Invariants: live() never holds two records for one id; is_controller()
// implies this member created the current controller key under its current lease.
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "cluster/model.h"
#include "meta/lease_keeper.h"
#include "meta/meta_store.h"

namespace shale::cluster {

struct MemberOptions {
  std::string ns;         // cluster namespace (the cluster id)
  BrokerInfo self;        // id, listeners, rack, WAL URI; node_epoch and start time are set here
  int64_t tick_ms = 200;  // the member thread's period (re-registration, campaign retries)
  // How long start() retries while another live process holds <ns>/brokers/<id> (a restarted
  // broker whose previous lease has not yet expired). 0: fail at once.
  int64_t register_wait_ms = 0;
};

class Member {
 public:
  // Called on the member thread after the live set or the controller changed.
  using Listener = std::function<void()>;

  static Result<std::unique_ptr<Member>> start(meta::MetaStore* store, meta::LeaseKeeper* lease,
                                               MemberOptions opts, Listener listener = {});
  ~Member();  // stops watching and campaigning; keys stay until the lease goes
  Member(const Member&) = delete;
  Member& operator=(const Member&) = delete;

  const Keys& keys() const { return keys_; }
  int32_t id() const { return id_; }
  BrokerInfo self() const;  // as last registered
  std::map<int32_t, BrokerInfo> live() const;
  std::optional<int32_t> controller() const;
  // This member holds the controller key under its current, still valid lease.
  bool is_controller() const;
  int64_t controller_token() const;  // the key's create revision when is_controller(), else 0

  // Rewrites this broker's record with new listener addresses (same lease and node epoch): a
  // broker registers before its listeners are bound, so that a duplicate id is refused before
  // it opens anything, and publishes the bound ports afterwards. Blocking.
  Status set_listeners(std::map<std::string, std::string> listeners);

  // A controller write: txn plus the fencing compare. kFenced when this member is not the
  // controller or its token no longer holds in the store; kConflict when a compare of the
  // caller's failed.
  Result<int64_t> controller_commit(meta::Txn txn);

  // Blocks until pred() holds on the view or timeout_ms passes (tests, start-up).
  bool wait_until(const std::function<bool()>& pred, int64_t timeout_ms);

 private:
  Member(meta::MetaStore* store, meta::LeaseKeeper* lease, MemberOptions opts, Listener l);
  Status register_self();
  void campaign();
  void run();
  void on_broker_events(const std::vector<meta::WatchEvent>& evs);
  void on_controller_events(const std::vector<meta::WatchEvent>& evs);

  meta::MetaStore* store_;
  meta::LeaseKeeper* lease_;
  const Keys keys_;
  const int32_t id_;
  const int64_t tick_ms_;
  Listener listener_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  BrokerInfo self_;
  int64_t registered_lease_ = 0;
  struct Rec {
    BrokerInfo info;
    int64_t mod_revision = 0;
  };
  std::map<int32_t, Rec> live_;
  struct Ctl {
    int32_t id = -1;
    int64_t create_revision = 0;
    int64_t mod_revision = 0;
    int64_t lease = 0;
  };
  std::optional<Ctl> ctl_;
  int64_t ctl_deleted_rev_ = 0;  // mod revision of the last deletion seen
  int64_t my_token_ = 0;         // create revision of the controller key this member made
  int64_t my_token_lease_ = 0;   // the lease it was made under
  bool changed_ = false;
  bool stop_ = false;
  int64_t broker_watch_ = 0;
  int64_t ctl_watch_ = 0;
  std::thread thread_;
};

}  // namespace shale::cluster
