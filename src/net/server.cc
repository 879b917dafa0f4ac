#include "net/server.h"

#include <array>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <unordered_map>

#include <asio/detached.hpp>
#include <asio/post.hpp>
#include <asio/read.hpp>
#include <asio/redirect_error.hpp>
#include <asio/ssl/stream.hpp>
#include <asio/steady_timer.hpp>
#include <asio/write.hpp>

#include "base/endian.h"
#include "security/tls.h"

namespace shale::net {

using asio::awaitable;
using asio::use_awaitable;
using asio::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

std::string endpoint_string(const tcp::endpoint& ep) {
  auto addr = ep.address().to_string();
  if (ep.address().is_v6()) return "[" + addr + "]:" + std::to_string(ep.port());
  return addr + ":" + std::to_string(ep.port());
}

// Wakes one coroutine parked on a timer. Everything using it runs on one shard thread, and a
// waiter re-checks its condition before parking, so a wake-up cannot be lost.
awaitable<void> park(asio::steady_timer& t) {
  std::error_code ec;
  t.expires_at(Clock::time_point::max());
  co_await t.async_wait(asio::redirect_error(use_awaitable, ec));
}

}  // namespace

using TlsStream = asio::ssl::stream<tcp::socket>;

// What the server's registry needs of a connection, whatever its stream type.
class ConnectionBase {
 public:
  virtual ~ConnectionBase() = default;
  virtual void close() = 0;
};

struct Server::Impl : std::enable_shared_from_this<Server::Impl> {
  Impl(ServerOptions o, ShardPool& p, FrameHandler& h)
      : opts(std::move(o)), pool(p), handler(h), registry(p.size()) {}

  awaitable<void> accept_loop(size_t idx);
  void connection_gone(const std::string& ip);
  // max.connections.per.ip: counts one more connection from `ip`, or returns false at the cap.
  bool admit(const std::string& ip);

  ServerOptions opts;
  ShardPool& pool;
  FrameHandler& handler;
  std::vector<std::unique_ptr<tcp::acceptor>> acceptors;  // owned by shard 0 once started
  std::vector<tcp::endpoint> endpoints;
  // Per shard: the open connections, touched only on that shard's thread.
  std::vector<std::unordered_map<uint64_t, std::weak_ptr<ConnectionBase>>> registry;
  std::atomic<size_t> open{0};
  std::atomic<uint64_t> accepted{0};
  std::atomic<uint64_t> next_id{1};
  std::atomic<size_t> round_robin{0};
  std::atomic<bool> stopping{false};
  std::atomic<size_t> accept_loops{0};
  log::RateLimiter bad_frame_log{10000};
  log::RateLimiter handler_error_log{10000};
  log::RateLimiter accept_error_log{10000};
  log::RateLimiter handshake_log{10000};
  log::RateLimiter principal_log{10000};
  log::RateLimiter per_ip_log{10000};
  std::unordered_map<std::string, int32_t> per_ip;  // open connections by address, under mu
  std::mutex mu;
  std::condition_variable cv;  // signalled when `open` or `accept_loops` drops
  bool started = false;
};

// One client connection. Lives on its shard; its coroutines (reader, writer, idle watchdog and
// one per in-flight request) each hold a shared_ptr, so it is destroyed after the last ends.
// `Stream` is tcp::socket (plaintext: reads and writes go straight to the socket) or an Asio
// SSL stream over one (TLS); the request path is the same code for both.
template <typename Stream>
class Connection final : public ConnectionBase,
                         public std::enable_shared_from_this<Connection<Stream>> {
  static constexpr bool kTls = !std::is_same_v<Stream, tcp::socket>;
  using std::enable_shared_from_this<Connection<Stream>>::shared_from_this;

 public:
  Connection(std::shared_ptr<Server::Impl> srv, Stream sock, ConnectionInfo info, std::string ip,
             std::shared_ptr<const security::PrincipalMapper> mapper = nullptr)
      : ip_(std::move(ip)),
        mapper_(std::move(mapper)),
        srv_(std::move(srv)),
        socket_(std::move(sock)),
        info_(std::move(info)),
        writer_wake_(socket_.get_executor()),
        reader_wake_(socket_.get_executor()),
        idle_timer_(socket_.get_executor()),
        last_activity_(Clock::now()) {}

  ~Connection() {
    if (opened_) srv_->handler.on_close(info_);
    srv_->connection_gone(ip_);
  }

  // On the owning shard.
  void start() {
    auto self = shared_from_this();
    if (srv_->stopping.load()) {
      close();
      return;
    }
    srv_->registry[info_.shard][info_.id] = self;
    if constexpr (kTls) {
      asio::co_spawn(socket_.get_executor(), handshake(self), asio::detached);
    } else {
      run(std::move(self));
    }
  }

  // Idempotent; on the owning shard. Pending reads/writes/waits complete with an error.
  void close() override {
    if (closed_) return;
    closed_ = true;
    std::error_code ec;
    socket_.lowest_layer().shutdown(tcp::socket::shutdown_both, ec);
    socket_.lowest_layer().close(ec);
    writer_wake_.cancel();
    reader_wake_.cancel();
    idle_timer_.cancel();
    srv_->registry[info_.shard].erase(info_.id);
  }

 private:
  // One request, from the moment it is read until its response is written.
  struct Slot final : RequestOrder {
    explicit Slot(std::weak_ptr<Connection> c, Buffer f)
        : conn(std::move(c)), frame(std::move(f)) {}
    // From any thread: hands the connection's order to the next request, on the shard.
    void release() override {
      if (release_sent.exchange(true)) return;
      if (auto c = conn.lock()) {
        asio::post(c->socket_.get_executor(), [c] { c->order_released(); });
      }
    }
    std::weak_ptr<Connection> conn;
    Buffer frame;  // until the handler starts
    std::atomic<bool> release_sent{false};
    bool done = false;
    Response resp;
    std::array<uint8_t, 4> prefix{};
  };

  // The connection is ready for requests (after the TLS handshake, if any).
  void run(std::shared_ptr<Connection> self) {
    opened_ = true;
    srv_->handler.on_open(info_);
    auto ex = socket_.get_executor();
    asio::co_spawn(ex, read_loop(self), asio::detached);
    asio::co_spawn(ex, write_loop(self), asio::detached);
    if (srv_->opts.idle_timeout_ms > 0) asio::co_spawn(ex, idle_loop(self), asio::detached);
  }

  // TLS: the handshake, bounded by tls_handshake_timeout_ms; a failure (garbage, a plaintext
  // client, an untrusted or missing client certificate) closes only this connection.
  awaitable<void> handshake(std::shared_ptr<Connection> self) {
    idle_timer_.expires_after(std::chrono::milliseconds(srv_->opts.tls_handshake_timeout_ms));
    bool timed_out = false;
    idle_timer_.async_wait([this, self, &timed_out](std::error_code ec) {
      if (ec || closed_ || handshake_done_) return;
      timed_out = true;
      close();
    });
    std::error_code ec;
    co_await socket_.async_handshake(asio::ssl::stream_base::server,
                                     asio::redirect_error(use_awaitable, ec));
    handshake_done_ = true;
    idle_timer_.cancel();
    if (ec || closed_) {
      uint64_t suppressed = 0;
      if (!srv_->stopping.load() && srv_->handshake_log.allow(&suppressed)) {
        spdlog::warn("TLS handshake with {} ({}) failed: {}; closing it{}", info_.peer,
                     info_.listener, timed_out ? "timed out" : ec.message(),
                     suppressed ? fmt::format(" [{} similar suppressed]", suppressed) : "");
      }
      close();
      co_return;
    }
    last_activity_ = Clock::now();
    auto principal = security::tls_principal(socket_.native_handle(), mapper_.get());
    if (!principal) {
      uint64_t suppressed = 0;
      if (srv_->principal_log.allow(&suppressed)) {
        spdlog::warn(
            "closing TLS connection from {} ({}): no ssl.principal.mapping.rules rule "
            "matches its certificate subject{}",
            info_.peer, info_.listener,
            suppressed ? fmt::format(" [{} similar suppressed]", suppressed) : "");
      }
      close();
      co_return;
    }
    info_.session->principal = std::move(*principal);
    run(std::move(self));
  }

  void bad_frame(const char* what, int64_t size) {
    uint64_t suppressed = 0;
    if (srv_->bad_frame_log.allow(&suppressed)) {
      spdlog::warn("closing connection from {} ({}): {} frame size {} (limit {}){}", info_.peer,
                   info_.listener, what, size, srv_->opts.max_request_bytes,
                   suppressed ? fmt::format(" [{} similar suppressed]", suppressed) : "");
    }
  }

  awaitable<void> read_loop(std::shared_ptr<Connection> self) {
    const size_t max_inflight = std::max<size_t>(1, srv_->opts.max_inflight_per_connection);
    // The next size prefix; body reads also fill it when the client has already sent it
    // (pipelining), which saves one read call per request.
    std::array<uint8_t, 4> hdr;
    size_t hdr_have = 0;
    for (;;) {
      while (!closed_ && !close_requested_ && queue_.size() >= max_inflight) {
        co_await park(reader_wake_);
      }
      // A handler asked to close: the writer flushes the earlier responses and closes.
      if (close_requested_) co_return;
      if (closed_) break;
      std::error_code ec;
      if (hdr_have < hdr.size()) {
        co_await asio::async_read(socket_, asio::buffer(hdr.data() + hdr_have, 4 - hdr_have),
                                  asio::redirect_error(use_awaitable, ec));
        if (ec == asio::error::eof && hdr_have == 0) {
          // The client finished sending: answer what it sent, then close.
          close_requested_ = true;
          writer_wake_.cancel();
          co_return;
        }
        if (ec || closed_) break;  // reset, EOF inside a size prefix, or close()
      }
      hdr_have = 0;
      last_activity_ = Clock::now();
      int32_t size = static_cast<int32_t>(be::load32(hdr.data()));
      if (size < 0) {
        bad_frame("negative", size);
        break;
      }
      if (size > srv_->opts.max_request_bytes) {
        bad_frame("oversized", size);
        break;
      }
      if (!kTls && size > 64 * 1024) {
        // Allocate a large frame only once its body starts arriving, so that a client cannot
        // pin big buffers with size prefixes alone. (Under TLS the body may already sit
        // decrypted in the stream, invisible to a socket wait.)
        co_await socket_.lowest_layer().async_wait(tcp::socket::wait_read,
                                                   asio::redirect_error(use_awaitable, ec));
        if (ec || closed_) break;
      }
      // The frame's one allocation; it becomes the Buffer owner, so later stages slice it.
      std::shared_ptr<uint8_t[]> mem(new uint8_t[size > 0 ? size : 1]);
      const size_t want = static_cast<size_t>(size);
      size_t got = 0;
      while (got < want && !ec) {
        std::array<asio::mutable_buffer, 2> bufs{asio::buffer(mem.get() + got, want - got),
                                                 asio::buffer(hdr)};
        size_t n = co_await socket_.async_read_some(bufs, asio::redirect_error(use_awaitable, ec));
        if (n > want - got) {
          hdr_have = n - (want - got);
          n = want - got;
        }
        got += n;
      }
      if (got < want || closed_) {
        if (ec && ec != asio::error::operation_aborted) {
          spdlog::debug("connection from {} ended inside a {}-byte frame: {}", info_.peer, size,
                        ec.message());
        }
        break;
      }
      last_activity_ = Clock::now();
      const uint8_t* p = mem.get();
      Buffer frame(std::shared_ptr<const void>(std::move(mem), p), p, static_cast<size_t>(size));
      auto slot = std::make_shared<Slot>(self, std::move(frame));
      queue_.push_back(slot);
      waiting_.push_back(std::move(slot));
      start_next();
    }
    close();
  }

  // Starts the oldest request not yet handled when no request holds the connection's order
  // (Kafka's muted channel: one request at a time takes effect, in arrival order). On the shard.
  void start_next() {
    if (holding_ || waiting_.empty() || closed_ || stop_starting_) return;
    auto slot = std::move(waiting_.front());
    waiting_.pop_front();
    holding_ = true;
    Buffer frame = std::move(slot->frame);
    asio::co_spawn(socket_.get_executor(),
                   handle_one(shared_from_this(), std::move(slot), std::move(frame)),
                   asio::detached);
  }

  // The request holding the order released it (explicitly or by finishing). On the shard.
  void order_released() {
    holding_ = false;
    start_next();
  }

  awaitable<void> handle_one(std::shared_ptr<Connection> /*keep_alive*/, std::shared_ptr<Slot> slot,
                             Buffer frame) {
    Response r;
    try {
      r = co_await srv_->handler.handle(info_, std::move(frame), *slot);
    } catch (const std::exception& e) {
      uint64_t suppressed = 0;
      if (srv_->handler_error_log.allow(&suppressed)) {
        spdlog::error("request handler failed on connection from {}: {}; closing it{}", info_.peer,
                      e.what(),
                      suppressed ? fmt::format(" [{} similar suppressed]", suppressed) : "");
      }
      r = Response::close_connection();
    }
    if (r.frame && r.frame->size() > static_cast<size_t>(INT32_MAX)) {
      spdlog::error("response of {} bytes does not fit a frame; closing connection from {}",
                    r.frame->size(), info_.peer);
      r = Response::close_connection();
    }
    if (r.close) {
      // Stop reading: requests after this one will not be answered.
      close_requested_ = true;
      stop_starting_ = true;
      reader_wake_.cancel();
    }
    slot->resp = std::move(r);
    slot->done = true;
    writer_wake_.cancel();
    slot->release();  // no-op when the handler released already
  }

  awaitable<void> write_loop(std::shared_ptr<Connection> /*keep_alive*/) {
    constexpr size_t kMaxBatch = 64;  // responses gathered into one write
    std::vector<asio::const_buffer> bufs;
    std::vector<std::shared_ptr<Slot>> batch;
    for (;;) {
      while (!closed_ && (queue_.empty() || !queue_.front()->done)) {
        if (close_requested_ && queue_.empty()) break;
        co_await park(writer_wake_);
      }
      if (closed_ || queue_.empty()) break;
      bufs.clear();
      batch.clear();
      bool close_after = false;
      while (!queue_.empty() && queue_.front()->done && batch.size() < kMaxBatch) {
        auto s = std::move(queue_.front());
        queue_.pop_front();
        if (s->resp.frame) {
          be::store32(s->prefix.data(), static_cast<uint32_t>(s->resp.frame->size()));
          bufs.emplace_back(s->prefix.data(), s->prefix.size());
          for (const Buffer& b : s->resp.frame->parts()) {
            if (!b.empty()) bufs.emplace_back(b.data(), b.size());
          }
        }
        close_after = s->resp.close;
        batch.push_back(std::move(s));
        if (close_after) break;
      }
      reader_wake_.cancel();  // room for more in-flight requests
      if (!bufs.empty()) {
        std::error_code ec;
        co_await asio::async_write(socket_, bufs, asio::redirect_error(use_awaitable, ec));
        if (ec) break;
        last_activity_ = Clock::now();
      }
      batch.clear();  // release the response buffers now, not at the next write
      if (close_after) break;
    }
    close();
  }

  awaitable<void> idle_loop(std::shared_ptr<Connection> /*keep_alive*/) {
    // Clamped so that last_activity_ + idle cannot overflow the clock (the key is a long).
    constexpr int64_t kTenYearsMs = int64_t{10} * 365 * 24 * 3600 * 1000;
    const auto idle = std::chrono::milliseconds(std::min(srv_->opts.idle_timeout_ms, kTenYearsMs));
    while (!closed_) {
      idle_timer_.expires_at(last_activity_ + idle);
      std::error_code ec;
      co_await idle_timer_.async_wait(asio::redirect_error(use_awaitable, ec));
      if (closed_) break;
      auto now = Clock::now();
      if (!queue_.empty()) {
        // A request being handled is not idleness (a long-poll fetch may wait a while).
        last_activity_ = now;
      } else if (now - last_activity_ >= idle) {
        spdlog::debug("closing connection from {}: idle for {} ms", info_.peer,
                      srv_->opts.idle_timeout_ms);
        close();
      }
    }
  }

  std::string ip_;                                           // for max.connections.per.ip
  std::shared_ptr<const security::PrincipalMapper> mapper_;  // TLS only
  std::shared_ptr<Server::Impl> srv_;
  Stream socket_;
  ConnectionInfo info_;
  asio::steady_timer writer_wake_;
  asio::steady_timer reader_wake_;
  asio::steady_timer idle_timer_;
  Clock::time_point last_activity_;
  // Requests in arrival order, handled or not; the writer pops from the front.
  std::deque<std::shared_ptr<Slot>> queue_;
  // Requests read but not yet started, in arrival order (a suffix of queue_).
  std::deque<std::shared_ptr<Slot>> waiting_;
  // A started request has not released the order yet: nothing else may start.
  bool holding_ = false;
  // A handler asked to close: requests after it are never started.
  bool stop_starting_ = false;
  bool opened_ = false;
  bool handshake_done_ = false;
  bool closed_ = false;
  bool close_requested_ = false;
};

void Server::Impl::connection_gone(const std::string& ip) {
  std::lock_guard lk(mu);
  --open;
  if (auto it = per_ip.find(ip); it != per_ip.end() && --it->second <= 0) per_ip.erase(it);
  cv.notify_all();
}

bool Server::Impl::admit(const std::string& ip) {
  int32_t limit = opts.max_connections_per_ip;
  if (auto o = opts.max_connections_per_ip_overrides.find(ip);
      o != opts.max_connections_per_ip_overrides.end()) {
    limit = o->second;
  }
  std::lock_guard lk(mu);
  int32_t& n = per_ip[ip];
  if (n >= limit) {
    if (n == 0) per_ip.erase(ip);
    return false;
  }
  ++n;
  ++open;
  return true;
}

awaitable<void> Server::Impl::accept_loop(size_t idx) {
  auto self = shared_from_this();
  tcp::acceptor& acc = *acceptors[idx];
  const ListenerSpec& spec = opts.listeners[idx];
  const std::string& listener = spec.name;
  asio::steady_timer backoff(acc.get_executor());
  while (!stopping.load()) {
    size_t target = round_robin.fetch_add(1) % pool.size();
    std::error_code ec;
    tcp::socket sock =
        co_await acc.async_accept(pool.context(target), asio::redirect_error(use_awaitable, ec));
    if (stopping.load() || ec == asio::error::operation_aborted) break;
    if (ec) {
      // Typically EMFILE: back off instead of spinning on a listener that stays readable.
      if (accept_error_log.allow()) spdlog::warn("accept on {} failed: {}", listener, ec.message());
      backoff.expires_after(std::chrono::milliseconds(100));
      co_await backoff.async_wait(asio::redirect_error(use_awaitable, ec));
      continue;
    }
    std::error_code opt_ec;
    sock.set_option(tcp::no_delay(true), opt_ec);
    ConnectionInfo info;
    info.id = next_id.fetch_add(1);
    info.shard = target;
    info.listener = listener;
    info.security_protocol = spec.security_protocol;
    auto peer = sock.remote_endpoint(opt_ec);
    info.peer = opt_ec ? "?" : endpoint_string(peer);
    std::string ip = opt_ec ? "?" : peer.address().to_string();
    if (!admit(ip)) {
      uint64_t suppressed = 0;
      if (per_ip_log.allow(&suppressed)) {
        spdlog::warn("closing connection from {} ({}): max.connections.per.ip reached{}", info.peer,
                     listener,
                     suppressed ? fmt::format(" [{} similar suppressed]", suppressed) : "");
      }
      sock.close(opt_ec);
      continue;
    }
    info.session = std::make_shared<Session>();
    info.session->authenticated = !spec.sasl;
    ++accepted;
    if (spec.tls) {
      auto conn = std::make_shared<Connection<TlsStream>>(
          self, TlsStream(std::move(sock), *spec.tls), std::move(info), std::move(ip),
          spec.principal_mapper);
      pool.post(target, [conn] { conn->start(); });
    } else {
      auto conn = std::make_shared<Connection<tcp::socket>>(self, std::move(sock), std::move(info),
                                                            std::move(ip));
      pool.post(target, [conn] { conn->start(); });
    }
  }
  std::lock_guard lk(mu);
  --accept_loops;
  cv.notify_all();
}

Server::Server(ServerOptions opts, ShardPool& pool, FrameHandler& handler)
    : impl_(std::make_shared<Impl>(std::move(opts), pool, handler)) {}

Server::~Server() { stop(); }

size_t Server::open_connections() const noexcept { return impl_->open.load(); }
uint64_t Server::accepted_connections() const noexcept { return impl_->accepted.load(); }

Status Server::bind() {
  Impl& s = *impl_;
  s.acceptors.clear();
  s.endpoints.clear();
  asio::io_context& io = s.pool.context(0);
  for (const ListenerSpec& l : s.opts.listeners) {
    std::string where = l.name + "://" + l.host + ":" + std::to_string(l.port);
    tcp::endpoint ep;
    if (l.host.empty() || l.host == "0.0.0.0") {
      ep = tcp::endpoint(asio::ip::address_v4::any(), l.port);
    } else {
      std::error_code ec;
      auto addr = asio::ip::make_address(l.host, ec);
      if (!ec) {
        ep = tcp::endpoint(addr, l.port);
      } else {
        // A host name: resolve it now (start-up, not on an event loop).
        tcp::resolver resolver(io);
        auto results = resolver.resolve(l.host, std::to_string(l.port), ec);
        if (ec || results.empty()) {
          s.acceptors.clear();
          return Error::make(Errc::kInvalidArgument,
                             "listener " + where + ": cannot resolve host '" + l.host +
                                 "': " + (ec ? ec.message() : "no addresses"));
        }
        ep = results.begin()->endpoint();
        for (const auto& r : results) {
          if (r.endpoint().address().is_v4()) {
            ep = r.endpoint();
            break;
          }
        }
      }
    }
    auto acc = std::make_unique<tcp::acceptor>(io);
    std::error_code ec;
    acc->open(ep.protocol(), ec);
    if (!ec) acc->set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec) acc->bind(ep, ec);
    if (!ec) acc->listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
      s.acceptors.clear();
      return Error::make(Errc::kIoError, "listener " + where + ": cannot listen on " +
                                             endpoint_string(ep) + ": " + ec.message());
    }
    s.endpoints.push_back(acc->local_endpoint(ec));
    s.acceptors.push_back(std::move(acc));
  }
  return ok_status();
}

void Server::start() {
  Impl& s = *impl_;
  if (s.started) return;
  s.started = true;
  s.accept_loops = s.acceptors.size();
  for (size_t i = 0; i < s.acceptors.size(); ++i) {
    asio::co_spawn(s.pool.context(0), s.accept_loop(i), asio::detached);
  }
}

void Server::stop() {
  Impl& s = *impl_;
  if (s.stopping.exchange(true)) return;
  if (!s.started || !s.pool.running()) {
    s.acceptors.clear();
    return;
  }
  auto impl = impl_;
  // Acceptors belong to shard 0; closing them ends the accept loops.
  s.pool.post(0, [impl] {
    for (auto& a : impl->acceptors) {
      std::error_code ec;
      a->close(ec);
    }
  });
  for (size_t i = 0; i < s.pool.size(); ++i) {
    s.pool.post(i, [impl, i] {
      std::vector<std::shared_ptr<ConnectionBase>> conns;
      for (auto& [id, weak] : impl->registry[i]) {
        if (auto c = weak.lock()) conns.push_back(std::move(c));
      }
      for (auto& c : conns) c->close();
    });
  }
  std::unique_lock lk(s.mu);
  bool done = s.cv.wait_for(lk, std::chrono::milliseconds(s.opts.shutdown_drain_ms),
                            [&] { return s.open.load() == 0 && s.accept_loops.load() == 0; });
  if (!done) {
    spdlog::warn("{} connection(s) still finishing requests after {} ms", s.open.load(),
                 s.opts.shutdown_drain_ms);
  }
}

std::vector<tcp::endpoint> Server::local_endpoints() const { return impl_->endpoints; }

}  // namespace shale::net
