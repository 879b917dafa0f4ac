// Helpers shared by the storage unit tests: temp directories, waiting for callbacks, and
// switching object writes off on objstore's FaultInjectingStore.
#pragma once

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <future>
#include <mutex>
#include <string>

#include "objstore/fault_injecting_store.h"

namespace shale::storage::testing {

class TempDir {
 public:
  TempDir() {
    static std::atomic<int> n{0};
    path_ = std::filesystem::temp_directory_path() /
            ("shale_storage_" + std::to_string(getpid()) + "_" + std::to_string(n++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Turns a callback API into a blocking call for tests.
template <typename T>
struct Waiter {
  std::promise<T> p;
  std::future<T> f = p.get_future();
  auto cb() {
    return [this](T v) { p.set_value(std::move(v)); };
  }
  T get() { return f.get(); }
};

// While on, every object write (put, multipart start) fails with a retryable I/O error and
// reaches nothing; off drops every fault of the store.
inline void fail_writes(objstore::FaultInjectingStore& store, bool on) {
  if (!on) {
    store.clear();
    return;
  }
  Error err = Error::make(Errc::kIoError, "injected write failure", true);
  store.fail_randomly(objstore::Op::kPut, 1.0, 1, err);
  store.fail_randomly(objstore::Op::kCreateMultipart, 1.0, 1, err);
}

}  // namespace shale::storage::testing
