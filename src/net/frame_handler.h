// FrameHandler: what the network layer hands each request frame to. net/ knows nothing about
// the Kafka protocol: a frame is the bytes between one 4-byte big-endian size prefix and the
// next. The broker supplies the handler (decode header, route by API key, encode response).
//
// Threads: handle() is called on the connection's shard and its coroutine is started there; it
// may hop to other shards (ShardPool::run_on) and come back.
// Order (Kafka's rule: a connection's requests take effect in the order they were sent): the
// server starts the handler of a connection's next request only once the current one has
// finished or has called RequestOrder::release(), which a handler calls once the effects of its
// request are fixed in order (e.g. a produce whose appends have been submitted and now only
// waits for durability). Until then later requests are read ahead and queued, not handled.
// Handlers that released may finish in any order; the server writes the responses in request
// order regardless.
// Lifetime: the handler object must outlive the Server and the ShardPool it runs on (a handler
// coroutine cut short by a shutdown is destroyed with the pool).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <asio/awaitable.hpp>

#include "base/buffer.h"

namespace shale::net {

// Who is on a connection. Created by the server, then changed only by the connection's request
// handlers (SASL authentication), which run one at a time on the connection's shard.
struct Session {
  // Kafka's principal: "User:ANONYMOUS", "User:<certificate subject>" (TLS with a client
  // certificate) or "User:<name>" once SASL has authenticated.
  std::string principal = "User:ANONYMOUS";
  // False on SASL listeners until SaslAuthenticate succeeds: only ApiVersions, SaslHandshake
  // and SaslAuthenticate are served before.
  bool authenticated = true;
  // The SASL exchange in progress, owned by the broker's SASL handlers.
  std::shared_ptr<void> sasl;
  // Set by a handler: close the connection once this request's response is written (a failed
  // authentication, Kafka's behaviour).
  bool close_after_response = false;
  // SaslHandshake v0 (before KIP-152): the next frames are raw SASL tokens, not requests.
  bool sasl_raw_tokens = false;
};

// Facts about a connection, valid for the connection's lifetime. All but *session are fixed
// once the connection is open.
struct ConnectionInfo {
  uint64_t id = 0;                              // unique per server run
  size_t shard = 0;                             // the shard that owns the connection
  std::string listener;                         // listener name, e.g. "PLAINTEXT"
  std::string peer;                             // "host:port" of the client
  std::string security_protocol = "PLAINTEXT";  // PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL
  std::shared_ptr<Session> session = std::make_shared<Session>();
};

struct Response {
  // The response frame without its size prefix (the server adds it), or nullopt when the
  // request gets no response (acks=0 produce).
  std::optional<BufferChain> frame;
  // Close the connection after writing `frame` (if any) and every earlier response. Requests
  // read after this one are dropped unanswered.
  bool close = false;

  static Response none() { return Response{}; }
  static Response reply(BufferChain c) { return Response{std::move(c), false}; }
  static Response close_connection() { return Response{std::nullopt, true}; }
};

// The handle a request's handler gets on its connection's order. release() says "my effects are
// in order: the next request of this connection may start". Idempotent, callable from any
// thread, valid until handle() returns; finishing handle() releases implicitly.
class RequestOrder {
 public:
  virtual void release() = 0;

 protected:
  ~RequestOrder() = default;
};

class FrameHandler {
 public:
  virtual ~FrameHandler() = default;
  // `frame` excludes the size prefix; it is a slice of the buffer the server read it into and
  // can be kept (sliced, stored) without copying. An exception escaping handle() is logged
  // (rate-limited) and closes the connection. `order` may be released early (see above).
  virtual asio::awaitable<Response> handle(const ConnectionInfo& conn, Buffer frame,
                                           RequestOrder& order) = 0;
  // For callers outside a connection (tests, tools): no order to release.
  asio::awaitable<Response> handle(const ConnectionInfo& conn, Buffer frame) {
    struct Unordered final : RequestOrder {
      void release() override {}
    };
    static Unordered none;
    return handle(conn, std::move(frame), none);
  }
  // Called on the connection's shard when a connection opens and after it has closed; useful
  // for per-connection state (e.g. SASL later). Default: nothing.
  virtual void on_open(const ConnectionInfo&) {}
  virtual void on_close(const ConnectionInfo&) {}
};

}  // namespace shale::net
