#include "app/wal_uri.h"

#include <charconv>

namespace shale::app {
namespace {

Error bad(std::string_view text, const std::string& why) {
  return Error::make(Errc::kInvalidArgument, "s3.wal.path '" + std::string(text) + "': " + why);
}

template <typename T>
bool parse_number(const std::string& s, T* out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

// AutoMQ's tuning parameters that Shale accepts without using, per kind of WAL.
bool ignorable(WalUri::Kind kind, const std::string& key) {
  if (kind == WalUri::Kind::kFile) {
    return key == "iodepth" || key == "iops" || key == "iobandwidth" || key == "timeout";
  }
  return key == "maxInflightUploadCount" || key == "readaheadDataSize";
}

}  // namespace

Result<WalUri> parse_wal_uri(std::string_view text) {
  WalUri w;
  if (text.empty()) return bad(text, "must not be empty");
  if (text.front() == '/') {  // AutoMQ's bare path
    w.path = std::string(text);
    return w;
  }
  if (text.rfind("object://", 0) == 0) {
    w.kind = WalUri::Kind::kObject;
    w.prefix = std::string(text.substr(9));
    if (w.prefix.empty()) return bad(text, "object:// needs a prefix (object://wal)");
    return w;
  }
  if (text.rfind("file://", 0) == 0 && text.size() > 7 && text[7] != '/') {
    // Shale's own form with a relative path (the default, file://${data.dir}/wal, with the
    // default data.dir ./data): the path is used as it is, relative to the working directory.
    if (text.find('?') != std::string_view::npos) {
      return bad(text, "parameters need an absolute path (file:///abs/path?capacity=..)");
    }
    w.path = std::string(text.substr(7));
    return w;
  }
  auto uri = objstore::parse_bucket_uri(text);
  if (!uri.ok()) return bad(text, uri.error().message);
  objstore::BucketUri u = std::move(uri).value();
  switch (u.scheme) {
    case objstore::Scheme::kFile:
      w.kind = WalUri::Kind::kFile;
      w.path = u.path;
      break;
    case objstore::Scheme::kS3:
      w.kind = WalUri::Kind::kObject;
      break;
    case objstore::Scheme::kMemory:
      return bad(text, "a memory store cannot hold a WAL (use file:// or s3://)");
  }
  std::map<std::string, std::string> rest;
  for (auto& [key, value] : u.params) {
    bool ok = true;
    if (w.kind == WalUri::Kind::kFile && key == "capacity") {
      uint64_t v = 0;
      ok = parse_number(value, &v);
      w.capacity = v;
    } else if (w.kind == WalUri::Kind::kObject && key == "batchInterval") {
      int64_t v = 0;
      ok = parse_number(value, &v) && v > 0;
      w.batch_interval_ms = v;
    } else if (w.kind == WalUri::Kind::kObject && key == "maxBytesInBatch") {
      uint64_t v = 0;
      ok = parse_number(value, &v) && v > 0;
      w.batch_bytes = v;
    } else if (w.kind == WalUri::Kind::kObject && key == "maxUnflushedBytes") {
      uint64_t v = 0;
      ok = parse_number(value, &v) && v > 0;
      w.max_unflushed = v;
    } else if (ignorable(w.kind, key)) {
      w.ignored.push_back(key);
    } else if (w.kind == WalUri::Kind::kObject) {
      rest[key] = value;  // the bucket's own parameters (e.g. for a later store option)
    } else {
      return bad(text, "unknown parameter '" + key + "'");
    }
    if (!ok) return bad(text, "parameter '" + key + "' is not a valid number: '" + value + "'");
  }
  if (w.kind == WalUri::Kind::kObject) {
    u.params = std::move(rest);
    w.bucket = std::move(u);
  }
  return w;
}

}  // namespace shale::app
