// net::Server over real loopback sockets: framing, pipelining and response order, bad frame
// sizes, truncated frames, idle timeout, shutdown, many connections, cross-shard calls.
#include "net/server.h"

#include <sys/socket.h>
#include <sys/time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <asio/detached.hpp>
#include <asio/read.hpp>
#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/write.hpp>

#include "base/endian.h"

namespace shale::net {
namespace {

using asio::ip::tcp;

// Test handler: the frame's text decides what happens.
//   "delay:<ms>:<tag>"  answers <tag> after a timer of <ms>
//   "early:<ms>:<tag>"  releases the connection's order at once, then answers <tag> after <ms>
//                       (so released requests overlap and finish out of order)
//   "hold:<ms>:<tag>"   releases the order after <ms>, then answers <tag> after another <ms>
//   "none"              no response
//   "close"             closes the connection without answering
//   "bye:<tag>"         answers <tag> and then closes
//   "throw"             throws
//   "shard"             answers the shard index it runs on
//   "hop"               runs a step on the next shard and answers "<that shard>/<back on>"
//   "parts:<a>,<b>,.."  answers the parts as separate buffers of one chain
//   "block"             never answers (waits on a timer that only shutdown ends)
//   anything else       echoes the frame
class TestHandler : public FrameHandler {
 public:
  explicit TestHandler(ShardPool& pool) : pool_(pool) {}

  asio::awaitable<Response> handle(const ConnectionInfo& conn, Buffer frame,
                                   RequestOrder& order) override {
    calls.fetch_add(1);
    int now = in_flight_.fetch_add(1) + 1;
    int prev = max_in_flight.load();
    while (now > prev && !max_in_flight.compare_exchange_weak(prev, now)) {
    }
    struct Done {
      std::atomic<int>& n;
      ~Done() { n.fetch_sub(1); }
    } done{in_flight_};
    std::string s(frame.view());
    const std::string tag = s.substr(s.rfind(':') + 1);
    note("start:" + tag);
    auto ex = co_await asio::this_coro::executor;
    if (s.rfind("early:", 0) == 0 || s.rfind("hold:", 0) == 0) {
      auto colon = s.find(':', 5);
      int ms = std::stoi(s.substr(s.find(':') + 1, colon - s.find(':') - 1));
      asio::steady_timer t(ex, std::chrono::milliseconds(ms));
      if (s[0] == 'h') {
        co_await t.async_wait(asio::use_awaitable);
        t.expires_after(std::chrono::milliseconds(ms));
      }
      note("release:" + tag);
      order.release();
      co_await t.async_wait(asio::use_awaitable);
      note("end:" + tag);
      co_return reply(tag);
    }
    if (s.rfind("delay:", 0) == 0) {
      auto colon = s.find(':', 6);
      int ms = std::stoi(s.substr(6, colon - 6));
      asio::steady_timer t(ex, std::chrono::milliseconds(ms));
      co_await t.async_wait(asio::use_awaitable);
      note("end:" + tag);
      co_return reply(s.substr(colon + 1));
    }
    if (s == "none") co_return Response::none();
    if (s == "close") co_return Response::close_connection();
    if (s.rfind("bye:", 0) == 0) {
      Response r = reply(s.substr(4));
      r.close = true;
      co_return r;
    }
    if (s == "throw") throw std::runtime_error("handler exploded");
    if (s == "shard") co_return reply(std::to_string(conn.shard));
    if (s == "hop") {
      size_t other = (conn.shard + 1) % pool_.size();
      int there = co_await pool_.call_on(other, [] { return ShardPool::current(); });
      co_return reply(std::to_string(there) + "/" + std::to_string(ShardPool::current()));
    }
    if (s.rfind("parts:", 0) == 0) {
      BufferChain c;
      std::string rest = s.substr(6);
      size_t pos = 0;
      while (pos <= rest.size()) {
        size_t comma = rest.find(',', pos);
        if (comma == std::string::npos) comma = rest.size();
        c.push_back(Buffer::copy(rest.substr(pos, comma - pos)));
        pos = comma + 1;
      }
      co_return Response::reply(std::move(c));
    }
    if (s == "block") {
      asio::steady_timer t(ex, std::chrono::hours(1));
      std::error_code ec;
      co_await t.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      co_return Response::none();
    }
    BufferChain c;
    c.push_back(frame);  // zero-copy echo: the response shares the request's buffer
    co_return Response::reply(std::move(c));
  }

  void on_open(const ConnectionInfo&) override { opened.fetch_add(1); }
  void on_close(const ConnectionInfo&) override { closed.fetch_add(1); }

  static Response reply(const std::string& s) {
    BufferChain c;
    c.push_back(Buffer::copy(s));
    return Response::reply(std::move(c));
  }

  std::atomic<int> calls{0};
  std::atomic<int> opened{0};
  std::atomic<int> closed{0};
  std::atomic<int> max_in_flight{0};

  // Events in the order they happened ("start:<tag>", "release:<tag>", "end:<tag>").
  std::vector<std::string> events() {
    std::lock_guard lk(mu_);
    return events_;
  }

 private:
  void note(std::string e) {
    std::lock_guard lk(mu_);
    events_.push_back(std::move(e));
  }
  std::mutex mu_;
  std::vector<std::string> events_;
  ShardPool& pool_;
  std::atomic<int> in_flight_{0};
};

// A blocking client with a receive timeout, so a server bug fails the test instead of hanging.
class Client {
 public:
  explicit Client(uint16_t port) : sock_(io_) {
    sock_.connect(tcp::endpoint(asio::ip::address_v4::loopback(), port));
    timeval tv{10, 0};
    ::setsockopt(sock_.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  void send_raw(const std::string& bytes) { asio::write(sock_, asio::buffer(bytes)); }
  static std::string frame(const std::string& body) {
    std::string f(4, '\0');
    be::store32(reinterpret_cast<uint8_t*>(f.data()), static_cast<uint32_t>(body.size()));
    return f + body;
  }
  void send(const std::string& body) { send_raw(frame(body)); }
  static std::string size_prefix(int32_t n) {
    std::string f(4, '\0');
    be::store32(reinterpret_cast<uint8_t*>(f.data()), static_cast<uint32_t>(n));
    return f;
  }
  // Reads one response frame; nullopt on EOF / error.
  std::optional<std::string> recv() {
    uint8_t hdr[4];
    std::error_code ec;
    asio::read(sock_, asio::buffer(hdr), ec);
    if (ec) return std::nullopt;
    std::string body(be::load32(hdr), '\0');
    asio::read(sock_, asio::buffer(body), ec);
    if (ec) return std::nullopt;
    return body;
  }
  // True when the server closed the connection (reads EOF or reset).
  bool closed_by_peer() {
    char c;
    std::error_code ec;
    size_t n = sock_.read_some(asio::buffer(&c, 1), ec);
    return n == 0 && (ec == asio::error::eof || ec == asio::error::connection_reset);
  }
  void shutdown_send() { sock_.shutdown(tcp::socket::shutdown_send); }
  void close() { sock_.close(); }

 private:
  asio::io_context io_;
  tcp::socket sock_;
};

class ServerTest : public ::testing::Test {
 protected:
  void start(ServerOptions opts = {}, size_t shards = 2) {
    pool_ = std::make_unique<ShardPool>(shards);
    handler_ = std::make_unique<TestHandler>(*pool_);
    if (opts.listeners.empty()) opts.listeners.push_back({"PLAINTEXT", "127.0.0.1", 0});
    server_ = std::make_unique<Server>(opts, *pool_, *handler_);
    auto st = server_->bind();
    ASSERT_TRUE(st.ok()) << st.error().to_string();
    pool_->start();
    server_->start();
    port_ = server_->local_endpoints().at(0).port();
  }
  void TearDown() override {
    if (server_) server_->stop();
    if (pool_) pool_->stop(5000);
    server_.reset();
  }
  // Polls a condition the server reaches asynchronously (no timing is asserted).
  template <typename F>
  bool eventually(F f) {
    for (int i = 0; i < 2000; ++i) {
      if (f()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return f();
  }

  // Declared so that the handler outlives the pool (pending coroutine frames reference it).
  std::unique_ptr<TestHandler> handler_;
  std::unique_ptr<ShardPool> pool_;
  std::unique_ptr<Server> server_;
  uint16_t port_ = 0;
};

TEST_F(ServerTest, EchoesOneFrame) {
  start();
  Client c(port_);
  c.send("hello");
  EXPECT_EQ(c.recv(), "hello");
}

TEST_F(ServerTest, ReassemblesFramesSplitAcrossWrites) {
  start();
  Client c(port_);
  std::string f = Client::frame("split-frame-body") + Client::frame("second");
  // Byte by byte, with pauses so the server sees many partial reads.
  for (size_t i = 0; i < f.size(); ++i) {
    c.send_raw(f.substr(i, 1));
    if (i % 5 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(c.recv(), "split-frame-body");
  EXPECT_EQ(c.recv(), "second");
}

TEST_F(ServerTest, EmptyFrameIsHandedToTheHandler) {
  start();
  Client c(port_);
  c.send("");
  EXPECT_EQ(c.recv(), "");
  EXPECT_EQ(handler_->calls.load(), 1);
}

TEST_F(ServerTest, AnswersManyPipelinedFramesInOrder) {
  start();
  Client c(port_);
  std::string all;
  for (int i = 0; i < 2000; ++i) all += Client::frame("req-" + std::to_string(i));
  c.send_raw(all);
  for (int i = 0; i < 2000; ++i) ASSERT_EQ(c.recv(), "req-" + std::to_string(i));
}

TEST_F(ServerTest, PipelinedFramesOfMixedSizes) {
  start();
  Client c(port_);
  std::vector<std::string> bodies;
  for (size_t n : {0, 1, 3, 4, 5, 0, 1000, 70000, 2, 0, 131072, 7}) {
    std::string b(n, 'a');
    for (size_t i = 0; i < n; ++i) b[i] = static_cast<char>('a' + (i * 7 + n) % 26);
    bodies.push_back(b);
  }
  std::string all;
  for (const auto& b : bodies) all += Client::frame(b);
  c.send_raw(all);
  for (const auto& b : bodies) ASSERT_EQ(c.recv(), b);
}

TEST_F(ServerTest, KeepsResponseOrderWhenReleasedHandlersFinishOutOfOrder) {
  ServerOptions o;
  o.max_inflight_per_connection = 16;
  start(o);
  Client c(port_);
  std::string all;
  // Earlier requests take longer and release the order at once, so handlers overlap and
  // complete in reverse order.
  for (int i = 0; i < 10; ++i) {
    all += Client::frame("early:" + std::to_string((10 - i) * 15) + ":r" + std::to_string(i));
  }
  c.send_raw(all);
  for (int i = 0; i < 10; ++i) ASSERT_EQ(c.recv(), "r" + std::to_string(i));
  EXPECT_GT(handler_->max_in_flight.load(), 1);  // they really overlapped
}

// Kafka's rule: a connection's requests take effect in the order they were sent. A request
// that does not release the order runs alone, even when it is slow and later ones are quick.
TEST_F(ServerTest, HandlesPipelinedRequestsOneAtATimeInArrivalOrder) {
  ServerOptions o;
  o.max_inflight_per_connection = 16;
  start(o);
  Client c(port_);
  std::string all;
  for (int i = 0; i < 8; ++i) {
    all += Client::frame("delay:" + std::to_string((8 - i) * 5) + ":d" + std::to_string(i));
  }
  c.send_raw(all);
  for (int i = 0; i < 8; ++i) ASSERT_EQ(c.recv(), "d" + std::to_string(i));
  EXPECT_EQ(handler_->max_in_flight.load(), 1);
  std::vector<std::string> want;
  for (int i = 0; i < 8; ++i) {
    want.push_back("start:d" + std::to_string(i));
    want.push_back("end:d" + std::to_string(i));
  }
  EXPECT_EQ(handler_->events(), want);
}

TEST_F(ServerTest, NextRequestStartsOnlyAfterTheOrderIsReleased) {
  start();
  Client c(port_);
  c.send_raw(Client::frame("hold:40:a") + Client::frame("b") + Client::frame("delay:1:c"));
  EXPECT_EQ(c.recv(), "a");
  EXPECT_EQ(c.recv(), "b");
  EXPECT_EQ(c.recv(), "c");
  auto ev = handler_->events();
  auto at = [&](const std::string& e) { return std::find(ev.begin(), ev.end(), e) - ev.begin(); };
  ASSERT_LT(at("release:a"), static_cast<long>(ev.size()));
  EXPECT_LT(at("release:a"), at("start:b"));  // b waited for a's release...
  EXPECT_LT(at("start:b"), at("end:a"));      // ...but not for a's end
  EXPECT_LT(at("start:b"), at("start:c"));
}

// Connections do not wait for each other: a request that never finishes on one connection
// leaves another on the same shard free.
TEST_F(ServerTest, OrderIsPerConnection) {
  ServerOptions o;
  o.shutdown_drain_ms = 100;  // the blocked handler is cut short at the end
  start(o, 1);
  Client stuck(port_);
  Client quick(port_);
  stuck.send("block");
  ASSERT_TRUE(eventually([&] { return handler_->calls.load() == 1; }));
  quick.send("fast");
  EXPECT_EQ(quick.recv(), "fast");
}

TEST_F(ServerTest, BoundsInFlightRequestsPerConnection) {
  ServerOptions o;
  o.max_inflight_per_connection = 3;
  start(o);
  Client c(port_);
  std::string all;
  for (int i = 0; i < 20; ++i) all += Client::frame("delay:5:x" + std::to_string(i));
  c.send_raw(all);
  for (int i = 0; i < 20; ++i) ASSERT_EQ(c.recv(), "x" + std::to_string(i));
  EXPECT_LE(handler_->max_in_flight.load(), 3);
}

TEST_F(ServerTest, NoResponseRequestsKeepOrderOfTheOthers) {
  start();
  Client c(port_);
  c.send_raw(Client::frame("delay:30:a") + Client::frame("none") + Client::frame("b"));
  EXPECT_EQ(c.recv(), "a");
  EXPECT_EQ(c.recv(), "b");
}

TEST_F(ServerTest, WritesMultiPartResponsesAsOneFrame) {
  start();
  Client c(port_);
  c.send("parts:ab,,cde,f");
  EXPECT_EQ(c.recv(), "abcdef");
}

TEST_F(ServerTest, OversizedFrameClosesOnlyThatConnection) {
  ServerOptions o;
  o.max_request_bytes = 1000;
  start(o);
  Client good(port_);
  Client bad(port_);
  bad.send_raw(Client::size_prefix(1001));
  EXPECT_TRUE(bad.closed_by_peer());
  good.send("still-here");
  EXPECT_EQ(good.recv(), "still-here");
  // Exactly the limit is allowed.
  Client edge(port_);
  edge.send(std::string(1000, 'z'));
  EXPECT_EQ(edge.recv(), std::string(1000, 'z'));
}

TEST_F(ServerTest, NegativeSizeClosesTheConnection) {
  start();
  Client bad(port_);
  bad.send_raw(Client::size_prefix(-1));
  EXPECT_TRUE(bad.closed_by_peer());
  Client bad2(port_);
  bad2.send_raw(Client::size_prefix(INT32_MIN));
  EXPECT_TRUE(bad2.closed_by_peer());
  Client good(port_);
  good.send("ok");
  EXPECT_EQ(good.recv(), "ok");
  EXPECT_EQ(handler_->calls.load(), 1);
}

TEST_F(ServerTest, TruncatedFrameOnDisconnectIsDropped) {
  start();
  {
    Client c(port_);
    c.send_raw(Client::size_prefix(100) + "only-part-of-it");
    c.close();
  }
  {
    Client c(port_);
    c.send_raw("\x00\x00");  // half a size prefix
    c.close();
  }
  EXPECT_TRUE(eventually([&] { return server_->open_connections() == 0; }));
  EXPECT_EQ(handler_->calls.load(), 0);
  Client good(port_);
  good.send("after");
  EXPECT_EQ(good.recv(), "after");
}

TEST_F(ServerTest, AnswersPendingRequestsAfterClientHalfClose) {
  start();
  Client c(port_);
  c.send_raw(Client::frame("delay:20:first") + Client::frame("second"));
  c.shutdown_send();
  EXPECT_EQ(c.recv(), "first");
  EXPECT_EQ(c.recv(), "second");
  EXPECT_TRUE(c.closed_by_peer());
}

TEST_F(ServerTest, HandlerCanCloseTheConnection) {
  start();
  Client c(port_);
  c.send_raw(Client::frame("a") + Client::frame("close") + Client::frame("never"));
  EXPECT_EQ(c.recv(), "a");
  EXPECT_TRUE(c.closed_by_peer());

  Client d(port_);
  d.send_raw(Client::frame("bye:last-words"));
  EXPECT_EQ(d.recv(), "last-words");
  EXPECT_TRUE(d.closed_by_peer());
}

TEST_F(ServerTest, HandlerExceptionClosesTheConnectionOnly) {
  start();
  Client bad(port_);
  bad.send("throw");
  EXPECT_TRUE(bad.closed_by_peer());
  Client good(port_);
  good.send("fine");
  EXPECT_EQ(good.recv(), "fine");
}

TEST_F(ServerTest, ClosesIdleConnections) {
  ServerOptions o;
  o.idle_timeout_ms = 100;
  start(o);
  Client c(port_);
  c.send("active");
  EXPECT_EQ(c.recv(), "active");
  EXPECT_TRUE(c.closed_by_peer());  // after ~100 ms of silence
  EXPECT_TRUE(eventually([&] { return handler_->closed.load() == 1; }));
}

TEST_F(ServerTest, HugeIdleTimeoutDoesNotOverflow) {
  ServerOptions o;
  o.idle_timeout_ms = INT64_MAX;
  start(o);
  Client c(port_);
  c.send("one");
  EXPECT_EQ(c.recv(), "one");
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  c.send("two");
  EXPECT_EQ(c.recv(), "two");
}

TEST_F(ServerTest, LargeFramesArriveWhole) {
  start();
  Client c(port_);
  std::string big(3 * 1024 * 1024 + 7, 'q');
  for (size_t i = 0; i < big.size(); i += 4093) big[i] = static_cast<char>('a' + i % 26);
  c.send(big);
  EXPECT_EQ(c.recv(), big);
}

TEST_F(ServerTest, DistributesConnectionsOverShards) {
  start({}, 3);
  std::vector<std::unique_ptr<Client>> clients;
  std::set<std::string> shards;
  for (int i = 0; i < 6; ++i) {
    clients.push_back(std::make_unique<Client>(port_));
    clients.back()->send("shard");
    shards.insert(*clients.back()->recv());
  }
  EXPECT_EQ(shards, (std::set<std::string>{"0", "1", "2"}));
}

TEST_F(ServerTest, HandlerRunsWorkOnAnotherShardAndComesBack) {
  start({}, 2);
  for (int i = 0; i < 4; ++i) {
    Client c(port_);
    c.send("shard");
    std::string mine = *c.recv();
    c.send("hop");
    std::string other = mine == "0" ? "1" : "0";
    EXPECT_EQ(c.recv(), other + "/" + mine);
  }
}

TEST_F(ServerTest, ServesManyConnectionsAtOnce) {
  start({}, 2);
  constexpr int kConns = 200;
  constexpr int kReqs = 5;
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < kConns; ++i) clients.push_back(std::make_unique<Client>(port_));
  for (int i = 0; i < kConns; ++i) {
    std::string all;
    for (int j = 0; j < kReqs; ++j)
      all += Client::frame(std::to_string(i) + "." + std::to_string(j));
    clients[i]->send_raw(all);
  }
  for (int i = 0; i < kConns; ++i) {
    for (int j = 0; j < kReqs; ++j) {
      ASSERT_EQ(clients[i]->recv(), std::to_string(i) + "." + std::to_string(j));
    }
  }
  EXPECT_EQ(server_->accepted_connections(), static_cast<uint64_t>(kConns));
  clients.clear();
  EXPECT_TRUE(eventually([&] { return server_->open_connections() == 0; }));
  EXPECT_EQ(handler_->closed.load(), kConns);
}

TEST_F(ServerTest, ShutdownClosesOpenConnectionsAndStopsAccepting) {
  ServerOptions o;
  o.shutdown_drain_ms = 200;  // the blocked handler below never finishes on its own
  start(o);
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < 5; ++i) {
    clients.push_back(std::make_unique<Client>(port_));
    clients.back()->send("ping");
    ASSERT_EQ(clients.back()->recv(), "ping");
  }
  clients[0]->send("block");
  EXPECT_TRUE(eventually([&] { return handler_->calls.load() == 6; }));
  server_->stop();
  for (auto& c : clients) EXPECT_TRUE(c->closed_by_peer());
  pool_->stop(200);
  EXPECT_THROW(Client c(port_), std::system_error);
}

TEST_F(ServerTest, ShutdownWaitsForInFlightHandlers) {
  start();
  Client c(port_);
  c.send("delay:50:late");
  EXPECT_TRUE(eventually([&] { return handler_->calls.load() == 1; }));
  server_->stop();
  // stop() returned only after the handler finished and the connection was released.
  EXPECT_EQ(server_->open_connections(), 0u);
  EXPECT_EQ(handler_->closed.load(), 1);
}

TEST(ServerBind, PortInUseNamesTheListener) {
  ShardPool pool(1);
  TestHandler h(pool);
  ServerOptions o;
  o.listeners.push_back({"PLAINTEXT", "127.0.0.1", 0});
  Server first(o, pool, h);
  ASSERT_TRUE(first.bind().ok());
  uint16_t port = first.local_endpoints()[0].port();
  ServerOptions o2;
  o2.listeners.push_back({"PLAINTEXT", "127.0.0.1", port});
  Server second(o2, pool, h);
  auto st = second.bind();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("PLAINTEXT://127.0.0.1:" + std::to_string(port)),
            std::string::npos)
      << st.error().message;
  EXPECT_NE(st.error().message.find("in use"), std::string::npos) << st.error().message;
}

TEST(ServerBind, UnresolvableHostIsAnError) {
  ShardPool pool(1);
  TestHandler h(pool);
  ServerOptions o;
  o.listeners.push_back({"PLAINTEXT", "no-such-host.invalid", 0});
  Server s(o, pool, h);
  auto st = s.bind();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("no-such-host.invalid"), std::string::npos);
}

TEST(ServerBind, BindsSeveralListeners) {
  ShardPool pool(2);
  TestHandler h(pool);
  ServerOptions o;
  o.listeners.push_back({"PLAINTEXT", "127.0.0.1", 0});
  o.listeners.push_back({"INTERNAL", "localhost", 0});
  Server s(o, pool, h);
  ASSERT_TRUE(s.bind().ok());
  pool.start();
  s.start();
  auto eps = s.local_endpoints();
  ASSERT_EQ(eps.size(), 2u);
  for (const auto& ep : eps) {
    Client c(ep.port());
    c.send("x");
    EXPECT_EQ(c.recv(), "x");
  }
  s.stop();
  pool.stop(1000);
}

TEST(ShardPoolTest, RunsOnTheChosenShard) {
  ShardPool pool(3);
  pool.start();
  EXPECT_EQ(ShardPool::current(), -1);
  std::atomic<int> seen{-2};
  std::promise<void> done;
  pool.post(2, [&] {
    seen = ShardPool::current();
    done.set_value();
  });
  done.get_future().wait();
  EXPECT_EQ(seen.load(), 2);
  // run_on from shard 0 to shard 1 and back, with an exception crossing shards.
  std::promise<std::string> result;
  asio::co_spawn(
      pool.executor(0),
      [&]() -> asio::awaitable<void> {
        int there = co_await pool.run_on(
            1, []() -> asio::awaitable<int> { co_return ShardPool::current(); });
        std::string r = std::to_string(there) + "/" + std::to_string(ShardPool::current());
        try {
          co_await pool.call_on(2, []() -> int { throw std::runtime_error("boom"); });
        } catch (const std::runtime_error& e) {
          r += std::string("/") + e.what();
        }
        result.set_value(r);
      },
      asio::detached);
  EXPECT_EQ(result.get_future().get(), "1/0/boom");
  pool.stop(1000);
}

}  // namespace
}  // namespace shale::net
