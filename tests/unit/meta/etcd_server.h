// EtcdServer: starts a real etcd member (Debian's etcd-server, binary `etcd`) for tests, on
// loopback with free ports and its own data directory under /dev/shm (or the temp directory),
// and tears it down. kill() / restart() keep the data directory, so a test can stop a member
// and bring it back. EtcdCluster starts three members.
//
// If `etcd` is not installed the fixture fails the test (never skips) and says how to install
// it: scripts/setup (scripts/setup.d/etcd.sh).
//
// Threads: use from the test thread only.
#pragma once

#include <curl/curl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace shale::meta::testing {

inline std::string find_etcd() {
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "/usr/bin:/bin";
  size_t pos = 0;
  while (pos <= p.size()) {
    size_t c = p.find(':', pos);
    if (c == std::string::npos) c = p.size();
    std::filesystem::path cand = std::filesystem::path(p.substr(pos, c - pos)) / "etcd";
    if (access(cand.c_str(), X_OK) == 0) return cand.string();
    pos = c + 1;
  }
  return "";
}

inline const char* kEtcdMissing =
    "etcd is not installed: run scripts/setup (scripts/setup.d/etcd.sh installs Debian's "
    "etcd-server package)";

inline int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  int port = ntohs(a.sin_port);
  close(fd);
  return port;
}

inline size_t curl_append(char* p, size_t sz, size_t n, void* ud) {
  static_cast<std::string*>(ud)->append(p, sz * n);
  return sz * n;
}

// POSTs (or GETs, body empty) to etcd; returns the body, "" on failure.
inline std::string http(const std::string& url, const std::string& body, long timeout_ms = 1000) {
  CURL* c = curl_easy_init();
  std::string out;
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  if (!body.empty()) curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.c_str());
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, curl_append);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &out);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  CURLcode rc = curl_easy_perform(c);
  curl_easy_cleanup(c);
  return rc == CURLE_OK ? out : "";
}

class EtcdServer {
 public:
  EtcdServer() = default;
  ~EtcdServer() {
    kill();
    if (!dir_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
      std::filesystem::remove(dir_.parent_path(), ec);  // the test root, once empty
    }
  }

  // Prepares name, ports and data dir; start() runs it.
  void init(const std::string& name, const std::filesystem::path& root) {
    name_ = name;
    client_port_ = free_port();
    peer_port_ = free_port();
    dir_ = root / name;
    std::filesystem::create_directories(dir_);
  }
  std::string peer_url() const { return "http://127.0.0.1:" + std::to_string(peer_port_); }
  std::string client_url() const { return "http://127.0.0.1:" + std::to_string(client_port_); }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(client_port_); }
  const std::string& name() const { return name_; }

  // initial_cluster: "name=peer_url,..." (empty: just this member).
  bool start(const std::string& initial_cluster = "") {
    std::string bin = find_etcd();
    if (bin.empty()) return false;
    cluster_ = initial_cluster.empty() ? name_ + "=" + peer_url() : initial_cluster;
    pid_ = fork();
    if (pid_ == 0) {
      std::string log = (dir_ / "etcd.log").string();
      FILE* f = std::freopen(log.c_str(), "a", stderr);
      (void)f;
      dup2(2, 1);
      std::string data = (dir_ / "data").string();
      execl(bin.c_str(), "etcd", "--name", name_.c_str(), "--data-dir", data.c_str(),
            "--listen-client-urls", client_url().c_str(), "--advertise-client-urls",
            client_url().c_str(), "--listen-peer-urls", peer_url().c_str(),
            "--initial-advertise-peer-urls", peer_url().c_str(), "--initial-cluster",
            cluster_.c_str(), "--initial-cluster-state", "new", "--initial-cluster-token",
            "shale-test", "--heartbeat-interval", "50", "--election-timeout", "500", "--log-level",
            "error", static_cast<char*>(nullptr));
      _exit(127);
    }
    return pid_ > 0;
  }
  // Waits until the member answers /health with a leader.
  bool wait_healthy(int timeout_ms = 20000) const {
    auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (std::chrono::steady_clock::now() < until) {
      std::string h = http(client_url() + "/health", "", 500);
      if (h.find("\"true\"") != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }
  void kill() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
  }
  bool restart() {
    kill();
    return start(cluster_);
  }
  bool running() const { return pid_ > 0; }

 private:
  std::string name_;
  std::string cluster_;
  int client_port_ = 0;
  int peer_port_ = 0;
  std::filesystem::path dir_;
  pid_t pid_ = -1;
};

// A TCP proxy in front of an etcd member, to cut one client off (a network partition) while
// others still reach etcd. Down: open connections are shut and new ones closed at once.
class TcpProxy {
 public:
  explicit TcpProxy(int target_port) : target_(target_port) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    listen(fd_, 16);
    accept_thread_ = std::thread([this] { accept_loop(); });
  }
  ~TcpProxy() {
    stop_ = true;
    set_up(false);
    shutdown(fd_, SHUT_RDWR);
    close(fd_);
    accept_thread_.join();
    std::vector<std::thread> ts;
    {
      std::lock_guard lk(mu_);
      ts.swap(pumps_);
    }
    for (auto& t : ts) t.join();
  }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(port_); }
  void set_up(bool up) {
    std::lock_guard lk(mu_);
    up_ = up;
    if (!up) {
      for (int f : open_) shutdown(f, SHUT_RDWR);
    }
  }

 private:
  void accept_loop() {
    for (;;) {
      int c = accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      std::lock_guard lk(mu_);
      if (stop_ || !up_) {
        close(c);
        continue;
      }
      int t = socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      a.sin_port = htons(static_cast<uint16_t>(target_));
      if (connect(t, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        close(c);
        close(t);
        continue;
      }
      open_.push_back(c);
      open_.push_back(t);
      pumps_.emplace_back([this, c, t] { pump(c, t); });
    }
  }
  void pump(int a, int b) {
    pollfd p[2] = {{a, POLLIN, 0}, {b, POLLIN, 0}};
    char buf[65536];
    for (;;) {
      if (poll(p, 2, 200) < 0) break;
      bool done = false;
      for (int i = 0; i < 2 && !done; ++i) {
        if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        ssize_t n = read(p[i].fd, buf, sizeof buf);
        if (n <= 0 || write(p[1 - i].fd, buf, static_cast<size_t>(n)) != n) done = true;
      }
      if (done || stop_) break;
    }
    std::lock_guard lk(mu_);
    for (int f : {a, b}) {
      open_.erase(std::remove(open_.begin(), open_.end(), f), open_.end());
      close(f);
    }
  }

  int target_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  bool up_ = true;
  std::vector<int> open_;
  std::vector<std::thread> pumps_;
  std::thread accept_thread_;
};

inline std::filesystem::path test_root() {
  std::filesystem::path base =
      std::filesystem::exists("/dev/shm") ? "/dev/shm" : std::filesystem::temp_directory_path();
  auto p = base / ("shale_etcd_" + std::to_string(getpid()));
  std::filesystem::create_directories(p);
  return p;
}

}  // namespace shale::meta::testing
