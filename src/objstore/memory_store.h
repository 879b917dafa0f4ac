// MemoryStore: an ObjectStore held in process memory. For unit tests only; a broker never uses
// it. Callbacks run inline on the calling thread. Thread-safe (one mutex).
#pragma once

#include <map>
#include <mutex>

#include "objstore/counters.h"
#include "objstore/object_store.h"

namespace shale::objstore {

class MemoryStore final : public ObjectStore {
 public:
  void put(const std::string& key, BufferChain data, StatusCallback done) override;
  void get(const std::string& key, Range range, GetCallback done) override;
  void remove(std::vector<std::string> keys, StatusCallback done) override;
  void list(const std::string& prefix, ListCallback done) override;
  void create_multipart(const std::string& key, MultipartCallback done) override;
  std::string describe() const override { return "memory"; }
  StoreStats stats() const override { return counters_.snapshot(); }

  // Counters for tests and benchmarks.
  uint64_t put_count() const;
  uint64_t get_count() const;
  size_t object_count() const;

 private:
  friend class MemoryMultipart;
  void commit(const std::string& key, Buffer data);

  mutable std::mutex mu_;
  std::map<std::string, std::pair<Buffer, int64_t>> objects_;
  uint64_t puts_ = 0;
  uint64_t gets_ = 0;
  StoreCounters counters_;
};

}  // namespace shale::objstore
