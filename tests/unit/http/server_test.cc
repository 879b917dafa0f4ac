// http::Server over real loopback sockets: routes, 404/405, HEAD, keep-alive, several
// listeners, bind errors, and the http.listeners syntax.
#include "http/server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>

namespace shale::http {
namespace {

// One blocking connection; `exchange` sends a raw request and reads one whole response.
class Conn {
 public:
  explicit Conn(uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    timeval tv{10, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    EXPECT_EQ(::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  }
  ~Conn() { ::close(fd_); }
  std::string exchange(const std::string& req) {
    EXPECT_EQ(::write(fd_, req.data(), req.size()), static_cast<ssize_t>(req.size()));
    std::string got;
    char buf[4096];
    while (true) {
      auto head_end = got.find("\r\n\r\n");
      if (head_end != std::string::npos) {
        auto cl = got.find("Content-Length: ");
        size_t len = cl == std::string::npos ? 0 : std::stoul(got.substr(cl + 16));
        if (req.rfind("HEAD", 0) == 0) len = 0;
        if (got.size() >= head_end + 4 + len) return got;
      }
      ssize_t n = ::read(fd_, buf, sizeof buf);
      if (n <= 0) return got;
      got.append(buf, static_cast<size_t>(n));
    }
  }

 private:
  int fd_;
};

std::string get(const std::string& path) { return "GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n"; }

TEST(HttpServer, ServesRoutesAndRefusesTheRest) {
  Server s;
  s.route("/metrics", [](const std::string& target, const std::string& query) {
    return Reply{200, "text/plain; version=0.0.4", "m 1\n" + target + "?" + query};
  });
  ASSERT_TRUE(s.start({{"127.0.0.1", 0}}).ok());
  Conn c(s.ports().at(0));
  std::string r = c.exchange(get("/metrics?x=1"));
  EXPECT_EQ(r.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << r;
  EXPECT_NE(r.find("Content-Type: text/plain; version=0.0.4"), std::string::npos) << r;
  EXPECT_NE(r.find("\r\n\r\nm 1\n/metrics?x=1"), std::string::npos) << r;
  // Keep-alive: the same connection answers again.
  r = c.exchange(get("/nope"));
  EXPECT_EQ(r.rfind("HTTP/1.1 404", 0), 0u) << r;
  r = c.exchange("POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
  EXPECT_EQ(r.rfind("HTTP/1.1 405", 0), 0u) << r;
  r = c.exchange("HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(r.rfind("HTTP/1.1 200", 0), 0u) << r;
  EXPECT_EQ(r.find("m 1"), std::string::npos) << r;  // no body for HEAD
  s.stop();
}

TEST(HttpServer, GarbageClosesOnlyThatConnection) {
  Server s;
  s.route("/", [](const std::string&, const std::string&) {
    return Reply{200, "text/plain", "ok"};
  });
  ASSERT_TRUE(s.start({{"127.0.0.1", 0}}).ok());
  {
    Conn bad(s.ports()[0]);
    std::string r = bad.exchange("\x16\x03\x01 not http at all\r\n\r\n");
    EXPECT_EQ(r.find("200"), std::string::npos) << r;
  }
  Conn good(s.ports()[0]);
  EXPECT_EQ(good.exchange(get("/")).rfind("HTTP/1.1 200", 0), 0u);
}

TEST(HttpServer, SeveralListenersAndBindErrors) {
  Server a;
  a.route("/", [](const std::string&, const std::string&) { return Reply{}; });
  ASSERT_TRUE(a.start({{"127.0.0.1", 0}, {"", 0}}).ok());
  ASSERT_EQ(a.ports().size(), 2u);
  Server b;
  auto st = b.start({{"127.0.0.1", a.ports()[0]}});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("http://127.0.0.1:" + std::to_string(a.ports()[0])),
            std::string::npos)
      << st.error().message;
}

TEST(HttpListeners, ParsesTheKey) {
  auto r = parse_http_listeners("http://127.0.0.1:8080, http://[::1]:9000/");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].host, "127.0.0.1");
  EXPECT_EQ((*r)[0].port, 8080);
  EXPECT_EQ((*r)[1].host, "::1");
  EXPECT_TRUE(parse_http_listeners("")->empty());
  EXPECT_FALSE(parse_http_listeners("https://h:1").ok());
  EXPECT_FALSE(parse_http_listeners("http://h").ok());
  EXPECT_FALSE(parse_http_listeners("http://h:99999").ok());
  EXPECT_FALSE(parse_http_listeners("http://h:8x").ok());
}

}  // namespace
}  // namespace shale::http
