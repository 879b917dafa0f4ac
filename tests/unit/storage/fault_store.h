// FaultStore: an ObjectStore wrapper for tests that fails puts/gets on demand and counts calls
// (the objstore module's fault-injecting wrapper can replace it once merged).
#pragma once

#include <atomic>

#include "objstore/memory_store.h"

namespace shale::storage::testing {

class FaultStore final : public objstore::ObjectStore {
 public:
  std::atomic<bool> fail_puts{false};
  std::atomic<bool> fail_gets{false};
  std::atomic<int> puts{0};
  std::atomic<int> gets{0};
  objstore::MemoryStore inner;

  void put(const std::string& key, BufferChain data, objstore::StatusCallback done) override {
    ++puts;
    if (fail_puts) return done(Error::make(Errc::kIoError, "injected PUT failure", true));
    inner.put(key, std::move(data), std::move(done));
  }
  void get(const std::string& key, objstore::Range range, objstore::GetCallback done) override {
    ++gets;
    if (fail_gets) return done(Error::make(Errc::kIoError, "injected GET failure", true));
    inner.get(key, range, std::move(done));
  }
  void remove(std::vector<std::string> keys, objstore::StatusCallback done) override {
    inner.remove(std::move(keys), std::move(done));
  }
  void list(const std::string& prefix, objstore::ListCallback done) override {
    inner.list(prefix, std::move(done));
  }
  void create_multipart(const std::string& key, objstore::MultipartCallback done) override {
    if (fail_puts) return done(Error::make(Errc::kIoError, "injected multipart failure", true));
    inner.create_multipart(key, std::move(done));
  }
  std::string describe() const override { return "fault(memory)"; }
};

}  // namespace shale::storage::testing
