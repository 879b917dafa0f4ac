// Dispatcher: the broker's net::FrameHandler. It decodes the Kafka request header (v0-v2, chosen
// by the API table), finds the handler registered for the API key, checks the version, decodes
// the body with the generated codec, runs the handler and encodes the response with the right
// response-header version.
//
// The registry of handlers is also what ApiVersions advertises: an API appears there only once
// a handler for it is registered, with exactly the version range it was registered with (capped
// at the highest stable version of the schema). Adding an API = one add<Req, Resp>() call.
//
// Bad input: an unknown API key, an API without a handler, an unsupported
// version or an undecodable header or body closes that connection, logged at most once per
// 10 s per kind. The exception is ApiVersions at an unsupported version, which gets Kafka's
// answer: a v0 response with UNSUPPORTED_VERSION and the supported ranges, so that a newer
// client can downgrade.
//
// Threads: register every API before the server starts; afterwards the dispatcher is read-only
// and handle() runs concurrently on every shard. Handlers run on the connection's shard and may
// hop to other shards (net::ShardPool::run_on).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/log.h"
#include "base/metrics.h"
#include "base/result.h"
#include "net/frame_handler.h"
#include "protocol/frame.h"
#include "protocol/generated/request_header.h"
#include "protocol/wire.h"

namespace shale::broker {

// What a handler learns about its request besides the body.
struct RequestContext {
  const net::ConnectionInfo& conn;
  const protocol::RequestHeader& header;
  // The connection's order: a handler whose effects are fixed before it finishes (a produce
  // once its appends are submitted) releases it so the connection's next request can start.
  net::RequestOrder& order;
  int16_t version() const noexcept { return header.request_api_version; }
};

struct ApiRange {
  protocol::ApiKey key;
  int16_t min_version;
  int16_t max_version;
};

class Dispatcher : public net::FrameHandler {
 public:
  // A handler gets the decoded request and returns the response to encode at the request's
  // version, or nullopt for no response (acks=0 produce). Throwing closes the connection.
  template <typename Req, typename Resp>
  using Handler =
      std::function<asio::awaitable<std::optional<Resp>>(const RequestContext&, Req& request)>;

  // Registers the handler for Req's API over [min_version, max_version]; the range is clamped
  // to what the schema defines and, for advertising, to its highest stable version.
  template <typename Req, typename Resp>
  void add(int16_t min_version, int16_t max_version, Handler<Req, Resp> handler) {
    static_assert(Req::kApiKey == Resp::kApiKey, "request and response of different APIs");
    Entry e;
    e.key = Req::kApiKey;
    e.min_version = std::max<int16_t>(min_version, Req::kMinVersion);
    e.max_version = std::min<int16_t>(max_version, Req::kMaxVersion);
    e.invoke = [h = std::move(handler)](
                   const RequestContext& ctx,
                   protocol::Reader& r) -> asio::awaitable<Result<std::optional<BufferChain>>> {
      Req req;
      Status st = req.decode(r, ctx.version());
      if (!st.ok()) co_return std::move(st).error();
      std::optional<Resp> resp = co_await h(ctx, req);
      if (!resp) co_return std::optional<BufferChain>();
      auto frame = encode_response(ctx, *resp);
      if (!frame.ok()) co_return std::move(frame).error();
      co_return std::optional<BufferChain>(std::move(frame).value());
    };
    add_entry(std::move(e));
  }

  // Handles the frames of a connection whose Session::sasl_raw_tokens is set (SaslHandshake v0:
  // raw SASL tokens follow instead of requests). Set before the server starts.
  using RawSaslHandler =
      std::function<asio::awaitable<net::Response>(const net::ConnectionInfo&, Buffer)>;
  void set_raw_sasl_handler(RawSaslHandler h) { raw_sasl_ = std::move(h); }

  // The APIs and version ranges ApiVersions advertises, ordered by key.
  std::vector<ApiRange> supported() const;
  bool handles(protocol::ApiKey key) const { return find(static_cast<int16_t>(key)) != nullptr; }

  using net::FrameHandler::handle;
  asio::awaitable<net::Response> handle(const net::ConnectionInfo& conn, Buffer frame,
                                        net::RequestOrder& order) override;

  // Response header (version chosen by the API table) followed by the body.
  template <typename Resp>
  static Result<BufferChain> encode_response(const RequestContext& ctx, const Resp& resp) {
    return encode_response_at(ctx.header.correlation_id, ctx.version(), resp);
  }
  template <typename Resp>
  static Result<BufferChain> encode_response_at(int32_t correlation_id, int16_t version,
                                                const Resp& resp) {
    // The chain writer shares large bytes/records values instead of copying them (fetch).
    BufferChain chain;
    protocol::Writer w(chain);
    protocol::encode_response_header(w, Resp::kApiKey, version, correlation_id);
    SHALE_TRY(resp.encode(w, version));
    w.finish();
    return chain;
  }

 private:
  struct Entry {
    protocol::ApiKey key{};
    int16_t min_version = 0;
    int16_t max_version = -1;
    // Per-API metrics (base/metrics.h), registered with the entry.
    metrics::Counter* requests = nullptr;
    metrics::Counter* failures = nullptr;  // undecodable, unsupported: the connection closed
    metrics::Histogram* latency = nullptr;
    std::function<asio::awaitable<Result<std::optional<BufferChain>>>(const RequestContext&,
                                                                      protocol::Reader&)>
        invoke;
  };
  void add_entry(Entry e);
  const Entry* find(int16_t key) const;
  net::Response reject(log::RateLimiter& limiter, const net::ConnectionInfo& conn,
                       const std::string& why);
  asio::awaitable<net::Response> unsupported_api_versions(const protocol::RequestHeader& h);

  std::vector<std::unique_ptr<Entry>> by_key_;  // indexed by API key; null = no handler
  log::RateLimiter unknown_key_log_{10000};
  log::RateLimiter bad_version_log_{10000};
  log::RateLimiter bad_request_log_{10000};
  log::RateLimiter unauthenticated_log_{10000};
  RawSaslHandler raw_sasl_;
};

}  // namespace shale::broker
