// StoreCounters: the atomic counters behind ObjectStore::stats(). Each backend owns one and
// bumps it from whichever thread completes an operation (callers, pool or I/O threads), so
// every field is a relaxed atomic; a snapshot is not a consistent cut across fields.
#pragma once

#include <atomic>
#include <cstdint>

#include "objstore/object_store.h"

namespace shale::objstore {

class StoreCounters {
 public:
  std::atomic<uint64_t> puts{0}, gets{0}, deletes{0}, lists{0}, put_bytes{0}, get_bytes{0},
      errors{0}, retries{0}, requests{0};

  static void add(std::atomic<uint64_t>& c, uint64_t n = 1) {
    c.fetch_add(n, std::memory_order_relaxed);
  }
  StoreStats snapshot() const {
    auto r = [](const std::atomic<uint64_t>& c) { return c.load(std::memory_order_relaxed); };
    return StoreStats{r(puts),      r(gets),   r(deletes), r(lists),   r(put_bytes),
                      r(get_bytes), r(errors), r(retries), r(requests)};
  }
};

}  // namespace shale::objstore
