#include "protocol/compression.h"

#include <lz4frame.h>
#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "base/endian.h"

namespace shale::protocol {

namespace {

Error corrupt(const std::string& what) { return Error::make(Errc::kCorruption, what); }

Error too_large(size_t max_output) {
  return corrupt("decompressed size exceeds " + std::to_string(max_output) + " bytes");
}

Result<Buffer> gunzip(const uint8_t* in, size_t n, size_t max_output) {
  z_stream zs{};
  // 15 + 32: zlib or gzip header auto-detected (Kafka writes gzip).
  if (inflateInit2(&zs, 15 + 32) != Z_OK) return corrupt("inflateInit2 failed");
  std::vector<uint8_t> out;
  zs.next_in = const_cast<Bytef*>(in);
  zs.avail_in = static_cast<uInt>(n);
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    if (out.size() >= max_output) {
      inflateEnd(&zs);
      return too_large(max_output);
    }
    size_t old = out.size();
    size_t chunk = std::min<size_t>(std::max<size_t>(old, 16384), max_output - old);
    out.resize(old + chunk);
    zs.next_out = out.data() + old;
    zs.avail_out = static_cast<uInt>(chunk);
    rc = inflate(&zs, Z_NO_FLUSH);
    out.resize(old + chunk - zs.avail_out);
    if (rc == Z_STREAM_END) break;
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      inflateEnd(&zs);
      return corrupt("gzip: corrupt stream");
    }
    if (rc == Z_BUF_ERROR && zs.avail_in == 0) {
      inflateEnd(&zs);
      return corrupt("gzip: truncated stream");
    }
  }
  inflateEnd(&zs);
  return Buffer::take(std::move(out));
}

Status snappy_block(const uint8_t* in, size_t n, std::vector<uint8_t>& out, size_t max_output) {
  size_t len = 0;
  if (snappy_uncompressed_length(reinterpret_cast<const char*>(in), n, &len) != SNAPPY_OK) {
    return corrupt("snappy: bad block header");
  }
  if (len > max_output - out.size()) return too_large(max_output);
  size_t old = out.size();
  out.resize(old + len);
  size_t got = len;
  if (snappy_uncompress(reinterpret_cast<const char*>(in), n,
                        reinterpret_cast<char*>(out.data() + old), &got) != SNAPPY_OK ||
      got != len) {
    return corrupt("snappy: corrupt block");
  }
  return ok_status();
}

// Kafka's Java client frames snappy with xerial's SnappyOutputStream: a 16-byte header
// (magic \x82SNAPPY\0, version, compatible version) then [int32 length][snappy block]...
// librdkafka writes the same framing. Raw snappy is accepted too.
Result<Buffer> unsnappy(const uint8_t* in, size_t n, size_t max_output) {
  static constexpr uint8_t kXerialMagic[8] = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0};
  std::vector<uint8_t> out;
  if (n >= 16 && std::memcmp(in, kXerialMagic, 8) == 0) {
    size_t pos = 16;
    while (pos < n) {
      if (n - pos < 4) return corrupt("snappy: truncated xerial block length");
      const uint32_t len = be::load32(in + pos);
      pos += 4;
      if (len > n - pos) return corrupt("snappy: xerial block exceeds the payload");
      SHALE_TRY(snappy_block(in + pos, len, out, max_output));
      pos += len;
    }
  } else {
    SHALE_TRY(snappy_block(in, n, out, max_output));
  }
  return Buffer::take(std::move(out));
}

Result<Buffer> unlz4(const uint8_t* in, size_t n, size_t max_output) {
  LZ4F_dctx* dctx = nullptr;
  if (LZ4F_isError(LZ4F_createDecompressionContext(&dctx, LZ4F_VERSION))) {
    return corrupt("lz4: cannot create context");
  }
  std::unique_ptr<LZ4F_dctx, decltype(&LZ4F_freeDecompressionContext)> guard(
      dctx, &LZ4F_freeDecompressionContext);
  std::vector<uint8_t> out;
  size_t pos = 0;
  size_t hint = 1;
  while (pos < n && hint != 0) {
    if (out.size() >= max_output) return too_large(max_output);
    size_t old = out.size();
    size_t chunk = std::min<size_t>(std::max<size_t>(old, 65536), max_output - old);
    out.resize(old + chunk);
    size_t dst = chunk;
    size_t src = n - pos;
    hint = LZ4F_decompress(dctx, out.data() + old, &dst, in + pos, &src, nullptr);
    if (LZ4F_isError(hint)) return corrupt(std::string("lz4: ") + LZ4F_getErrorName(hint));
    out.resize(old + dst);
    pos += src;
    if (src == 0 && dst == 0) break;
  }
  if (hint != 0) return corrupt("lz4: truncated frame");
  return Buffer::take(std::move(out));
}

Result<Buffer> unzstd(const uint8_t* in, size_t n, size_t max_output) {
  std::unique_ptr<ZSTD_DStream, decltype(&ZSTD_freeDStream)> ds(ZSTD_createDStream(),
                                                                &ZSTD_freeDStream);
  if (!ds || ZSTD_isError(ZSTD_initDStream(ds.get()))) return corrupt("zstd: init failed");
  std::vector<uint8_t> out;
  ZSTD_inBuffer ib{in, n, 0};
  size_t ret = 1;
  while (ib.pos < ib.size || ret != 0) {
    if (out.size() >= max_output) return too_large(max_output);
    size_t old = out.size();
    size_t chunk = std::min<size_t>(std::max<size_t>(old, 65536), max_output - old);
    out.resize(old + chunk);
    ZSTD_outBuffer ob{out.data() + old, chunk, 0};
    size_t before = ib.pos;
    ret = ZSTD_decompressStream(ds.get(), &ob, &ib);
    if (ZSTD_isError(ret)) return corrupt(std::string("zstd: ") + ZSTD_getErrorName(ret));
    out.resize(old + ob.pos);
    if (ret != 0 && ib.pos == ib.size && ob.pos == 0 && before == ib.pos) {
      return corrupt("zstd: truncated frame");
    }
    if (ret == 0 && ib.pos == ib.size) break;
  }
  return Buffer::take(std::move(out));
}

}  // namespace

const char* compression_name(Compression c) {
  switch (c) {
    case Compression::kNone:
      return "none";
    case Compression::kGzip:
      return "gzip";
    case Compression::kSnappy:
      return "snappy";
    case Compression::kLz4:
      return "lz4";
    case Compression::kZstd:
      return "zstd";
  }
  return "unknown";
}

Result<Buffer> decompress(Compression c, const uint8_t* in, size_t n, size_t max_output) {
  switch (c) {
    case Compression::kNone:
      if (n > max_output) return too_large(max_output);
      return Buffer::copy(in, n);
    case Compression::kGzip:
      return gunzip(in, n, max_output);
    case Compression::kSnappy:
      return unsnappy(in, n, max_output);
    case Compression::kLz4:
      return unlz4(in, n, max_output);
    case Compression::kZstd:
      return unzstd(in, n, max_output);
  }
  return Error::make(Errc::kUnsupported, "unknown compression codec");
}

namespace {

Error compress_failed(const std::string& what) { return Error::make(Errc::kInternal, what); }

Result<Buffer> gzip(const uint8_t* in, size_t n) {
  z_stream zs{};
  // 15 + 16: a gzip header, as Kafka's GZIPOutputStream writes.
  if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
      Z_OK) {
    return compress_failed("deflateInit2 failed");
  }
  std::vector<uint8_t> out(deflateBound(&zs, static_cast<uLong>(n)));
  zs.next_in = const_cast<Bytef*>(in);
  zs.avail_in = static_cast<uInt>(n);
  zs.next_out = out.data();
  zs.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&zs, Z_FINISH);
  out.resize(out.size() - zs.avail_out);
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) return compress_failed("gzip: deflate failed");
  return Buffer::take(std::move(out));
}

// xerial framing as Kafka's Java client writes it: the 16-byte header, then one
// [int32 length][snappy block] per 32 KiB of input (SnappyOutputStream's default block).
Result<Buffer> snappy(const uint8_t* in, size_t n) {
  static constexpr uint8_t kHeader[16] = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0,
                                          0,    0,   0,   1,   0,   0,   0,   1};
  constexpr size_t kBlock = 32 * 1024;
  std::vector<uint8_t> out(kHeader, kHeader + sizeof kHeader);
  for (size_t pos = 0; pos < n || (n == 0 && pos == 0); pos += kBlock) {
    const size_t len = std::min(kBlock, n - pos);
    const size_t at = out.size();
    size_t max = snappy_max_compressed_length(len);
    out.resize(at + 4 + max);
    if (snappy_compress(reinterpret_cast<const char*>(in + pos), len,
                        reinterpret_cast<char*>(out.data() + at + 4), &max) != SNAPPY_OK) {
      return compress_failed("snappy: compress failed");
    }
    be::store32(out.data() + at, static_cast<uint32_t>(max));
    out.resize(at + 4 + max);
    if (n == 0) break;
  }
  return Buffer::take(std::move(out));
}

Result<Buffer> lz4(const uint8_t* in, size_t n) {
  LZ4F_preferences_t prefs{};
  std::vector<uint8_t> out(LZ4F_compressFrameBound(n, &prefs));
  size_t w = LZ4F_compressFrame(out.data(), out.size(), in, n, &prefs);
  if (LZ4F_isError(w)) return compress_failed(std::string("lz4: ") + LZ4F_getErrorName(w));
  out.resize(w);
  return Buffer::take(std::move(out));
}

Result<Buffer> zstd(const uint8_t* in, size_t n) {
  std::vector<uint8_t> out(ZSTD_compressBound(n));
  size_t w = ZSTD_compress(out.data(), out.size(), in, n, 3);
  if (ZSTD_isError(w)) return compress_failed(std::string("zstd: ") + ZSTD_getErrorName(w));
  out.resize(w);
  return Buffer::take(std::move(out));
}

}  // namespace

Result<Buffer> compress(Compression c, const uint8_t* in, size_t n) {
  switch (c) {
    case Compression::kNone:
      return Buffer::copy(in, n);
    case Compression::kGzip:
      return gzip(in, n);
    case Compression::kSnappy:
      return snappy(in, n);
    case Compression::kLz4:
      return lz4(in, n);
    case Compression::kZstd:
      return zstd(in, n);
  }
  return Error::make(Errc::kUnsupported, "unknown compression codec");
}

}  // namespace shale::protocol
