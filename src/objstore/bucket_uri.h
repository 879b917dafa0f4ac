// Bucket URIs as AutoMQ writes them in `s3.data.buckets` / `s3.ops.buckets`:
//   0@s3://bucket?region=us-east-1&endpoint=http://127.0.0.1:8333&pathStyle=true
//   0@s3://bucket?region=r&accessKey=AK&secretKey=SK       (static credentials in the URI)
//   0@file:///abs/path                                     (POSIX directory, local or NFS)
//   memory://  (or AutoMQ's mem://)                        (in-process store, tests only)
// The "<id>@" prefix is optional (id 0 when absent); a list is comma-separated. Query values
// are percent-decoded. Parameters Shale does not use are kept in `params` so the caller can
// warn about them instead of refusing a configuration copied from AutoMQ.
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace shale::objstore {

enum class Scheme { kS3, kFile, kMemory };

struct BucketUri {
  int id = 0;  // AutoMQ's bucket id (a Java short; -2 is its local fallback bucket)
  Scheme scheme = Scheme::kMemory;
  std::string bucket;  // s3: the bucket name
  std::string path;    // file: the absolute directory
  std::string region;
  std::string endpoint;  // "http(s)://host[:port]"; empty = AWS's regional endpoint
  bool path_style = false;
  std::string access_key, secret_key, session_token;
  std::map<std::string, std::string> params;  // every other query parameter

  // For logs: the URI with secretKey and sessionToken masked.
  std::string to_string() const;
};

// Parses one bucket URI; errors are kInvalidArgument naming what is wrong.
Result<BucketUri> parse_bucket_uri(std::string_view text);
// Parses a comma-separated list ("0@s3://a?...,1@s3://b?..."); ids must be unique.
Result<std::vector<BucketUri>> parse_bucket_list(std::string_view text);

// Percent-decoding for query values ('+' is kept: S3 keys and secrets may contain it).
Result<std::string> percent_decode(std::string_view s);

}  // namespace shale::objstore
