#include "cluster/placement.h"

#include <queue>
#include <utility>

namespace shale::cluster {

Result<std::vector<int32_t>> place(const std::map<int32_t, int64_t>& owned, int32_t count) {
  if (count < 0) return Error::make(Errc::kInvalidArgument, "negative partition count");
  if (owned.empty()) return Error::make(Errc::kUnavailable, "no live broker to place on", true);
  // Min-heap on (partitions owned, broker id).
  using Entry = std::pair<int64_t, int32_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap;
  for (const auto& [id, n] : owned) heap.emplace(n, id);
  std::vector<int32_t> out;
  out.reserve(static_cast<size_t>(count));
  for (int32_t i = 0; i < count; ++i) {
    auto [n, id] = heap.top();
    heap.pop();
    out.push_back(id);
    heap.emplace(n + 1, id);
  }
  return out;
}

}  // namespace shale::cluster
