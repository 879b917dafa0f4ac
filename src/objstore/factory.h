// open_object_store: turns a bucket URI (bucket_uri.h) into a store.
//   s3://...   → S3Store     file:///dir → PosixStore     memory:// → MemoryStore
// S3 settings come from the URI first, then from OpenOptions (configuration keys), then from
// the standard AWS variables: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN,
// AWS_REGION (or AWS_DEFAULT_REGION); the region defaults to us-east-1.
// Thread-safety: a plain function; reads the environment.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "base/result.h"
#include "objstore/bucket_uri.h"
#include "objstore/object_store.h"
#include "objstore/posix_store.h"
#include "objstore/s3_store.h"

namespace shale::objstore {

struct OpenOptions {
  // Fallback credentials and region (e.g. from server.properties), used when the URI has none.
  std::string access_key, secret_key, session_token, region;
  bool use_env = true;  // consult AWS_* variables last
  PosixStoreOptions posix;
  // Concurrency, time-outs and retries for S3; bucket, endpoint and credentials are replaced.
  S3Options s3;
};

Result<std::unique_ptr<ObjectStore>> open_object_store(const BucketUri& uri,
                                                       const OpenOptions& options = {});
Result<std::unique_ptr<ObjectStore>> open_object_store(std::string_view uri,
                                                       const OpenOptions& options = {});

}  // namespace shale::objstore
