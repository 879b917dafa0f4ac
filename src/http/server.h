// http::Server: the broker's HTTP listener (`http.listeners`), off the Kafka port, for
// Prometheus scrapes (/metrics) and, later, the web console. Requests are parsed and answered
// by Boost.Beast (docs/decisions.md D6); a route is a function from the request's target to a
// response. GET and HEAD only; anything else is 405, an unknown path 404.
//
// Threads: one thread of its own runs the listeners and connections (a Boost.Asio
// io_context, separate from the Kafka shards), so a slow scrape never delays a Kafka request.
// Route functions run on that thread; they must be thread-safe against the rest of the
// broker and must not block for long. start()/stop() from the control thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"

namespace shale::http {

struct Reply {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};
// `target` is the request target without the query string; `query` is what followed '?'.
using Route = std::function<Reply(const std::string& target, const std::string& query)>;

struct Endpoint {
  std::string host;   // empty or 0.0.0.0: every IPv4 interface
  uint16_t port = 0;  // 0: a free port (tests)
};

// Parses `http://host:port` entries (comma-separated); an empty string is no listener.
Result<std::vector<Endpoint>> parse_http_listeners(const std::string& text);

class Server {
 public:
  Server();
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Exact-path routes; add before start().
  void route(const std::string& path, Route r);
  // Binds every endpoint (errors name the address) and starts the thread.
  Status start(const std::vector<Endpoint>& endpoints);
  // Closes the listeners and connections and joins the thread. Idempotent.
  void stop();
  // Bound ports, in the order of the endpoints given to start().
  std::vector<uint16_t> ports() const;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace shale::http
