// Request/response framing: the int32 size prefix and the request/response headers, whose
// version depends on the API key and version (see api_table.h). The broker's connection code
// reads a size-prefixed frame, calls decode_request_header() and then decodes the body with
// the generated XxxRequest::decode() from the same Reader. Responses are built with
// encode_response_frame(). Pure functions over values; safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/buffer.h"
#include "base/result.h"
#include "protocol/generated/api_table.h"
#include "protocol/generated/request_header.h"
#include "protocol/generated/response_header.h"
#include "protocol/wire.h"

namespace shale::protocol {

// Largest frame we accept by default (Kafka's socket.request.max.bytes default is 100 MiB).
constexpr int32_t kDefaultMaxFrameSize = 100 * 1024 * 1024;

// Decodes a request header from the start of a frame body (after the size prefix). The header
// version is chosen from the api key/version found in its first four bytes. Fails with
// kUnsupported for an unknown API key or a version outside the API's range (the header is then
// still filled in as far as it could be read, so a caller can answer with the correlation id).
Status decode_request_header(Reader& r, RequestHeader& out);

// Writes a request header for out.request_api_key/out.request_api_version.
Status encode_request_header(Writer& w, const RequestHeader& h);

// Writes a response header (v0: correlation id; v1 adds an empty tagged-field section).
void encode_response_header(Writer& w, ApiKey key, int16_t api_version, int32_t correlation_id);
Status decode_response_header(Reader& r, ApiKey key, int16_t api_version, ResponseHeader& out);

// A complete size-prefixed response frame: int32 size, header, body.
template <typename Body>
Result<Buffer> encode_response_frame(int32_t correlation_id, int16_t version, const Body& body) {
  Writer counter = Writer::counter();
  encode_response_header(counter, Body::kApiKey, version, correlation_id);
  const size_t size = counter.size() + body.encoded_size(version);
  BufferBuilder out(size + 4);
  Writer w(out);
  w.write_i32(static_cast<int32_t>(size));
  encode_response_header(w, Body::kApiKey, version, correlation_id);
  SHALE_TRY(body.encode(w, version));
  return std::move(out).freeze();
}

// The same as a chain of buffers: record batches (and other bytes values) of at least
// `zero_copy_min` bytes are shared, not copied (see Writer's zero-copy mode).
template <typename Body>
Result<BufferChain> encode_response_chain(int32_t correlation_id, int16_t version, const Body& body,
                                          size_t zero_copy_min = 4096) {
  Writer counter = Writer::counter();
  encode_response_header(counter, Body::kApiKey, version, correlation_id);
  const size_t size = counter.size() + body.encoded_size(version);
  BufferChain chain;
  Writer w(chain, zero_copy_min);
  w.write_i32(static_cast<int32_t>(size));
  encode_response_header(w, Body::kApiKey, version, correlation_id);
  SHALE_TRY(body.encode(w, version));
  w.finish();
  return chain;
}

// A complete size-prefixed request frame: int32 size, header, body.
template <typename Body>
Result<Buffer> encode_request_frame(int32_t correlation_id, std::optional<std::string> client_id,
                                    int16_t version, const Body& body) {
  RequestHeader h;
  h.request_api_key = static_cast<int16_t>(Body::kApiKey);
  h.request_api_version = version;
  h.correlation_id = correlation_id;
  h.client_id = std::move(client_id);
  Writer counter = Writer::counter();
  SHALE_TRY(encode_request_header(counter, h));
  const size_t size = counter.size() + body.encoded_size(version);
  BufferBuilder out(size + 4);
  Writer w(out);
  w.write_i32(static_cast<int32_t>(size));
  SHALE_TRY(encode_request_header(w, h));
  SHALE_TRY(body.encode(w, version));
  return std::move(out).freeze();
}

}  // namespace shale::protocol
