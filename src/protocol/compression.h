// Compression of Kafka record-batch payloads (gzip, snappy in Kafka's xerial framing, lz4
// frame, zstd). Decompression validates record counts of compressed batches; compression is
// for a topic whose compression.type differs from the producer's (the broker recompresses, as
// Kafka does). Batches of topics with compression.type=producer are stored as the client
// compressed them.
// Pure functions; safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/buffer.h"
#include "base/result.h"

namespace shale::protocol {

// The codec in bits 0-2 of a v2 batch's attributes.
enum class Compression : uint8_t { kNone = 0, kGzip = 1, kSnappy = 2, kLz4 = 3, kZstd = 4 };

const char* compression_name(Compression c);

// Decompresses `in` with codec `c`. Output larger than `max_output` bytes is an error, so a
// small hostile payload cannot inflate into gigabytes. Corrupt input → kCorruption; an unknown
// codec → kUnsupported.
Result<Buffer> decompress(Compression c, const uint8_t* in, size_t n, size_t max_output);

// Compresses `in` with codec `c` in the format Kafka's Java client writes (kNone copies).
Result<Buffer> compress(Compression c, const uint8_t* in, size_t n);

}  // namespace shale::protocol
