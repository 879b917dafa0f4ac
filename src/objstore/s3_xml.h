// The XML bodies of the S3 REST API that the S3 backend sends and reads: ListObjectsV2,
// Error, InitiateMultipartUpload, CompleteMultipartUpload, DeleteObjects (request and result).
// Parsing uses libxml2 with network access and entity substitution off; elements are matched
// by local name, so the S3 namespace (or its absence on some S3-compatible servers) does not
// matter. Any malformed, truncated or unexpected document is an Error (kCorruption with a
// retryable flag: a garbled response is worth one more try), never a crash.
// Thread-safety: pure functions; libxml2 is initialised once, thread-safely.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"
#include "objstore/object_store.h"

namespace shale::objstore::s3xml {

struct ListPage {
  std::vector<ObjectInfo> objects;
  bool truncated = false;
  std::string next_token;  // NextContinuationToken; required when truncated
};
Result<ListPage> parse_list_objects_v2(std::string_view xml);

struct ErrorInfo {
  std::string code;  // e.g. "NoSuchKey", "SignatureDoesNotMatch", "SlowDown"
  std::string message;
  std::string key;  // in DeleteObjects results
};
// An <Error> document (the body of S3 error responses, and of some 200 OK responses to
// CompleteMultipartUpload).
Result<ErrorInfo> parse_error(std::string_view xml);
// Whether the document's root element is <Error>.
bool is_error_document(std::string_view xml);

// <InitiateMultipartUploadResult>: returns the UploadId.
Result<std::string> parse_initiate_multipart(std::string_view xml);

// <DeleteResult>: returns the per-key errors (empty when every key was deleted).
Result<std::vector<ErrorInfo>> parse_delete_result(std::string_view xml);

// Request bodies.
std::string build_delete_request(const std::vector<std::string>& keys);  // Quiet mode
std::string build_complete_multipart(const std::vector<std::pair<int, std::string>>& parts);
std::string escape(std::string_view text);

// "2009-10-12T17:50:30.000Z" → milliseconds since the epoch; -1 if unparsable.
int64_t parse_iso8601_ms(std::string_view s);

}  // namespace shale::objstore::s3xml
