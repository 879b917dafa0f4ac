#include "objstore/retry.h"

#include <algorithm>

namespace shale::objstore {

int64_t RetryPolicy::backoff_cap_ms(int retry) const {
  if (base_delay_ms <= 0 || max_delay_ms <= 0) return 0;
  int64_t cap = base_delay_ms;
  for (int i = 0; i < retry && cap < max_delay_ms; ++i) cap *= 2;  // stops before overflow
  return std::min(cap, max_delay_ms);
}

int64_t RetryPolicy::backoff_ms(int retry, std::mt19937_64& rng) const {
  int64_t cap = backoff_cap_ms(retry);
  if (cap <= 0) return 0;
  return std::uniform_int_distribution<int64_t>(0, cap)(rng);
}

bool http_status_retryable(long status) { return status >= 500 || status == 408 || status == 429; }

}  // namespace shale::objstore
