// FakeHttpServer: a tiny scripted HTTP/1.1 server on 127.0.0.1 for S3 client tests. Each
// request gets the next queued response (or the handler's answer); responses can also close
// the connection without answering or send a body shorter than their Content-Length, so the
// client's retry and "never crash" paths can be driven deterministically.
// Threading: one thread per connection; the accessors lock one mutex.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace shale::objstore::testing_util {

struct FakeResponse {
  enum class Mode { kNormal, kCloseWithoutResponse, kTruncateBody };
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  Mode mode = Mode::kNormal;
  int delay_ms = 0;
};

struct SeenRequest {
  std::string method, path, query;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
};

class FakeHttpServer {
 public:
  FakeHttpServer() {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    ::listen(listen_fd_, 64);
    socklen_t len = sizeof(a);
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  ~FakeHttpServer() {
    stop_ = true;
    ::shutdown(listen_fd_, SHUT_RDWR);
    acceptor_.join();
    {
      std::lock_guard lk(mu_);
      for (int fd : conns_) ::shutdown(fd, SHUT_RDWR);
    }
    for (auto& t : workers_) t.join();
    for (int fd : conns_) ::close(fd);
    ::close(listen_fd_);
  }

  int port() const { return port_; }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  void push(FakeResponse r) {
    std::lock_guard lk(mu_);
    queue_.push_back(std::move(r));
  }
  void set_handler(std::function<FakeResponse(const SeenRequest&)> h) {
    std::lock_guard lk(mu_);
    handler_ = std::move(h);
  }
  std::vector<SeenRequest> requests() {
    std::lock_guard lk(mu_);
    return seen_;
  }
  int max_in_flight() const { return max_in_flight_.load(); }

 private:
  void accept_loop() {
    while (!stop_) {
      int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) {
        if (stop_) return;
        continue;
      }
      std::lock_guard lk(mu_);
      conns_.push_back(fd);
      workers_.emplace_back([this, fd] { serve(fd); });
    }
  }

  static bool read_more(int fd, std::string& buf) {
    char tmp[65536];
    ssize_t n = ::recv(fd, tmp, sizeof(tmp), 0);
    if (n <= 0) return false;
    buf.append(tmp, static_cast<size_t>(n));
    return true;
  }

  void serve(int fd) {
    std::string buf;
    for (;;) {
      size_t end;
      while ((end = buf.find("\r\n\r\n")) == std::string::npos) {
        if (!read_more(fd, buf)) return finish(fd);
      }
      SeenRequest req;
      std::string head = buf.substr(0, end);
      buf.erase(0, end + 4);
      size_t line_end = head.find("\r\n");
      std::string line = head.substr(0, line_end);
      size_t sp1 = line.find(' '), sp2 = line.rfind(' ');
      req.method = line.substr(0, sp1);
      std::string target = line.substr(sp1 + 1, sp2 - sp1 - 1);
      size_t q = target.find('?');
      req.path = target.substr(0, q);
      if (q != std::string::npos) req.query = target.substr(q + 1);
      size_t pos = line_end == std::string::npos ? head.size() : line_end + 2;
      while (pos < head.size()) {
        size_t e = head.find("\r\n", pos);
        if (e == std::string::npos) e = head.size();
        std::string h = head.substr(pos, e - pos);
        size_t c = h.find(':');
        if (c != std::string::npos) {
          std::string name = h.substr(0, c);
          for (auto& ch : name) ch = static_cast<char>(std::tolower(ch));
          std::string v = h.substr(c + 1);
          while (!v.empty() && v[0] == ' ') v.erase(0, 1);
          req.headers[name] = v;
        }
        pos = e + 2;
      }
      size_t cl =
          req.headers.count("content-length") ? std::stoul(req.headers["content-length"]) : 0;
      while (buf.size() < cl) {
        if (!read_more(fd, buf)) return finish(fd);
      }
      req.body = buf.substr(0, cl);
      buf.erase(0, cl);

      int now = ++in_flight_;
      int prev = max_in_flight_.load();
      while (now > prev && !max_in_flight_.compare_exchange_weak(prev, now)) {
      }
      FakeResponse resp;
      {
        std::lock_guard lk(mu_);
        seen_.push_back(req);
        if (!queue_.empty()) {
          resp = std::move(queue_.front());
          queue_.pop_front();
        } else if (handler_) {
          resp = handler_(req);
        }
      }
      if (resp.delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(resp.delay_ms));
      --in_flight_;
      if (resp.mode == FakeResponse::Mode::kCloseWithoutResponse) return finish(fd);
      std::string out = "HTTP/1.1 " + std::to_string(resp.status) + " X\r\n";
      for (auto& [k, v] : resp.headers) out += k + ": " + v + "\r\n";
      size_t announced = resp.body.size();
      std::string body = resp.body;
      if (resp.mode == FakeResponse::Mode::kTruncateBody) body = body.substr(0, body.size() / 2);
      out += "Content-Length: " + std::to_string(announced) + "\r\n\r\n" + body;
      ::send(fd, out.data(), out.size(), MSG_NOSIGNAL);
      if (resp.mode == FakeResponse::Mode::kTruncateBody) return finish(fd);
    }
  }

  void finish(int fd) {
    std::lock_guard lk(mu_);
    ::shutdown(fd, SHUT_RDWR);
    // The fd is closed at destruction (conns_), so it is never reused while listed.
  }

  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<int> conns_;
  std::vector<std::thread> workers_;
  std::deque<FakeResponse> queue_;
  std::function<FakeResponse(const SeenRequest&)> handler_;
  std::vector<SeenRequest> seen_;
  std::atomic<int> in_flight_{0};
  std::atomic<int> max_in_flight_{0};
};

}  // namespace shale::objstore::testing_util
