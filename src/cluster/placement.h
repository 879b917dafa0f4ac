// Placement of new partitions over live brokers: each new partition goes to the live broker
// that owns the fewest partitions, counting the ones placed before it in the same call; ties go
// to the lowest broker id, so the result is a pure function of its input.
//
// Threads: pure function; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "base/result.h"

namespace shale::cluster {

// owned: every live broker → the partitions it owns now. Returns `count` owners, in order.
// kUnavailable when no broker is live; kInvalidArgument for a negative count.
Result<std::vector<int32_t>> place(const std::map<int32_t, int64_t>& owned, int32_t count);

}  // namespace shale::cluster
