// S3Store: an ObjectStore on Amazon S3 or any S3-compatible service, over libcurl's multi
// interface. One I/O thread drives every transfer (no thread per request); libcurl signs each
// request with SigV4 (CURLOPT_AWS_SIGV4, "aws:amz:<region>:s3") and keeps connections alive.
//
// Requests: PutObject, GetObject with a Range header, DeleteObjects (batched POST ?delete with
// Content-MD5), ListObjectsV2 with continuation tokens, Create/UploadPart/Complete/Abort
// multipart. Each request carries x-amz-content-sha256 (S3 requires it; libcurl 7.88 does not
// add it, and signs with its value): the body's SHA-256, computed on the caller's thread so the
// I/O thread never stalls on a 16 MiB part, or UNSIGNED-PAYLOAD over https (payload_signing).
//
// Concurrency and retries: at most `max_concurrency` requests are in flight; more wait in a
// FIFO queue. 5xx, 503 SlowDown, 429, 408, a 400 RequestTimeout, curl time-outs, connection
// failures and resets, and responses whose length does not match Content-Length are retried
// with full-jitter exponential back-off (retry.h). Other 4xx are final: 403 → kIoError "access
// denied: <Code>: <Message>", 404 → kNotFound, 409 → kConflict, other 4xx → kInvalidArgument.
//
// Threading: methods may be called from any thread. Callbacks run on the I/O thread and must
// not block. The destructor fails queued and in-flight requests with kShutdown (each callback
// still runs once) and joins the I/O thread. A MultipartUpload must not outlive its store, and
// must stay alive until the callbacks of its own calls have run.
#pragma once

#include <memory>
#include <string>

#include "objstore/counters.h"
#include "objstore/object_store.h"
#include "objstore/retry.h"

namespace shale::objstore {

struct S3Options {
  std::string bucket;
  std::string region = "us-east-1";
  std::string endpoint;     // "http(s)://host[:port]"; empty = https://s3.<region>.amazonaws.com
  bool path_style = false;  // https://host/bucket/key instead of https://bucket.host/key
  std::string access_key, secret_key, session_token;
  int max_concurrency = 64;          // requests in flight
  long connect_timeout_ms = 10000;   // TCP + TLS connect
  long request_timeout_ms = 120000;  // a whole request, including the body
  // A transfer slower than this for low_speed_time_s seconds is aborted (and retried).
  long low_speed_bytes_per_s = 1024;
  long low_speed_time_s = 30;
  RetryPolicy retry;
  int list_page_size = 1000;  // max-keys per ListObjectsV2 page (S3 caps it at 1000)
  int delete_batch = 1000;    // keys per DeleteObjects request (S3 caps it at 1000)
  bool verify_tls = true;
  // What x-amz-content-sha256 carries. kSha256 hashes every body (on the caller's thread);
  // kUnsigned sends UNSIGNED-PAYLOAD, which S3 accepts and which is safe over TLS (TLS
  // already protects the body); kAuto = kUnsigned for https endpoints, kSha256 for http.
  enum class PayloadSigning { kAuto, kSha256, kUnsigned };
  PayloadSigning payload_signing = PayloadSigning::kAuto;
};

class S3Engine;

class S3Store final : public ObjectStore {
 public:
  // Errors: kInvalidArgument for a bad bucket/endpoint or missing credentials.
  static Result<std::unique_ptr<S3Store>> open(S3Options options);
  ~S3Store() override;

  void put(const std::string& key, BufferChain data, StatusCallback done) override;
  void get(const std::string& key, Range range, GetCallback done) override;
  void remove(std::vector<std::string> keys, StatusCallback done) override;
  void list(const std::string& prefix, ListCallback done) override;
  void create_multipart(const std::string& key, MultipartCallback done) override;
  std::string describe() const override;
  StoreStats stats() const override;

  // The URL of an object (for tests and logs): endpoint, addressing style and key encoding.
  std::string object_url(const std::string& key) const;

 private:
  explicit S3Store(std::unique_ptr<S3Engine> engine);
  std::unique_ptr<S3Engine> engine_;
};

// AWS's URI encoding (SigV4 "UriEncode"): every byte but A-Z a-z 0-9 - _ . ~ becomes %XX
// (upper-case hex); '/' is kept when keep_slash (object key paths).
std::string aws_uri_encode(std::string_view s, bool keep_slash);

}  // namespace shale::objstore
