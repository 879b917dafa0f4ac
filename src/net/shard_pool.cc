#include "net/shard_pool.h"

#include <chrono>

#include "base/log.h"

namespace shale::net {

namespace {
thread_local int t_current_shard = -1;
}

ShardPool::ShardPool(size_t threads) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  shards_.reserve(threads);
  for (size_t i = 0; i < threads; ++i) shards_.push_back(std::make_unique<Shard>());
}

ShardPool::~ShardPool() { stop(0); }

int ShardPool::current() noexcept { return t_current_shard; }

void ShardPool::start() {
  if (started_) return;
  started_ = true;
  for (size_t i = 0; i < shards_.size(); ++i) {
    Shard& s = *shards_[i];
    s.guard.emplace(s.io.get_executor());
    s.thread = std::thread([this, i, &s] {
      t_current_shard = static_cast<int>(i);
      for (;;) {
        try {
          s.io.run();
          break;
        } catch (const std::exception& e) {
          // A handler escaped with an exception: a bug, but one connection's bug must not take
          // the whole shard down.
          spdlog::error("shard {}: unhandled exception in event loop: {}", i, e.what());
        }
      }
      std::lock_guard lk(mu_);
      ++exited_;
      exited_cv_.notify_all();
    });
  }
}

void ShardPool::stop(int64_t drain_ms) {
  if (!started_ || stopped_) return;
  stopped_ = true;
  for (auto& s : shards_) s->guard.reset();
  {
    std::unique_lock lk(mu_);
    bool drained = exited_cv_.wait_for(lk, std::chrono::milliseconds(drain_ms),
                                       [&] { return exited_ == shards_.size(); });
    if (!drained) {
      spdlog::warn("shards still busy after {} ms; stopping them", drain_ms);
      for (auto& s : shards_) s->io.stop();
    }
  }
  for (auto& s : shards_) {
    if (s->thread.joinable()) s->thread.join();
  }
}

}  // namespace shale::net
