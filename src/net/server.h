// Server: the Kafka-facing TCP server. It binds one acceptor per listener, hands accepted
// sockets round-robin to the shards of a ShardPool and runs each connection there: read
// size-prefixed frames, pass each to the FrameHandler, write the responses back in request
// order (Kafka clients match responses to requests by order on a connection).
//
// Threads: start()/stop() are called from one control thread (not a shard). Acceptors run on
// shard 0; a connection lives entirely on its shard. Counters are atomics readable anywhere.
// Invariants: a connection's requests start their handlers one at a time in arrival order, the
// next one only once the previous has finished or released the order (frame_handler.h), so
// their effects happen in the order they were sent; at most `max_inflight_per_connection` are
// read ahead or being handled (reading pauses at the bound); responses leave in request order;
// a frame whose size is negative or above `max_request_bytes` closes only its own connection.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <asio/ip/tcp.hpp>
#include <asio/ssl/context.hpp>

#include "base/log.h"
#include "base/result.h"
#include "net/frame_handler.h"
#include "net/shard_pool.h"
#include "security/tls.h"

namespace shale::net {

struct ListenerSpec {
  std::string name = "PLAINTEXT";  // listener name
  std::string host;                // empty or "0.0.0.0" = all IPv4 interfaces
  uint16_t port = 0;               // 0 = pick a free port (tests)
  // PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL (listener.security.protocol.map).
  std::string security_protocol = "PLAINTEXT";
  // SSL / SASL_SSL: the listener's TLS context (security/tls.h); null = plaintext.
  std::shared_ptr<asio::ssl::context> tls;
  // ssl.principal.mapping.rules of a TLS listener; null = Kafka's DEFAULT (the subject).
  std::shared_ptr<const security::PrincipalMapper> principal_mapper;
  // SASL_*: connections start unauthenticated (Session::authenticated = false).
  bool sasl = false;
};

struct ServerOptions {
  std::vector<ListenerSpec> listeners;
  int32_t max_request_bytes = 104857600;  // socket.request.max.bytes
  int64_t idle_timeout_ms = 600000;       // connections.max.idle.ms; <= 0 disables
  size_t max_inflight_per_connection = 32;
  int64_t shutdown_drain_ms = 5000;          // how long stop() lets in-flight handlers finish
  int64_t tls_handshake_timeout_ms = 10000;  // a TLS handshake not done by then closes
  // max.connections.per.ip: a client address with this many open connections has further
  // ones closed at accept; per-address exceptions in max_connections_per_ip_overrides
  // (max.connections.per.ip.overrides, by IP address).
  int32_t max_connections_per_ip = INT32_MAX;
  std::map<std::string, int32_t> max_connections_per_ip_overrides;
};

class Server {
 public:
  // `pool` and `handler` must outlive the server. The pool may be started before or after.
  Server(ServerOptions opts, ShardPool& pool, FrameHandler& handler);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds every listener. On failure nothing stays bound and the error names the listener
  // and the reason (address in use, unresolvable host, ...).
  Status bind();
  // Starts accepting (requires bind() and a started pool).
  void start();
  // Stops accepting and closes every connection; handlers still running finish but their
  // responses are dropped. Returns once every connection is closed (or after the drain time).
  // The pool keeps running: stopping it is the owner's call.
  void stop();

  // Bound address of each listener, in the order of ServerOptions::listeners.
  std::vector<asio::ip::tcp::endpoint> local_endpoints() const;
  // Connections accepted and not yet fully closed (a closed connection counts until its last
  // in-flight handler has finished).
  size_t open_connections() const noexcept;
  uint64_t accepted_connections() const noexcept;

  struct Impl;  // shared with the connections, which may outlive a stop() that timed out

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace shale::net
