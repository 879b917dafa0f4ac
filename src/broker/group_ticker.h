// GroupTicker: drives the group coordinator's timers (member session expiry, rebalance and
// join timeouts, the initial rebalance delay, pending-sync expiry, offset retention). The
// coordinator fires due timers at every call, but an idle coordinator needs someone to call
// tick(): this class runs one thread that sleeps until the coordinator's next deadline (at
// most `max_interval_ms`) and then ticks. A tick may complete parked JoinGroup/SyncGroup
// requests; their callbacks run on this thread and post the answers to the waiting shards.
//
// Threads: tick() blocks (MetaStore writes), which is why it gets its own thread rather than
// an event-loop timer. poke() is thread-safe and cheap: handlers call it after each
// coordinator call so that a deadline earlier than the current sleep is honoured.
// Lifetime: start() once; stop() (or the destructor) joins the thread. The coordinator must
// outlive the ticker.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

#include "group/coordinator.h"

namespace shale::broker {

class GroupTicker {
 public:
  using Clock = std::function<int64_t()>;  // must be the coordinator's clock (ms)

  explicit GroupTicker(group::Coordinator& coordinator, int64_t max_interval_ms = 100,
                       Clock clock = nullptr);
  ~GroupTicker();
  GroupTicker(const GroupTicker&) = delete;
  GroupTicker& operator=(const GroupTicker&) = delete;

  void start();
  void stop();
  // Wakes the thread to re-read the coordinator's next deadline.
  void poke();
  // Ticks done so far (for tests and diagnostics).
  uint64_t ticks() const;

 private:
  void run();

  group::Coordinator& coordinator_;
  const int64_t max_interval_ms_;
  Clock clock_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  bool poked_ = false;
  uint64_t ticks_ = 0;
  std::thread thread_;
};

}  // namespace shale::broker
