// WalUri: what `s3.wal.path` names, in every spelling a Shale or AutoMQ configuration uses:
//   file:///abs/path                        Shale's file WAL (a preallocated ring file, or a
//   /abs/path                               block device); a bare path is AutoMQ's old form
//   0@file:///abs/path?capacity=..&iodepth=..&iops=..&iobandwidth=..&timeout=..
//                                           AutoMQ's block/file WAL; capacity sets the ring size
//   0@s3://bucket?region=..&endpoint=..&batchInterval=..&maxBytesInBatch=..&maxUnflushedBytes=..
//                                           AutoMQ's S3 WAL: the WAL as objects in that bucket
//                                           (which may differ from the data bucket)
//   object://prefix                         Shale's object WAL inside the data bucket
// Parameters Shale reads are taken out; the ones it accepts without using (AutoMQ's I/O tuning:
// iodepth, iops, iobandwidth, timeout, maxInflightUploadCount, readaheadDataSize) are listed in
// `ignored` so `shale serve` can say so once instead of refusing a copied configuration.
// Thread-safety: plain values and a pure function.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "objstore/bucket_uri.h"

namespace shale::app {

struct WalUri {
  enum class Kind { kFile, kObject };
  Kind kind = Kind::kFile;
  std::string path;                  // kFile: absolute path of the ring file or block device
  std::optional<uint64_t> capacity;  // kFile: ?capacity= (overrides s3.wal.capacity)
  // kObject: the bucket holding the WAL objects; nullopt = the data bucket (object://prefix).
  std::optional<objstore::BucketUri> bucket;
  std::string prefix;  // kObject: key prefix of the WAL objects ("" = the caller's default)
  std::optional<int64_t> batch_interval_ms;  // ?batchInterval=
  std::optional<uint64_t> batch_bytes;       // ?maxBytesInBatch=
  std::optional<uint64_t> max_unflushed;     // ?maxUnflushedBytes=
  std::vector<std::string> ignored;          // accepted AutoMQ parameters Shale does not use
};

// Errors are kInvalidArgument and name what is wrong.
Result<WalUri> parse_wal_uri(std::string_view text);

}  // namespace shale::app
