// RetryPolicy: how many times and how long to wait before re-sending a failed object-store
// request. Exponential back-off with "full jitter" (AWS architecture blog, "Exponential Backoff
// And Jitter"): attempt n waits a uniformly random time in [0, min(max, base * 2^n)], so many
// brokers retrying after one S3 hiccup do not retry in lock-step.
// Thread-safety: RetryPolicy is a plain value; backoff() takes the random source from the
// caller so each I/O thread keeps its own generator.
#pragma once

#include <cstdint>
#include <random>

namespace shale::objstore {

struct RetryPolicy {
  int max_attempts = 10;         // total tries including the first; 1 = never retry
  int64_t base_delay_ms = 50;    // cap of the first retry's wait
  int64_t max_delay_ms = 10000;  // the wait never exceeds this

  // The upper bound of the wait before retry number `retry` (0 = first retry):
  // min(max_delay_ms, base_delay_ms * 2^retry), without overflow for any retry.
  int64_t backoff_cap_ms(int retry) const;
  // A jittered wait in [0, backoff_cap_ms(retry)].
  int64_t backoff_ms(int retry, std::mt19937_64& rng) const;
  // Whether attempt number `attempts_done` (1-based, already failed) may be followed by another.
  bool may_retry(int attempts_done) const { return attempts_done < max_attempts; }
};

// Whether an HTTP status from S3 is worth retrying: 5xx (500, 502, 503 SlowDown, 504), 408
// Request Timeout and 429 Too Many Requests. Other 4xx are the caller's fault and final.
bool http_status_retryable(long status);

}  // namespace shale::objstore
