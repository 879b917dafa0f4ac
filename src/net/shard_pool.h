// ShardPool: the broker's event-loop threads ("shards", docs/broker.md). Each shard is one
// thread running its own asio::io_context; state owned by a shard is touched only on that
// thread, so the data path needs no locks. Work for another shard is posted to its executor
// and, from a coroutine, awaited with run_on().
//
// Threads: start() spawns the threads; stop() drains and joins them from any non-shard thread.
// Invariants: shard indexes are 0..size()-1 and never change; current() is the index of the
// shard whose thread is calling, or -1 on any other thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include <asio/any_io_executor.hpp>
#include <asio/awaitable.hpp>
#include <asio/co_spawn.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <asio/use_awaitable.hpp>

namespace shale::net {

class ShardPool {
 public:
  // threads == 0 means one shard per hardware thread.
  explicit ShardPool(size_t threads);
  ~ShardPool();
  ShardPool(const ShardPool&) = delete;
  ShardPool& operator=(const ShardPool&) = delete;

  size_t size() const noexcept { return shards_.size(); }
  asio::io_context& context(size_t shard) { return shards_[shard]->io; }
  asio::any_io_executor executor(size_t shard) { return shards_[shard]->io.get_executor(); }

  // Index of the calling thread's shard, or -1 when not called on a shard thread.
  static int current() noexcept;

  void start();
  // Lets every loop finish its queued work, then joins. Loops still busy after `drain_ms`
  // (a handler waiting on something that never comes) are stopped; their pending coroutine
  // frames are destroyed with the io_contexts. Idempotent.
  void stop(int64_t drain_ms);
  bool running() const noexcept { return started_ && !stopped_; }

  // Fire-and-forget: runs fn on the given shard's thread.
  template <typename F>
  void post(size_t shard, F&& fn) {
    asio::post(shards_[shard]->io, std::forward<F>(fn));
  }

  // From a coroutine on any shard: runs the coroutine `fn()` on `shard` and resumes the caller
  // on its own executor with the result (exceptions propagate). `fn` is moved into the new
  // coroutine's frame, so its captures stay alive for the whole call.
  template <typename F>
  auto run_on(size_t shard, F fn) {
    return asio::co_spawn(executor(shard), std::move(fn), asio::use_awaitable);
  }

  // Like run_on, for a plain (non-coroutine) function.
  template <typename F>
  asio::awaitable<std::invoke_result_t<F>> call_on(size_t shard, F fn) {
    using R = std::invoke_result_t<F>;
    co_return co_await asio::co_spawn(
        executor(shard), [f = std::move(fn)]() mutable -> asio::awaitable<R> { co_return f(); },
        asio::use_awaitable);
  }

 private:
  struct Shard {
    asio::io_context io{1};
    std::optional<asio::executor_work_guard<asio::io_context::executor_type>> guard;
    std::thread thread;
  };
  std::vector<std::unique_ptr<Shard>> shards_;
  bool started_ = false;
  bool stopped_ = false;
  std::mutex mu_;
  std::condition_variable exited_cv_;
  size_t exited_ = 0;  // guarded by mu_
};

}  // namespace shale::net
