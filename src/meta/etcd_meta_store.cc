#include "meta/etcd_meta_store.h"

#include <curl/curl.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "base/log.h"

namespace shale::meta {

using json = nlohmann::json;

namespace {

// --- base64 (etcd's JSON gateway carries keys and values as standard base64) ---

constexpr char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string b64(std::string_view in) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= in.size(); i += 3) {
    uint32_t v = (uint32_t(uint8_t(in[i])) << 16) | (uint32_t(uint8_t(in[i + 1])) << 8) |
                 uint32_t(uint8_t(in[i + 2]));
    out += kB64[v >> 18];
    out += kB64[(v >> 12) & 63];
    out += kB64[(v >> 6) & 63];
    out += kB64[v & 63];
  }
  if (i + 1 == in.size()) {
    uint32_t v = uint32_t(uint8_t(in[i])) << 16;
    out += kB64[v >> 18];
    out += kB64[(v >> 12) & 63];
    out += "==";
  } else if (i + 2 == in.size()) {
    uint32_t v = (uint32_t(uint8_t(in[i])) << 16) | (uint32_t(uint8_t(in[i + 1])) << 8);
    out += kB64[v >> 18];
    out += kB64[(v >> 12) & 63];
    out += kB64[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

int b64_val(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+' || c == '-') return 62;
  if (c == '/' || c == '_') return 63;
  return -1;
}

// Thrown inside the JSON readers below; turned into an Error at the call boundary.
struct Malformed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string unb64(std::string_view in) {
  std::string out;
  out.reserve(in.size() / 4 * 3);
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    if (c == '=') break;
    int v = b64_val(c);
    if (v < 0) throw Malformed("bad base64 in etcd answer");
    acc = (acc << 6) | uint32_t(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += char((acc >> bits) & 0xff);
    }
  }
  return out;
}

// --- JSON readers (protobuf's JSON mapping: int64 as strings, zero values omitted) ---

int64_t i64(const json& j, const char* field) {
  if (!j.is_object()) throw Malformed("etcd answer: object expected");
  auto it = j.find(field);
  if (it == j.end() || it->is_null()) return 0;
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_string()) {
    const auto& s = it->get_ref<const std::string&>();
    int64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size()) throw Malformed("etcd answer: bad integer");
    return v;
  }
  throw Malformed(std::string("etcd answer: bad field ") + field);
}

bool boolean(const json& j, const char* field) {
  if (!j.is_object()) throw Malformed("etcd answer: object expected");
  auto it = j.find(field);
  if (it == j.end() || it->is_null()) return false;
  if (!it->is_boolean()) throw Malformed(std::string("etcd answer: bad field ") + field);
  return it->get<bool>();
}

std::string bytes(const json& j, const char* field) {
  if (!j.is_object()) throw Malformed("etcd answer: object expected");
  auto it = j.find(field);
  if (it == j.end() || it->is_null()) return {};
  if (!it->is_string()) throw Malformed(std::string("etcd answer: bad field ") + field);
  return unb64(it->get_ref<const std::string&>());
}

std::string str(const json& j, const char* field) {
  if (!j.is_object()) return {};
  auto it = j.find(field);
  if (it == j.end() || !it->is_string()) return {};
  return it->get<std::string>();
}

const json& member(const json& j, const char* field) {
  static const json kNull;
  if (!j.is_object()) throw Malformed("etcd answer: object expected");
  auto it = j.find(field);
  return it == j.end() ? kNull : *it;
}

const json& array(const json& j, const char* field) {
  static const json kEmpty = json::array();
  const json& a = member(j, field);
  if (a.is_null()) return kEmpty;
  if (!a.is_array()) throw Malformed(std::string("etcd answer: bad field ") + field);
  return a;
}

bool has_prefix(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// etcd refuses an empty key; "\0" is the smallest key there is (no key is empty).
std::string b64_key(const std::string& k) { return b64(k.empty() ? std::string(1, '\0') : k); }

// n = 0: etcd refused it (its limit is lower than the configured one).
std::string too_many_ops(size_t n, int64_t limit) {
  std::string what = n ? "transaction has " + std::to_string(n) + " compares or operations, more"
                       : "transaction has more compares or operations";
  return what + " than etcd accepts (--max-txn-ops; configured metadata.etcd.max.txn.ops=" +
         std::to_string(limit) +
         "): start every etcd member with a larger --max-txn-ops and set "
         "metadata.etcd.max.txn.ops to match";
}

std::string too_large(size_t n, int64_t limit) {
  return "transaction of about " + std::to_string(n) +
         " bytes is larger than etcd accepts (--max-request-bytes; configured "
         "metadata.etcd.max.request.bytes=" +
         std::to_string(limit) +
         "): start every etcd member with a larger --max-request-bytes and set "
         "metadata.etcd.max.request.bytes to match";
}

struct CurlInit {
  CurlInit() { curl_global_init(CURL_GLOBAL_DEFAULT); }
};

void global_init() { static CurlInit once; }

size_t append_cb(char* p, size_t sz, size_t n, void* ud) {
  static_cast<std::string*>(ud)->append(p, sz * n);
  return sz * n;
}

// A connection error that proves the request was never sent (safe to retry a write).
bool not_sent(CURLcode c) {
  return c == CURLE_COULDNT_CONNECT || c == CURLE_COULDNT_RESOLVE_HOST ||
         c == CURLE_COULDNT_RESOLVE_PROXY;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Http: POSTs JSON to the current endpoint; fails over on connection errors.

struct EtcdMetaStore::Http {
  EtcdOptions opts;
  std::atomic<size_t> cur{0};
  std::mutex pool_mu;
  std::vector<CURL*> pool;  // idle easy handles (keep their connections)

  explicit Http(EtcdOptions o) : opts(std::move(o)) { global_init(); }
  ~Http() {
    for (CURL* c : pool) curl_easy_cleanup(c);
  }

  CURL* take() {
    {
      std::lock_guard lk(pool_mu);
      if (!pool.empty()) {
        CURL* c = pool.back();
        pool.pop_back();
        return c;
      }
    }
    return curl_easy_init();
  }
  void give(CURL* c) {
    std::lock_guard lk(pool_mu);
    pool.push_back(c);
  }

  void rotate(size_t from) {
    size_t next = (from + 1) % opts.endpoints.size();
    cur.compare_exchange_strong(from, next);
  }

  // idempotent: a failed attempt may be retried even if it may have reached etcd.
  Result<json> call(const char* path, const json& body, bool idempotent) {
    const std::string payload = body.dump();
    const int64_t deadline = clock::mono_ms() + opts.request_timeout_ms;
    std::string last_error = "no endpoint";
    size_t attempts = 0;
    for (;;) {
      int64_t left = deadline - clock::mono_ms();
      if (left <= 0) break;
      size_t idx = cur.load() % opts.endpoints.size();
      const std::string& ep = opts.endpoints[idx];
      std::string url = "http://" + ep + path;
      std::string resp;
      CURL* c = take();
      if (!c) return Error::make(Errc::kInternal, "curl_easy_init failed");
      curl_easy_reset(c);
      curl_easy_setopt(c, CURLOPT_URL, url.c_str());
      curl_easy_setopt(c, CURLOPT_POST, 1L);
      curl_easy_setopt(c, CURLOPT_POSTFIELDS, payload.data());
      curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(payload.size()));
      curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, append_cb);
      curl_easy_setopt(c, CURLOPT_WRITEDATA, &resp);
      curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
      curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
                       long(std::min<int64_t>(left, opts.connect_timeout_ms)));
      curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, long(left));
      struct curl_slist* hdr = curl_slist_append(nullptr, "Content-Type: application/json");
      curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
      CURLcode rc = curl_easy_perform(c);
      long status = 0;
      curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
      curl_slist_free_all(hdr);
      give(c);
      ++attempts;
      if (rc != CURLE_OK) {
        last_error = "etcd " + ep + ": " + curl_easy_strerror(rc);
        rotate(idx);
        if (!idempotent && !not_sent(rc)) {
          return Error::make(Errc::kUnavailable,
                             last_error + " (the write may or may not have been applied)", true);
        }
        if (attempts % opts.endpoints.size() == 0) {
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        continue;
      }
      json j = json::parse(resp, nullptr, /*allow_exceptions=*/false);
      if (j.is_discarded()) {
        // The streaming endpoints (lease keep-alive) answer one JSON object per line.
        auto nl = resp.find('\n');
        if (nl != std::string::npos) j = json::parse(resp.substr(0, nl), nullptr, false);
      }
      if (j.is_discarded() || !j.is_object()) {
        return Error::make(
            Errc::kIoError,
            "etcd " + ep + path + ": malformed answer (HTTP " + std::to_string(status) + ")", true);
      }
      // Streams wrap answers and errors: {"result": ...} / {"error": {...}}.
      if (j.contains("error") && j["error"].is_object()) j = j["error"];
      if (status == 200 && !j.contains("code")) return j;
      std::string msg = str(j, "message");
      if (msg.empty()) msg = str(j, "error");
      int64_t code = 0;
      if (j.contains("code") && j["code"].is_number_integer()) code = j["code"].get<int64_t>();
      if (j.contains("grpc_code") && j["grpc_code"].is_number_integer()) {
        code = j["grpc_code"].get<int64_t>();
      }
      last_error = "etcd " + ep + ": " + msg;
      if (msg.find("too many operations") != std::string::npos) {
        return Error::make(Errc::kInvalidArgument, "etcd: " + too_many_ops(0, opts.max_txn_ops));
      }
      if (msg.find("too large") != std::string::npos) {
        return Error::make(Errc::kInvalidArgument,
                           "etcd: " + too_large(payload.size() * 3 / 4, opts.max_request_bytes));
      }
      if (msg.find("lease not found") != std::string::npos) {
        return Error::make(Errc::kNotFound, last_error);
      }
      if (msg.find("compacted") != std::string::npos) {
        return Error::make(Errc::kOutOfRange, last_error);
      }
      // gRPC Unavailable (14): no leader, leader changed, member stopping, ...
      if (code == 14 || msg.find("leader") != std::string::npos ||
          msg.find("timed out") != std::string::npos) {
        rotate(idx);
        bool rejected_before_proposal = msg.find("no leader") != std::string::npos ||
                                        msg.find("not capable") != std::string::npos;
        if (!idempotent && !rejected_before_proposal) {
          return Error::make(Errc::kUnavailable,
                             last_error + " (the write may or may not have been applied)", true);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        continue;
      }
      return Error::make(Errc::kIoError, last_error, false);
    }
    return Error::make(
        Errc::kUnavailable,
        "etcd unreachable within " + std::to_string(opts.request_timeout_ms) + " ms: " + last_error,
        true);
  }
};

// Runs fn (which reads JSON) turning Malformed / json exceptions into an Error.
template <typename F>
auto guarded(F&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const std::exception& e) {
    return Error::make(Errc::kIoError, std::string("malformed etcd answer: ") + e.what(), true);
  }
}

// ---------------------------------------------------------------------------------------------

Result<EtcdOptions> parse_etcd_uri(std::string_view uri) {
  constexpr std::string_view kScheme = "etcd://";
  if (uri.substr(0, kScheme.size()) != kScheme) {
    return Error::make(
        Errc::kInvalidArgument,
        "'" + std::string(uri) + "': expected etcd://host:port[,host:port...][/prefix]");
  }
  std::string_view rest = uri.substr(kScheme.size());
  EtcdOptions o;
  auto slash = rest.find('/');
  if (slash != std::string_view::npos) {
    o.prefix = std::string(rest.substr(slash + 1));
    rest = rest.substr(0, slash);
  }
  size_t pos = 0;
  while (pos <= rest.size()) {
    size_t comma = rest.find(',', pos);
    if (comma == std::string_view::npos) comma = rest.size();
    std::string_view ep = rest.substr(pos, comma - pos);
    auto colon = ep.rfind(':');
    int port = 0;
    if (colon == std::string_view::npos || colon == 0) {
      return Error::make(Errc::kInvalidArgument, "'" + std::string(uri) + "': endpoint '" +
                                                     std::string(ep) + "' is not host:port");
    }
    auto [p, ec] = std::from_chars(ep.data() + colon + 1, ep.data() + ep.size(), port);
    if (ec != std::errc() || p != ep.data() + ep.size() || port <= 0 || port > 65535) {
      return Error::make(Errc::kInvalidArgument, "'" + std::string(uri) + "': endpoint '" +
                                                     std::string(ep) + "' has no valid port");
    }
    o.endpoints.emplace_back(ep);
    pos = comma + 1;
  }
  if (o.endpoints.empty()) {
    return Error::make(Errc::kInvalidArgument, "'" + std::string(uri) + "': no endpoint");
  }
  return o;
}

// ---------------------------------------------------------------------------------------------

struct EtcdMetaStore::Watcher {
  int64_t id = 0;
  std::string prefix;  // without the store's namespace
  WatchCallback cb;
  int64_t last_rev = 0;                  // last revision delivered (or the starting point)
  std::map<std::string, int64_t> known;  // keys known to exist -> mod_revision (reader thread)
  std::atomic<bool> stop{false};
  CURLM* multi = nullptr;  // while a stream is open; woken by cancel
  std::mutex multi_mu;
  std::thread thread;
};

EtcdMetaStore::EtcdMetaStore(EtcdOptions opts)
    : opts_(std::move(opts)), http_(std::make_unique<Http>(opts_)) {}

Result<std::unique_ptr<EtcdMetaStore>> EtcdMetaStore::open(const EtcdOptions& opts) {
  if (opts.endpoints.empty()) return Error::make(Errc::kInvalidArgument, "etcd: no endpoint");
  std::unique_ptr<EtcdMetaStore> s(new EtcdMetaStore(opts));
  SHALE_TRY(s->probe_limits());
  s->dispatcher_ = std::thread([p = s.get()] { p->dispatch_loop(); });
  return s;
}

EtcdMetaStore::~EtcdMetaStore() {
  std::map<int64_t, std::shared_ptr<Watcher>> ws;
  {
    std::lock_guard lk(mu_);
    ws.swap(watchers_);
    stop_ = true;
  }
  for (auto& [id, w] : ws) {
    w->stop = true;
    {
      std::lock_guard ml(w->multi_mu);
      if (w->multi) curl_multi_wakeup(w->multi);
    }
    if (w->thread.joinable()) w->thread.join();
  }
  cv_.notify_all();
  if (dispatcher_.joinable()) dispatcher_.join();
}

// A read-only transaction of max_txn_ops compares: etcd refuses it if its --max-txn-ops is
// lower than what we were told to use. Doubles as the connectivity check.
Status EtcdMetaStore::probe_limits() {
  json cmp = json::array();
  std::string probe_key = b64(opts_.prefix + std::string("\0shale-limit-probe", 18));
  for (int64_t i = 0; i < opts_.max_txn_ops; ++i) {
    cmp.push_back(
        {{"key", probe_key}, {"target", "MOD"}, {"result", "EQUAL"}, {"mod_revision", "0"}});
  }
  auto r = http_->call("/v3/kv/txn", json{{"compare", cmp}}, true);
  if (!r.ok()) {
    if (r.error().code == Errc::kInvalidArgument) {
      return Error::make(Errc::kInvalidArgument,
                         "etcd refuses transactions of " + std::to_string(opts_.max_txn_ops) +
                             " operations: start every etcd member with --max-txn-ops=" +
                             std::to_string(opts_.max_txn_ops) +
                             " or more, or lower metadata.etcd.max.txn.ops");
    }
    return std::move(r).error();
  }
  return ok_status();
}

Result<std::vector<KeyValue>> EtcdMetaStore::range_raw(const std::string& begin,
                                                       const std::string& end, size_t limit,
                                                       int64_t* header_rev, bool keys_only,
                                                       int64_t at_revision) {
  json req = {{"key", b64_key(begin)}, {"range_end", b64(end)}};
  if (limit) req["limit"] = std::to_string(limit);
  if (keys_only) req["keys_only"] = true;
  if (at_revision) req["revision"] = std::to_string(at_revision);
  auto r = http_->call("/v3/kv/range", req, true);
  if (!r.ok()) return std::move(r).error();
  return guarded([&]() -> Result<std::vector<KeyValue>> {
    if (header_rev) *header_rev = i64(member(*r, "header"), "revision");
    std::vector<KeyValue> out;
    for (const auto& kv : array(*r, "kvs")) {
      std::string k = bytes(kv, "key");
      if (!has_prefix(k, opts_.prefix)) throw Malformed("key outside the namespace");
      out.push_back(KeyValue{k.substr(opts_.prefix.size()), bytes(kv, "value"),
                             i64(kv, "create_revision"), i64(kv, "mod_revision"),
                             i64(kv, "lease")});
    }
    return out;
  });
}

Result<std::optional<KeyValue>> EtcdMetaStore::get(std::string_view key) {
  std::string k = opts_.prefix + std::string(key);
  auto r = range_raw(k, "", 0, nullptr, false, 0);
  if (!r.ok()) return std::move(r).error();
  if (r->empty()) return std::optional<KeyValue>();
  return std::optional<KeyValue>(std::move(r->front()));
}

Result<std::vector<KeyValue>> EtcdMetaStore::range(std::string_view begin, std::string_view end,
                                                   size_t limit) {
  std::string b = opts_.prefix + std::string(begin);
  std::string e;
  if (end.size() == 1 && end[0] == '\0') {
    // "No upper bound": up to the end of the namespace.
    e = opts_.prefix.empty() ? std::string(1, '\0') : prefix_end(opts_.prefix);
  } else {
    if (end <= begin) return std::vector<KeyValue>();  // etcd would read "" as a single key
    e = opts_.prefix + std::string(end);
  }
  return range_raw(b, e, limit, nullptr, false, 0);
}

Result<std::vector<KeyValue>> EtcdMetaStore::prefix(std::string_view p, size_t limit) {
  std::string b = opts_.prefix + std::string(p);
  return range_raw(b, prefix_end(b), limit, nullptr, false, 0);
}

Result<int64_t> EtcdMetaStore::revision() {
  int64_t rev = 0;
  std::string k = opts_.prefix.empty() ? std::string(1, '\0') : opts_.prefix;
  auto r = range_raw(k, "", 1, &rev, true, 0);
  if (!r.ok()) return std::move(r).error();
  return rev;
}

Result<int64_t> EtcdMetaStore::commit(const Txn& txn) {
  size_t n = std::max(txn.compares.size(), txn.ops.size());
  if (static_cast<int64_t>(n) > opts_.max_txn_ops) {
    return Error::make(Errc::kInvalidArgument, too_many_ops(n, opts_.max_txn_ops));
  }
  size_t approx = 64;
  json cmp = json::array();
  for (const auto& c : txn.compares) {
    approx += c.key.size() + opts_.prefix.size() + 16;
    cmp.push_back({{"key", b64(opts_.prefix + c.key)},
                   {"target", "MOD"},
                   {"result", "EQUAL"},
                   {"mod_revision", std::to_string(c.mod_revision)}});
  }
  json ops = json::array();
  for (const auto& op : txn.ops) {
    std::string k = opts_.prefix + op.key;
    approx += k.size() + op.value.size() + 24;
    switch (op.type) {
      case Op::Type::kPut: {
        json put = {{"key", b64(k)}, {"value", b64(op.value)}};
        if (op.lease) put["lease"] = std::to_string(op.lease);
        ops.push_back({{"request_put", put}});
        break;
      }
      case Op::Type::kDelete:
        ops.push_back({{"request_delete_range", {{"key", b64(k)}}}});
        break;
      case Op::Type::kDeletePrefix:
        ops.push_back(
            {{"request_delete_range", {{"key", b64_key(k)}, {"range_end", b64(prefix_end(k))}}}});
        break;
    }
  }
  if (static_cast<int64_t>(approx) > opts_.max_request_bytes) {
    return Error::make(Errc::kInvalidArgument, too_large(approx, opts_.max_request_bytes));
  }
  json req = {{"compare", cmp}, {"success", ops}};
  // A read-only transaction may be retried anywhere; a write only where etcd cannot have run it.
  auto r = http_->call("/v3/kv/txn", req, txn.ops.empty());
  if (!r.ok()) return std::move(r).error();
  return guarded([&]() -> Result<int64_t> {
    if (!boolean(*r, "succeeded")) {
      return Error::make(Errc::kConflict,
                         "compare failed on key " +
                             (txn.compares.empty() ? std::string("?") : txn.compares[0].key) +
                             (txn.compares.size() > 1 ? " (or another compared key)" : ""));
    }
    return i64(member(*r, "header"), "revision");
  });
}

Result<int64_t> EtcdMetaStore::grant_lease(int64_t ttl_ms) {
  if (ttl_ms <= 0) return Error::make(Errc::kInvalidArgument, "lease ttl must be positive");
  int64_t secs = (ttl_ms + 999) / 1000;
  auto r = http_->call("/v3/lease/grant", json{{"TTL", std::to_string(secs)}}, false);
  if (!r.ok()) return std::move(r).error();
  return guarded([&]() -> Result<int64_t> {
    std::string err = str(*r, "error");
    if (!err.empty()) return Error::make(Errc::kIoError, "etcd lease grant: " + err);
    int64_t id = i64(*r, "ID");
    if (id == 0) throw Malformed("lease grant without ID");
    return id;
  });
}

Status EtcdMetaStore::keep_alive(int64_t lease) {
  auto r = http_->call("/v3/lease/keepalive", json{{"ID", std::to_string(lease)}}, true);
  if (!r.ok()) return std::move(r).error();
  return guarded([&]() -> Status {
    const json& res = r->contains("result") ? (*r)["result"] : *r;
    if (i64(res, "TTL") <= 0) {
      return Error::make(Errc::kNotFound, "no such lease " + std::to_string(lease));
    }
    return ok_status();
  });
}

Status EtcdMetaStore::revoke_lease(int64_t lease) {
  auto r = http_->call("/v3/lease/revoke", json{{"ID", std::to_string(lease)}}, false);
  if (!r.ok()) return std::move(r).error();
  return ok_status();
}

// ---------------------------------------------------------------------------------------------
// Watches

void EtcdMetaStore::enqueue(int64_t watch_id, std::vector<WatchEvent> events) {
  std::lock_guard lk(mu_);
  queue_.push_back(Pending{watch_id, std::move(events)});
  cv_.notify_all();
}

void EtcdMetaStore::dispatch_loop() {
  std::unique_lock lk(mu_);
  for (;;) {
    cv_.wait(lk, [&] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    Pending p = std::move(queue_.front());
    queue_.pop_front();
    auto it = watchers_.find(p.watch_id);
    if (it == watchers_.end()) continue;
    std::shared_ptr<Watcher> w = it->second;
    std::lock_guard dl(deliver_mu_);
    lk.unlock();
    w->cb(p.events);
    lk.lock();
  }
}

Result<int64_t> EtcdMetaStore::watch(std::string_view prefix, int64_t from_revision,
                                     WatchCallback cb) {
  auto w = std::make_shared<Watcher>();
  w->prefix = std::string(prefix);
  w->cb = std::move(cb);
  std::string b = opts_.prefix + w->prefix;
  // The keys the watcher is taken to know: those present at its starting revision (so that a
  // reload after compaction can tell which of them were deleted meanwhile).
  int64_t rev = 0;
  auto r = range_raw(b, prefix_end(b), 0, &rev, true, from_revision);
  if (!r.ok()) {
    if (r.error().code == Errc::kOutOfRange) {
      return Error::make(Errc::kOutOfRange, "watch from revision " + std::to_string(from_revision) +
                                                ": etcd history compacted");
    }
    // A revision not yet reached: start there anyway (etcd's watch waits for it).
    if (from_revision > 0 && r.error().message.find("future revision") != std::string::npos) {
      r = std::vector<KeyValue>();
    } else {
      return std::move(r).error();
    }
  }
  for (auto& kv : *r) w->known[kv.key] = kv.mod_revision;
  w->last_rev = from_revision > 0 ? from_revision : rev;
  {
    std::lock_guard lk(mu_);
    w->id = next_watch_id_++;
    watchers_[w->id] = w;
  }
  w->thread = std::thread([this, w] { watch_loop(w); });
  return w->id;
}

void EtcdMetaStore::cancel_watch(int64_t watch_id) {
  std::shared_ptr<Watcher> w;
  {
    std::lock_guard lk(mu_);
    auto it = watchers_.find(watch_id);
    if (it == watchers_.end()) return;
    w = it->second;
    watchers_.erase(it);
  }
  w->stop = true;
  {
    std::lock_guard ml(w->multi_mu);
    if (w->multi) curl_multi_wakeup(w->multi);
  }
  if (w->thread.joinable()) w->thread.join();
  if (std::this_thread::get_id() != dispatcher_.get_id()) std::lock_guard dl(deliver_mu_);
}

namespace {

// State of one /v3/watch stream while it is open.
struct StreamCtx {
  std::string buf;
  bool created = false;
  bool created_seen_now = false;  // the answer being handled is the creation answer
  bool compacted = false;
  bool failed = false;  // canceled / error line: reconnect
  std::function<void(const json&)> on_result;
};

size_t stream_write(char* p, size_t sz, size_t n, void* ud) {
  auto* ctx = static_cast<StreamCtx*>(ud);
  ctx->buf.append(p, sz * n);
  size_t nl;
  while ((nl = ctx->buf.find('\n')) != std::string::npos) {
    std::string line = ctx->buf.substr(0, nl);
    ctx->buf.erase(0, nl + 1);
    if (line.find_first_not_of(" \r\t") == std::string::npos) continue;
    json j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("result")) {
      ctx->failed = true;
      return 0;  // abort the transfer
    }
    try {
      ctx->on_result(j["result"]);
    } catch (const std::exception& e) {
      SPDLOG_WARN("meta: malformed etcd watch answer: {}", e.what());
      ctx->failed = true;
      return 0;
    }
    if (ctx->compacted || ctx->failed) return 0;
  }
  return sz * n;
}

}  // namespace

void EtcdMetaStore::watch_loop(const std::shared_ptr<Watcher>& w) {
  size_t ep = http_->cur.load();
  const std::string b = opts_.prefix + w->prefix;
  const std::string e = prefix_end(b);
  int64_t retry_ms = opts_.watch_retry_ms;
  while (!w->stop) {
    StreamCtx ctx;
    ctx.on_result = [&](const json& r) {
      if (boolean(r, "created")) ctx.created = ctx.created_seen_now = true;
      if (boolean(r, "canceled")) {
        if (i64(r, "compact_revision") > 0) {
          ctx.compacted = true;
        } else {
          ctx.failed = true;
        }
        return;
      }
      // Events of one revision arrive together; deliver one callback per revision.
      std::vector<WatchEvent> batch;
      int64_t batch_rev = 0;
      auto flush = [&] {
        if (batch.empty()) return;
        if (batch_rev > w->last_rev) {
          w->last_rev = batch_rev;
          enqueue(w->id, std::move(batch));
        }
        batch.clear();
      };
      for (const auto& ev : array(r, "events")) {
        const json& kvj = member(ev, "kv");
        std::string k = bytes(kvj, "key");
        if (!has_prefix(k, opts_.prefix)) throw Malformed("key outside the namespace");
        WatchEvent we;
        we.type = str(ev, "type") == "DELETE" ? WatchEvent::Type::kDelete : WatchEvent::Type::kPut;
        we.kv.key = k.substr(opts_.prefix.size());
        we.kv.mod_revision = i64(kvj, "mod_revision");
        if (we.type == WatchEvent::Type::kPut) {
          we.kv.value = bytes(kvj, "value");
          we.kv.create_revision = i64(kvj, "create_revision");
          we.kv.lease = i64(kvj, "lease");
          w->known[we.kv.key] = we.kv.mod_revision;
        } else {
          w->known.erase(we.kv.key);
        }
        if (we.kv.mod_revision != batch_rev) flush();
        batch_rev = we.kv.mod_revision;
        batch.push_back(std::move(we));
      }
      flush();
      // A progress notification (no events, not the creation answer): every event up to its
      // header revision has been sent, so a reconnect may start after it (a quiet prefix then
      // does not fall behind compaction).
      if (!ctx.created_seen_now && array(r, "events").empty()) {
        w->last_rev = std::max(w->last_rev, i64(member(r, "header"), "revision"));
      }
      ctx.created_seen_now = false;
    };
    json req = {{"create_request",
                 {{"key", b64_key(b)},
                  {"range_end", b64(e)},
                  {"start_revision", std::to_string(w->last_rev + 1)},
                  {"progress_notify", true}}}};
    std::string payload = req.dump();
    const std::string& host = opts_.endpoints[ep % opts_.endpoints.size()];
    std::string url = "http://" + host + "/v3/watch";
    CURL* c = curl_easy_init();
    CURLM* m = curl_multi_init();
    struct curl_slist* hdr = curl_slist_append(nullptr, "Content-Type: application/json");
    curl_easy_setopt(c, CURLOPT_URL, url.c_str());
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, payload.data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(payload.size()));
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, stream_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &ctx);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, long(opts_.connect_timeout_ms));
    // A silently dead peer (network partition) is found by TCP keep-alive probes.
    curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(c, CURLOPT_TCP_KEEPIDLE, 2L);
    curl_easy_setopt(c, CURLOPT_TCP_KEEPINTVL, 1L);
    curl_multi_add_handle(m, c);
    {
      std::lock_guard ml(w->multi_mu);
      w->multi = m;
    }
    CURLcode result = CURLE_OK;
    long status = 0;
    int running = 1;
    while (!w->stop && running) {
      if (curl_multi_perform(m, &running) != CURLM_OK) {
        ctx.failed = true;
        break;
      }
      if (!running) break;
      curl_multi_poll(m, nullptr, 0, 200, nullptr);
    }
    int left = 0;
    while (CURLMsg* msg = curl_multi_info_read(m, &left)) {
      if (msg->msg == CURLMSG_DONE) result = msg->data.result;
    }
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    {
      std::lock_guard ml(w->multi_mu);
      w->multi = nullptr;
    }
    curl_multi_remove_handle(m, c);
    curl_multi_cleanup(m);
    curl_easy_cleanup(c);
    curl_slist_free_all(hdr);
    if (w->stop) break;
    (void)result;
    (void)status;
    if (ctx.compacted) {
      SPDLOG_INFO("meta: etcd watch on '{}' fell behind compaction at revision {}; reloading",
                  w->prefix, w->last_rev);
      auto st = reload_after_compaction(*w);
      if (!st.ok()) {
        SPDLOG_WARN("meta: etcd watch reload failed: {}", st.error().to_string());
      } else {
        continue;  // resume at once from the reloaded revision
      }
    } else if (ctx.created) {
      retry_ms = opts_.watch_retry_ms;  // the stream worked: start backing off afresh
    }
    SPDLOG_DEBUG("meta: etcd watch stream to {} ended ({}, HTTP {}); resuming after revision {}",
                 host, curl_easy_strerror(result), status, w->last_rev);
    ++ep;  // try the next endpoint
    for (int64_t waited = 0; waited < retry_ms && !w->stop; waited += 20) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    retry_ms = std::min<int64_t>(retry_ms * 2, 2000);
  }
}

Status EtcdMetaStore::reload_after_compaction(Watcher& w) {
  std::string b = opts_.prefix + w.prefix;
  int64_t rev = 0;
  auto r = range_raw(b, prefix_end(b), 0, &rev, false, 0);
  if (!r.ok()) return std::move(r).error();
  std::vector<WatchEvent> evs;
  std::map<std::string, int64_t> present;
  for (auto& kv : *r) {
    present[kv.key] = kv.mod_revision;
    if (kv.mod_revision > w.last_rev) {
      evs.push_back(WatchEvent{WatchEvent::Type::kPut, std::move(kv)});
    }
  }
  for (const auto& [k, mod] : w.known) {
    if (!present.count(k)) {
      WatchEvent d;
      d.type = WatchEvent::Type::kDelete;
      d.kv.key = k;
      d.kv.mod_revision = rev;
      evs.push_back(std::move(d));
    }
  }
  std::stable_sort(evs.begin(), evs.end(), [](const WatchEvent& a, const WatchEvent& b) {
    return a.kv.mod_revision < b.kv.mod_revision;
  });
  std::vector<WatchEvent> batch;
  for (auto& ev : evs) {
    if (!batch.empty() && batch.back().kv.mod_revision != ev.kv.mod_revision) {
      enqueue(w.id, std::move(batch));
      batch.clear();
    }
    batch.push_back(std::move(ev));
  }
  if (!batch.empty()) enqueue(w.id, std::move(batch));
  w.known = std::move(present);
  w.last_rev = std::max(w.last_rev, rev);
  return ok_status();
}

}  // namespace shale::meta
