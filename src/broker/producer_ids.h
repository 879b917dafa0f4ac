// Producer id allocation for InitProducerId. Ids are reserved from the MetaStore in blocks
// (key `<ns>/producer_ids/next`, compare-and-set), as Kafka's controller hands brokers blocks
// of 1000, so an id is never given out twice, even across restarts or several brokers.
//
// Threads: allocate() is thread-safe and blocks on the MetaStore when a block runs out: call it
// on a worker thread.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

#include "base/result.h"

namespace shale::meta {
class MetaStore;
}

namespace shale::broker {

class ProducerIdManager {
 public:
  static constexpr int64_t kBlockSize = 1000;
  ProducerIdManager(meta::MetaStore* meta, std::string ns)
      : meta_(meta), key_(std::move(ns) + "/producer_ids/next") {}
  Result<int64_t> allocate();

 private:
  meta::MetaStore* meta_;
  const std::string key_;
  std::mutex mu_;
  int64_t next_ = 0;
  int64_t end_ = 0;  // exclusive; next_ == end_ means a new block is needed
};

}  // namespace shale::broker
