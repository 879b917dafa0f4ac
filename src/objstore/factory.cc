#include "objstore/factory.h"

#include <cstdlib>

#include "objstore/memory_store.h"

namespace shale::objstore {
namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string first(std::initializer_list<std::string> xs) {
  for (const auto& x : xs) {
    if (!x.empty()) return x;
  }
  return "";
}

}  // namespace

Result<std::unique_ptr<ObjectStore>> open_object_store(const BucketUri& uri,
                                                       const OpenOptions& options) {
  switch (uri.scheme) {
    case Scheme::kMemory:
      return std::unique_ptr<ObjectStore>(new MemoryStore());
    case Scheme::kFile: {
      auto s = PosixStore::open(uri.path, options.posix);
      if (!s.ok()) return std::move(s).error();
      return std::unique_ptr<ObjectStore>(std::move(s).value());
    }
    case Scheme::kS3:
      break;
  }
  S3Options o = options.s3;
  o.bucket = uri.bucket;
  o.endpoint = uri.endpoint;
  o.path_style = uri.path_style;
  bool e = options.use_env;
  o.region = first({uri.region, options.region, e ? env("AWS_REGION") : "",
                    e ? env("AWS_DEFAULT_REGION") : "", "us-east-1"});
  // Credentials come as a set from one place, never an access key from one and a secret
  // from another.
  if (!uri.access_key.empty()) {
    o.access_key = uri.access_key;
    o.secret_key = uri.secret_key;
    o.session_token = uri.session_token;
  } else if (!options.access_key.empty()) {
    o.access_key = options.access_key;
    o.secret_key = options.secret_key;
    o.session_token = options.session_token;
  } else if (e) {
    o.access_key = env("AWS_ACCESS_KEY_ID");
    o.secret_key = env("AWS_SECRET_ACCESS_KEY");
    o.session_token = env("AWS_SESSION_TOKEN");
  }
  auto s = S3Store::open(std::move(o));
  if (!s.ok()) {
    Error err = std::move(s).error();
    err.message = uri.to_string() + ": " + err.message;
    return err;
  }
  return std::unique_ptr<ObjectStore>(std::move(s).value());
}

Result<std::unique_ptr<ObjectStore>> open_object_store(std::string_view text,
                                                       const OpenOptions& options) {
  auto uri = parse_bucket_uri(text);
  if (!uri.ok()) return std::move(uri).error();
  return open_object_store(*uri, options);
}

}  // namespace shale::objstore
