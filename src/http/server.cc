#include "http/server.h"

#include <map>
#include <thread>

#include <spdlog/spdlog.h>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace shale::http {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = net::ip::tcp;

Result<std::vector<Endpoint>> parse_http_listeners(const std::string& text) {
  std::vector<Endpoint> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t comma = text.find(',', pos);
    std::string item =
        text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    pos = comma == std::string::npos ? text.size() : comma + 1;
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    while (!item.empty() && item.back() == ' ') item.pop_back();
    if (item.empty()) continue;
    const std::string scheme = "http://";
    if (item.rfind(scheme, 0) != 0) {
      return Error::make(Errc::kInvalidArgument,
                         "'" + item + "': expected http://host:port (https is not served yet)");
    }
    std::string hp = item.substr(scheme.size());
    if (!hp.empty() && hp.back() == '/') hp.pop_back();
    size_t colon = hp.rfind(':');
    if (colon == std::string::npos) {
      return Error::make(Errc::kInvalidArgument, "'" + item + "': missing :port");
    }
    Endpoint e;
    e.host = hp.substr(0, colon);
    if (e.host.size() >= 2 && e.host.front() == '[' && e.host.back() == ']') {
      e.host = e.host.substr(1, e.host.size() - 2);
    }
    int port = -1;
    try {
      size_t used = 0;
      port = std::stoi(hp.substr(colon + 1), &used);
      if (used != hp.size() - colon - 1) port = -1;
    } catch (const std::exception&) {
      port = -1;
    }
    if (port < 0 || port > 65535) {
      return Error::make(Errc::kInvalidArgument, "'" + item + "': bad port");
    }
    e.port = static_cast<uint16_t>(port);
    out.push_back(std::move(e));
  }
  return out;
}

struct Server::Impl : std::enable_shared_from_this<Server::Impl> {
  net::io_context io{1};
  std::vector<std::unique_ptr<tcp::acceptor>> acceptors;
  std::map<std::string, Route> routes;
  std::thread thread;
  bool started = false;
  struct Session;
  // Open sessions, touched only on the server's thread; stop() closes them so that every
  // pending handler completes and the thread's run() returns.
  std::vector<std::weak_ptr<Session>> sessions;
  bool closing = false;

  void accept(tcp::acceptor& acc) {
    acc.async_accept(io, [self = shared_from_this(), &acc](beast::error_code ec, tcp::socket sock) {
      if (ec == net::error::operation_aborted || self->closing) return;
      if (!ec) {
        auto session = std::make_shared<Session>(self, std::move(sock));
        std::erase_if(self->sessions, [](const auto& w) { return w.expired(); });
        self->sessions.push_back(session);
        session->read();
      }
      if (acc.is_open()) self->accept(acc);
    });
  }

  void close_all() {
    closing = true;
    for (auto& a : acceptors) {
      beast::error_code ec;
      a->close(ec);
    }
    for (auto& w : sessions) {
      if (auto sp = w.lock()) sp->stream.close();
    }
    sessions.clear();
  }

  Reply answer(const bhttp::request<bhttp::string_body>& req) const {
    if (req.method() != bhttp::verb::get && req.method() != bhttp::verb::head) {
      return Reply{405, "text/plain; charset=utf-8", "method not allowed\n"};
    }
    std::string target(req.target());
    std::string query;
    if (auto q = target.find('?'); q != std::string::npos) {
      query = target.substr(q + 1);
      target.resize(q);
    }
    auto it = routes.find(target);
    if (it == routes.end()) return Reply{404, "text/plain; charset=utf-8", "not found\n"};
    try {
      return it->second(target, query);
    } catch (const std::exception& e) {
      spdlog::error("http: {} failed: {}", target, e.what());
      return Reply{500, "text/plain; charset=utf-8", "internal error\n"};
    }
  }

  // One keep-alive connection: read a request, answer it, repeat until the client closes.
  struct Session : std::enable_shared_from_this<Session> {
    Session(std::shared_ptr<Impl> s, tcp::socket sock)
        : srv(std::move(s)), stream(std::move(sock)) {}
    std::shared_ptr<Impl> srv;
    beast::tcp_stream stream;
    beast::flat_buffer buf;
    bhttp::request<bhttp::string_body> req;
    std::shared_ptr<bhttp::response<bhttp::string_body>> res;

    void read() {
      req = {};
      stream.expires_after(std::chrono::seconds(60));
      bhttp::async_read(
          stream, buf, req,
          [self = shared_from_this()](beast::error_code ec, size_t) { self->on_read(ec); });
    }
    void on_read(beast::error_code ec) {
      if (ec || srv->closing) {
        beast::error_code ignored;
        stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
        return;
      }
      Reply r = srv->answer(req);
      res = std::make_shared<bhttp::response<bhttp::string_body>>(
          static_cast<bhttp::status>(r.status), req.version());
      res->set(bhttp::field::server, "shale");
      res->set(bhttp::field::content_type, r.content_type);
      res->keep_alive(req.keep_alive());
      if (req.method() == bhttp::verb::head) {
        res->content_length(r.body.size());
      } else {
        res->body() = std::move(r.body);
        res->prepare_payload();
      }
      bhttp::async_write(stream, *res, [self = shared_from_this()](beast::error_code wec, size_t) {
        if (wec || !self->res->keep_alive() || self->srv->closing) {
          beast::error_code ignored;
          self->stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
          return;
        }
        self->read();
      });
    }
  };
};

Server::Server() : impl_(std::make_shared<Impl>()) {}
Server::~Server() { stop(); }

void Server::route(const std::string& path, Route r) { impl_->routes[path] = std::move(r); }

Status Server::start(const std::vector<Endpoint>& endpoints) {
  Impl& s = *impl_;
  for (const Endpoint& e : endpoints) {
    const std::string where = "http://" + e.host + ":" + std::to_string(e.port);
    beast::error_code ec;
    net::ip::address addr = e.host.empty() || e.host == "0.0.0.0"
                                ? net::ip::address(net::ip::address_v4::any())
                                : net::ip::make_address(e.host, ec);
    if (ec) {
      tcp::resolver resolver(s.io);
      auto results = resolver.resolve(e.host, std::to_string(e.port), ec);
      if (ec || results.empty()) {
        s.acceptors.clear();
        return Error::make(Errc::kInvalidArgument,
                           "http listener " + where + ": cannot resolve host '" + e.host + "'");
      }
      addr = results.begin()->endpoint().address();
    }
    auto acc = std::make_unique<tcp::acceptor>(s.io);
    tcp::endpoint ep(addr, e.port);
    acc->open(ep.protocol(), ec);
    if (!ec) acc->set_option(net::socket_base::reuse_address(true), ec);
    if (!ec) acc->bind(ep, ec);
    if (!ec) acc->listen(net::socket_base::max_listen_connections, ec);
    if (ec) {
      s.acceptors.clear();
      return Error::make(Errc::kIoError, "http listener " + where + ": " + ec.message());
    }
    s.acceptors.push_back(std::move(acc));
  }
  for (auto& a : s.acceptors) s.accept(*a);
  s.started = true;
  s.thread = std::thread([impl = impl_] { impl->io.run(); });
  return ok_status();
}

void Server::stop() {
  Impl& s = *impl_;
  if (!s.started) return;
  s.started = false;
  // Closing every socket completes every pending handler, so run() returns and nothing keeps
  // a reference to the Impl.
  net::post(s.io, [impl = impl_] { impl->close_all(); });
  if (s.thread.joinable()) s.thread.join();
}

std::vector<uint16_t> Server::ports() const {
  std::vector<uint16_t> out;
  for (const auto& a : impl_->acceptors) {
    beast::error_code ec;
    out.push_back(a->local_endpoint(ec).port());
  }
  return out;
}

}  // namespace shale::http
