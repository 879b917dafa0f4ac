// ThreadPool: a few threads that run blocking work (file I/O) off the callers' threads.
// Tasks run in FIFO order on whichever worker is free. The destructor runs every task already
// submitted, then joins the workers, so callbacks queued before destruction still run once.
// Thread-safety: submit() may be called from any thread, including from inside a task.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace shale::objstore {

class ThreadPool {
 public:
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  void submit(std::function<void()> task);

 private:
  void run();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace shale::objstore
