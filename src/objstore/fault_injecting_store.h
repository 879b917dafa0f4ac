// FaultInjectingStore: wraps any ObjectStore and fails, delays or tears chosen operations on
// purpose, so storage code can be tested against S3 hiccups and full disks without a real
// outage (LevelDB's fault-injection Env, for objects).
//
//   MemoryStore mem;
//   FaultInjectingStore fs(mem);
//   fs.fail_next(Op::kPut, 2);                       // next 2 puts: retryable 503 SlowDown
//   fs.fail_next(Op::kGet, 1, Error::make(Errc::kNotFound, "gone"));
//   fs.lose_response_next(Op::kPut, 1);              // put lands, caller sees a timeout
//   fs.tear_next(Op::kGet, 1);                       // get returns only the first half, ok
//   fs.set_delay(Op::kPut, std::chrono::milliseconds(50));
//   fs.fail_randomly(Op::kGet, 0.1, seed);           // 10 % of gets fail
//   fs.calls(Op::kPut);                              // how many puts were attempted
//
// Faults are checked in this order for each call: a scripted failure (fail_next), then a lost
// response, then a tear, then random failure; the first that applies wins and uses up one
// count. A failed call never reaches the inner store (nothing is written); a lost response
// does reach it. Torn put: the first half of the bytes is written to the inner store under the
// key and the call fails (a non-atomic backend crashing mid-write); torn get: the call succeeds
// with the first half of the requested bytes.
//
// Threading: all settings may be changed from any thread while calls are in flight (one
// mutex). Callbacks run where the inner store runs them, or on the wrapper's timer thread for
// delayed calls. The destructor runs every delayed callback still pending, then joins the
// timer thread; the inner store must outlive the wrapper and any MultipartUpload it returned.
#pragma once

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "objstore/object_store.h"

namespace shale::objstore {

enum class Op { kPut, kGet, kRemove, kList, kCreateMultipart, kUploadPart, kComplete, kAbort };
constexpr int kOpCount = 8;

class FaultInjectingStore final : public ObjectStore {
 public:
  explicit FaultInjectingStore(ObjectStore& inner);
  ~FaultInjectingStore() override;

  // The error injected when none is given: what S3 says when it throttles.
  static Error slow_down() {
    return Error::make(Errc::kUnavailable, "injected: 503 SlowDown", true);
  }

  // The next n calls of op fail with err without reaching the inner store.
  void fail_next(Op op, int n, Error err = slow_down());
  // The next n calls of op reach the inner store, but the caller gets err (a timed-out
  // response to a request that did succeed).
  void lose_response_next(Op op, int n,
                          Error err = Error::make(Errc::kTimeout, "injected: lost response", true));
  // The next n puts or gets are torn (see above); other ops ignore tears.
  void tear_next(Op op, int n);
  // Every call of op fails with probability p (0..1), drawn from a generator seeded with seed.
  void fail_randomly(Op op, double p, uint64_t seed, Error err = slow_down());
  // Every call of op completes no earlier than d after it was made.
  void set_delay(Op op, std::chrono::milliseconds d);
  // Drops every fault and delay (counters stay).
  void clear();

  // Calls made of op (including failed ones) and faults injected so far.
  uint64_t calls(Op op) const;
  uint64_t injected() const;

  void put(const std::string& key, BufferChain data, StatusCallback done) override;
  void get(const std::string& key, Range range, GetCallback done) override;
  void remove(std::vector<std::string> keys, StatusCallback done) override;
  void list(const std::string& prefix, ListCallback done) override;
  void create_multipart(const std::string& key, MultipartCallback done) override;
  std::string describe() const override { return "faulty(" + inner_.describe() + ")"; }
  bool prefers_single_put() const override { return inner_.prefers_single_put(); }
  StoreStats stats() const override { return inner_.stats(); }

 private:
  friend class FaultyMultipart;
  enum class Action { kPass, kFail, kLoseResponse, kTear };
  struct Decision {
    Action action = Action::kPass;
    Error error;
    std::chrono::milliseconds delay{0};
  };
  struct OpState {
    int fail_n = 0;
    Error fail_err;
    int lose_n = 0;
    Error lose_err;
    int tear_n = 0;
    double p = 0;
    Error p_err;
    std::chrono::milliseconds delay{0};
    uint64_t calls = 0;
  };

  Decision decide(Op op);
  // Runs fn now, or on the timer thread once the delay has passed.
  void later(std::chrono::milliseconds delay, std::function<void()> fn);
  void timer_loop();

  ObjectStore& inner_;
  mutable std::mutex mu_;
  std::array<OpState, kOpCount> ops_;
  std::mt19937_64 rng_{1};
  uint64_t injected_ = 0;

  std::mutex timer_mu_;
  std::condition_variable timer_cv_;
  std::multimap<std::chrono::steady_clock::time_point, std::function<void()>> timers_;
  bool stopping_ = false;
  std::thread timer_;
};

}  // namespace shale::objstore
