// Bridges between the broker's coroutines (asio awaitables on a shard) and the two other kinds
// of work they wait for: engine callbacks (run on engine threads) and blocking MetaStore/Engine
// calls (run on the broker's worker pool).
//
// Threads: await_callback() resumes the awaiting coroutine on its own executor (the shard), never
// on the thread that ran the callback, so handler code stays single-threaded per shard.
// Invariant: the callback given to `start` must be called exactly once.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <type_traits>
#include <utility>

#include <asio/associated_executor.hpp>
#include <asio/async_result.hpp>
#include <asio/awaitable.hpp>
#include <asio/post.hpp>
#include <asio/thread_pool.hpp>
#include <asio/use_awaitable.hpp>

namespace shale::broker {

// Runs start(done) and suspends until done(T) is called (from any thread, possibly inline).
template <typename T, typename Start>
asio::awaitable<T> await_callback(Start start) {
  return asio::async_initiate<const asio::use_awaitable_t<>&, void(T)>(
      [start = std::move(start)](auto handler) mutable {
        using H = decltype(handler);
        auto h = std::make_shared<H>(std::move(handler));
        start(std::function<void(T)>([h](T v) {
          auto ex = asio::get_associated_executor(*h);
          asio::post(ex, [h, v = std::move(v)]() mutable { std::move (*h)(std::move(v)); });
        }));
      },
      asio::use_awaitable);
}

// Runs fn() (which may block) on `pool` and resumes the caller on its own executor.
// Deliberately not a coroutine itself, and callers pass named lambdas rather than temporaries
// inside the co_await expression: GCC 12 mis-destroys lambda temporaries with non-trivial
// captures in co_await full-expressions (ASan reported a bad free).
template <typename F>
asio::awaitable<std::invoke_result_t<F>> run_blocking(asio::thread_pool& pool, F fn) {
  using R = std::invoke_result_t<F>;
  return await_callback<R>([&pool, fn = std::move(fn)](std::function<void(R)> done) mutable {
    asio::post(pool, [fn = std::move(fn), done = std::move(done)]() mutable { done(fn()); });
  });
}

// Counts outstanding callbacks (from any thread); wait() completes once all have arrived.
// Used to issue many engine operations at once and await them together.
class CallbackLatch {
 public:
  void add() {
    std::lock_guard lock(mu_);
    ++remaining_;
  }
  void count_down() {
    std::function<void(bool)> w;
    {
      std::lock_guard lock(mu_);
      if (--remaining_ > 0 || !waiter_) return;
      w = std::move(waiter_);
      waiter_ = nullptr;
    }
    w(true);
  }
  // Suspends until the count reaches zero (at once if it already has).
  asio::awaitable<bool> wait() {
    return await_callback<bool>([this](std::function<void(bool)> done) {
      {
        std::lock_guard lock(mu_);
        if (remaining_ > 0) {
          waiter_ = std::move(done);
          return;
        }
      }
      done(true);
    });
  }

 private:
  std::mutex mu_;
  int remaining_ = 0;
  std::function<void(bool)> waiter_;
};

}  // namespace shale::broker
