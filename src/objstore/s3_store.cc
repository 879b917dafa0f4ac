#include "objstore/s3_store.h"

#include <curl/curl.h>
#include <openssl/evp.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "base/clock.h"
#include "objstore/s3_xml.h"

namespace shale::objstore {

std::string aws_uri_encode(std::string_view s, bool keep_slash) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' ||
        (keep_slash && c == '/')) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

namespace {

std::string digest_hex(const EVP_MD* md, const uint8_t* p, size_t n) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(p, n, out, &len, md, nullptr);
  static const char* hex = "0123456789abcdef";
  std::string s;
  for (unsigned i = 0; i < len; ++i) {
    s += hex[out[i] >> 4];
    s += hex[out[i] & 15];
  }
  return s;
}

std::string md5_base64(const std::string& body) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(body.data(), body.size(), md, &len, EVP_md5(), nullptr);
  unsigned char b64[64];
  int n = EVP_EncodeBlock(b64, md, static_cast<int>(len));
  return std::string(reinterpret_cast<char*>(b64), n);
}

// curl errors that no retry can fix (a bad URL or option is a bug or a configuration error).
bool curl_retryable(CURLcode c) {
  switch (c) {
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_BAD_FUNCTION_ARGUMENT:
    case CURLE_NOT_BUILT_IN:
    case CURLE_UNKNOWN_OPTION:
    case CURLE_LOGIN_DENIED:
    case CURLE_PEER_FAILED_VERIFICATION:
      return false;
    default:
      return true;
  }
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

struct HttpRequest {
  std::string method;  // GET, PUT, POST, DELETE
  std::string key;     // empty = the bucket itself
  std::vector<std::pair<std::string, std::string>> query;
  std::vector<std::string> headers;
  Buffer body;
  std::string op;  // for messages: "PutObject", ...
};

struct HttpResponse {
  long status = 0;
  CURLcode curl = CURLE_OK;
  std::string curl_error;
  Buffer body;
  std::map<std::string, std::string> headers;  // lower-case names
  int attempts = 0;
};

using HttpCallback = std::function<void(HttpResponse)>;

struct Transfer {
  HttpRequest req;
  HttpCallback done;
  std::function<bool(const HttpResponse&)> retry_if;
  int attempts = 0;
  CURL* easy = nullptr;
  curl_slist* hdrs = nullptr;
  BufferBuilder body;
  std::map<std::string, std::string> resp_headers;
  char errbuf[CURL_ERROR_SIZE] = {0};
  bool too_big = false;
};

// The I/O thread and its curl multi handle. Everything below the mutex-protected `incoming_`
// queue is touched only by the I/O thread.
class S3Engine {
 public:
  explicit S3Engine(S3Options o) : opts(std::move(o)) {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
    if (opts.endpoint.empty()) opts.endpoint = "https://s3." + opts.region + ".amazonaws.com";
    size_t sep = opts.endpoint.find("://");
    scheme_ = opts.endpoint.substr(0, sep);
    hostport_ = opts.endpoint.substr(sep + 3);
    sigv4_ = "aws:amz:" + opts.region + ":s3";
    using PS = S3Options::PayloadSigning;
    unsigned_payload_ = opts.payload_signing == PS::kUnsigned ||
                        (opts.payload_signing == PS::kAuto && scheme_ == "https");
    multi_ = curl_multi_init();
    curl_multi_setopt(multi_, CURLMOPT_MAX_TOTAL_CONNECTIONS,
                      static_cast<long>(opts.max_concurrency));
    rng_.seed(std::random_device{}());
    io_ = std::thread([this] { loop(); });
  }

  ~S3Engine() {
    {
      std::lock_guard lk(mu_);
      stopping_ = true;
    }
    curl_multi_wakeup(multi_);
    io_.join();
    curl_multi_cleanup(multi_);
  }

  std::string url(const std::string& key,
                  const std::vector<std::pair<std::string, std::string>>& query) const {
    std::string u;
    if (opts.path_style) {
      u = opts.endpoint + "/" + opts.bucket;
      if (!key.empty()) u += "/" + aws_uri_encode(key, true);
    } else {
      u = scheme_ + "://" + opts.bucket + "." + hostport_ + "/" + aws_uri_encode(key, true);
    }
    // libcurl 7.88 signs the query string as written, so write it in SigV4's canonical form:
    // encoded, sorted by name, and "name=" for value-less parameters.
    std::vector<std::string> parts;
    for (const auto& [k, v] : query) {
      parts.push_back(aws_uri_encode(k, false) + "=" + aws_uri_encode(v, false));
    }
    std::sort(parts.begin(), parts.end());
    for (size_t i = 0; i < parts.size(); ++i) u += (i == 0 ? "?" : "&") + parts[i];
    return u;
  }

  void submit(HttpRequest req, HttpCallback done,
              std::function<bool(const HttpResponse&)> retry_if = nullptr) {
    auto t = std::make_unique<Transfer>();
    t->req = std::move(req);
    t->done = std::move(done);
    t->retry_if = std::move(retry_if);
    // The payload hash is computed here, on the caller's thread, so the I/O thread never
    // spends milliseconds hashing a 16 MiB part while other transfers wait.
    t->req.headers.push_back(
        "x-amz-content-sha256: " +
        (unsigned_payload_ ? std::string("UNSIGNED-PAYLOAD")
                           : digest_hex(EVP_sha256(), t->req.body.data(), t->req.body.size())));
    {
      std::lock_guard lk(mu_);
      if (!stopping_) {
        incoming_.push_back(std::move(t));
        t = nullptr;
      }
    }
    if (t) {
      HttpResponse r;
      r.curl = CURLE_ABORTED_BY_CALLBACK;
      r.curl_error = "object store is shutting down";
      t->done(std::move(r));
      return;
    }
    curl_multi_wakeup(multi_);
  }

  S3Options opts;
  StoreCounters counters;

 private:
  static size_t on_body(char* p, size_t size, size_t n, void* ud) {
    auto* t = static_cast<Transfer*>(ud);
    size_t len = size * n;
    if (t->body.size() == 0) {
      curl_off_t cl = -1;
      curl_easy_getinfo(t->easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl);
      if (cl > 0 && cl < (curl_off_t(5) << 30)) t->body.bytes().reserve(static_cast<size_t>(cl));
    }
    // Objects Shale writes are far below 5 GiB; a larger body is a broken server.
    if (t->body.size() + len > (size_t(5) << 30)) {
      t->too_big = true;
      return 0;
    }
    t->body.append(p, len);
    return len;
  }

  static size_t on_header(char* p, size_t size, size_t n, void* ud) {
    auto* t = static_cast<Transfer*>(ud);
    std::string_view line(p, size * n);
    if (line.rfind("HTTP/", 0) == 0) {
      t->resp_headers.clear();  // a new response (after 100 Continue or a redirect)
      return line.size();
    }
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) return line.size();
    std::string name = lower(std::string(line.substr(0, colon)));
    std::string_view v = line.substr(colon + 1);
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
    while (!v.empty() && (v.back() == '\r' || v.back() == '\n' || v.back() == ' ')) {
      v.remove_suffix(1);
    }
    t->resp_headers[name] = std::string(v);
    return line.size();
  }

  void start(std::unique_ptr<Transfer> tp) {
    Transfer* t = tp.get();
    ++t->attempts;
    StoreCounters::add(counters.requests);
    t->body = BufferBuilder();
    t->resp_headers.clear();
    t->errbuf[0] = 0;
    t->too_big = false;
    CURL* e = curl_easy_init();
    t->easy = e;
    std::string u = url(t->req.key, t->req.query);
    curl_easy_setopt(e, CURLOPT_URL, u.c_str());
    curl_easy_setopt(e, CURLOPT_PRIVATE, t);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t->errbuf);
    curl_easy_setopt(e, CURLOPT_AWS_SIGV4, sigv4_.c_str());
    curl_easy_setopt(e, CURLOPT_USERNAME, opts.access_key.c_str());
    curl_easy_setopt(e, CURLOPT_PASSWORD, opts.secret_key.c_str());
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &S3Engine::on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, t);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, &S3Engine::on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, t);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, opts.connect_timeout_ms);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, opts.request_timeout_ms);
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, opts.low_speed_bytes_per_s);
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, opts.low_speed_time_s);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(e, CURLOPT_EXPECT_100_TIMEOUT_MS, 200L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, opts.verify_tls ? 1L : 0L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, opts.verify_tls ? 2L : 0L);
    curl_slist* h = nullptr;
    for (const auto& line : t->req.headers) h = curl_slist_append(h, line.c_str());
    if (!opts.session_token.empty()) {
      h = curl_slist_append(h, ("x-amz-security-token: " + opts.session_token).c_str());
    }
    // No "Expect:" header to suppress 100-continue: libcurl 7.88 signs an empty Expect header
    // it then does not send, and the server rejects the signature. libcurl adds its own
    // "Expect: 100-continue" for bodies over 1 MiB after signing; the wait for the interim
    // response is capped below.
    const std::string& m = t->req.method;
    if (m == "GET") {
      curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    } else if (m == "DELETE") {
      curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, "DELETE");
    } else {
      // The body is handed over as POSTFIELDS (not copied; the Buffer lives in the Transfer)
      // so libcurl's SigV4 code hashes the same bytes we announced in x-amz-content-sha256.
      static const uint8_t kEmpty = 0;
      const void* p = t->req.body.empty() ? &kEmpty : t->req.body.data();
      curl_easy_setopt(e, CURLOPT_POSTFIELDS, p);
      curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(t->req.body.size()));
      if (m != "POST") curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, m.c_str());
      bool has_type = false;
      for (const auto& line : t->req.headers) {
        if (lower(line).rfind("content-type:", 0) == 0) has_type = true;
      }
      if (!has_type) h = curl_slist_append(h, "Content-Type: application/octet-stream");
    }
    t->hdrs = h;
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
    curl_multi_add_handle(multi_, e);
    active_[e] = std::move(tp);
  }

  void release(Transfer* t) {
    curl_multi_remove_handle(multi_, t->easy);
    curl_easy_cleanup(t->easy);
    curl_slist_free_all(t->hdrs);
    t->easy = nullptr;
    t->hdrs = nullptr;
  }

  void finish(CURL* e, CURLcode code) {
    auto it = active_.find(e);
    if (it == active_.end()) return;
    std::unique_ptr<Transfer> t = std::move(it->second);
    active_.erase(it);
    HttpResponse r;
    r.curl = code;
    if (code != CURLE_OK) {
      r.curl_error = t->errbuf[0] ? t->errbuf : curl_easy_strerror(code);
      if (t->too_big) r.curl_error = "response body larger than 5 GiB";
    }
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &r.status);
    release(t.get());
    r.body = std::move(t->body).freeze();
    r.headers = std::move(t->resp_headers);
    r.attempts = t->attempts;

    bool retry = false;
    if (code != CURLE_OK) {
      retry = curl_retryable(code);
    } else if (http_status_retryable(r.status)) {
      retry = true;
    } else if (r.status == 400 &&
               r.body.view().find("<Code>RequestTimeout</Code>") != std::string_view::npos) {
      retry = true;
    } else if (auto cl = r.headers.find("content-length"); cl != r.headers.end()) {
      // A body shorter or longer than announced is a damaged response: try again.
      if (cl->second != std::to_string(r.body.size()) && t->req.method != "HEAD") {
        retry = true;
        r.curl = CURLE_PARTIAL_FILE;
        r.curl_error = "body length " + std::to_string(r.body.size()) +
                       " does not match Content-Length " + cl->second;
      }
    }
    if (!retry && t->retry_if && t->retry_if(r)) retry = true;
    if (retry && opts.retry.may_retry(t->attempts)) {
      StoreCounters::add(counters.retries);
      int64_t wait = opts.retry.backoff_ms(t->attempts - 1, rng_);
      delayed_.emplace(clock::mono_ms() + wait, std::move(t));
      return;
    }
    t->done(std::move(r));
  }

  void loop() {
    for (;;) {
      bool stop;
      {
        std::lock_guard lk(mu_);
        stop = stopping_;
        while (!incoming_.empty()) {
          waiting_.push_back(std::move(incoming_.front()));
          incoming_.pop_front();
        }
      }
      if (stop) break;
      int64_t now = clock::mono_ms();
      while (!delayed_.empty() && delayed_.begin()->first <= now) {
        waiting_.push_front(std::move(delayed_.begin()->second));  // retries go first
        delayed_.erase(delayed_.begin());
      }
      while (!waiting_.empty() && static_cast<int>(active_.size()) < opts.max_concurrency) {
        auto t = std::move(waiting_.front());
        waiting_.pop_front();
        start(std::move(t));
      }
      int running = 0;
      curl_multi_perform(multi_, &running);
      int left = 0;
      while (CURLMsg* msg = curl_multi_info_read(multi_, &left)) {
        if (msg->msg == CURLMSG_DONE) finish(msg->easy_handle, msg->data.result);
      }
      int timeout = 1000;
      if (!delayed_.empty()) {
        int64_t d = delayed_.begin()->first - clock::mono_ms();
        timeout = static_cast<int>(std::clamp<int64_t>(d, 0, timeout));
      }
      if (!waiting_.empty() && static_cast<int>(active_.size()) < opts.max_concurrency) {
        timeout = 0;
      }
      curl_multi_poll(multi_, nullptr, 0, timeout, nullptr);
    }
    // Shutting down: every request still here gets its callback, once.
    auto fail = [](std::unique_ptr<Transfer> t) {
      HttpResponse r;
      r.curl = CURLE_ABORTED_BY_CALLBACK;
      r.curl_error = "object store is shutting down";
      r.attempts = t->attempts;
      t->done(std::move(r));
    };
    for (auto& [e, t] : active_) {
      release(t.get());
      fail(std::move(t));
    }
    active_.clear();
    for (auto& [due, t] : delayed_) fail(std::move(t));
    delayed_.clear();
    for (auto& t : waiting_) fail(std::move(t));
    waiting_.clear();
    std::deque<std::unique_ptr<Transfer>> rest;
    {
      std::lock_guard lk(mu_);
      rest.swap(incoming_);
    }
    for (auto& t : rest) fail(std::move(t));
  }

  std::string scheme_, hostport_, sigv4_;
  bool unsigned_payload_ = false;
  CURLM* multi_ = nullptr;
  std::mutex mu_;
  std::deque<std::unique_ptr<Transfer>> incoming_;
  bool stopping_ = false;
  // I/O thread only:
  std::deque<std::unique_ptr<Transfer>> waiting_;
  std::multimap<int64_t, std::unique_ptr<Transfer>> delayed_;
  std::map<CURL*, std::unique_ptr<Transfer>> active_;
  std::mt19937_64 rng_;
  std::thread io_;
};

namespace {

// Turns a final response that is not a success into an Error.
Error to_error(const HttpResponse& r, const std::string& op, const std::string& bucket,
               const std::string& key) {
  std::string where =
      "S3 " + op + (key.empty() ? " s3://" + bucket : " s3://" + bucket + "/" + key);
  std::string tries = r.attempts > 1 ? " (after " + std::to_string(r.attempts) + " attempts)" : "";
  if (r.curl != CURLE_OK) {
    if (r.curl == CURLE_ABORTED_BY_CALLBACK) {
      return Error::make(Errc::kShutdown, where + ": " + r.curl_error);
    }
    Errc c = r.curl == CURLE_OPERATION_TIMEDOUT ? Errc::kTimeout : Errc::kIoError;
    return Error::make(c, where + ": " + r.curl_error + tries, curl_retryable(r.curl));
  }
  std::string code, msg;
  if (auto e = s3xml::parse_error(r.body.view()); e.ok()) {
    code = e->code;
    msg = e->message;
  }
  std::string detail = code.empty() ? "HTTP " + std::to_string(r.status) : code + ": " + msg;
  if (r.status == 403) {
    return Error::make(Errc::kIoError, where + ": access denied: " + detail);
  }
  if (r.status == 404) {
    if (code == "NoSuchBucket") {
      return Error::make(Errc::kNotFound, where + ": bucket " + bucket + " does not exist");
    }
    if (code == "NoSuchUpload") {
      return Error::make(Errc::kNotFound, where + ": no such multipart upload");
    }
    return Error::make(Errc::kNotFound, where + ": no such object: " + key + " (" + detail + ")");
  }
  if (r.status == 409) return Error::make(Errc::kConflict, where + ": " + detail);
  if (http_status_retryable(r.status) || code == "RequestTimeout") {
    return Error::make(Errc::kUnavailable, where + ": " + detail + tries, true);
  }
  if (r.status >= 400 && r.status < 500) {
    return Error::make(Errc::kInvalidArgument, where + ": " + detail);
  }
  // 3xx: libcurl does not follow redirects; S3 sends 301 PermanentRedirect for a wrong region.
  return Error::make(Errc::kIoError, where + ": unexpected HTTP status " +
                                         std::to_string(r.status) +
                                         (code.empty() ? "" : " (" + detail + ")"));
}

bool ok_status_code(long s) { return s >= 200 && s < 300; }

}  // namespace

namespace {
// An empty key would address the bucket itself (a PUT there is CreateBucket), so keys are
// checked before any request is built.
Status check_key(const std::string& key) {
  if (key.empty()) return Error::make(Errc::kInvalidArgument, "empty S3 object key");
  if (key.size() > 1024) {
    return Error::make(Errc::kInvalidArgument, "S3 object key longer than 1024 bytes");
  }
  return ok_status();
}
}  // namespace

S3Store::S3Store(std::unique_ptr<S3Engine> engine) : engine_(std::move(engine)) {}
S3Store::~S3Store() = default;

Result<std::unique_ptr<S3Store>> S3Store::open(S3Options o) {
  if (o.bucket.empty()) return Error::make(Errc::kInvalidArgument, "S3 bucket name is empty");
  if (o.region.empty()) return Error::make(Errc::kInvalidArgument, "S3 region is empty");
  if (!o.endpoint.empty() && o.endpoint.rfind("http://", 0) != 0 &&
      o.endpoint.rfind("https://", 0) != 0) {
    return Error::make(Errc::kInvalidArgument,
                       "S3 endpoint must start with http:// or https://: " + o.endpoint);
  }
  if (o.access_key.empty() || o.secret_key.empty()) {
    return Error::make(Errc::kInvalidArgument,
                       "no S3 credentials: set accessKey/secretKey in the bucket URI or "
                       "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY");
  }
  if (o.max_concurrency < 1) o.max_concurrency = 1;
  o.list_page_size = std::clamp(o.list_page_size, 1, 1000);
  o.delete_batch = std::clamp(o.delete_batch, 1, 1000);
  return std::unique_ptr<S3Store>(new S3Store(std::make_unique<S3Engine>(std::move(o))));
}

std::string S3Store::describe() const {
  return "s3://" + engine_->opts.bucket + " at " + engine_->url("", {});
}
StoreStats S3Store::stats() const { return engine_->counters.snapshot(); }
std::string S3Store::object_url(const std::string& key) const { return engine_->url(key, {}); }

void S3Store::put(const std::string& key, BufferChain data, StatusCallback done) {
  if (Status k = check_key(key); !k.ok()) return done(std::move(k));
  S3Engine* eng = engine_.get();
  HttpRequest req;
  req.method = "PUT";
  req.key = key;
  req.body = data.flatten();
  req.op = "PutObject";
  uint64_t n = req.body.size();
  eng->submit(std::move(req), [eng, key, n, done = std::move(done)](HttpResponse r) {
    StoreCounters::add(eng->counters.puts);
    if (r.curl == CURLE_OK && ok_status_code(r.status)) {
      StoreCounters::add(eng->counters.put_bytes, n);
      return done(ok_status());
    }
    StoreCounters::add(eng->counters.errors);
    done(to_error(r, "PutObject", eng->opts.bucket, key));
  });
}

void S3Store::get(const std::string& key, Range range, GetCallback done) {
  if (Status k = check_key(key); !k.ok()) return done(std::move(k).error());
  S3Engine* eng = engine_.get();
  HttpRequest req;
  req.method = "GET";
  req.key = key;
  req.op = "GetObject";
  bool ranged = range.offset != 0 || range.length != Range::kToEnd;
  uint64_t want = range.length;
  if (ranged) {
    // A zero-length read still asks for one byte so a missing key is reported as missing.
    uint64_t len = range.length == 0 ? 1 : range.length;
    std::string r = "Range: bytes=" + std::to_string(range.offset) + "-";
    if (range.length != Range::kToEnd) r += std::to_string(range.offset + len - 1);
    req.headers.push_back(r);
  }
  eng->submit(
      std::move(req), [eng, key, ranged, range, want, done = std::move(done)](HttpResponse r) {
        StoreCounters::add(eng->counters.gets);
        if (r.curl == CURLE_OK && r.status == 416) {  // range starts past the end: clamp to empty
          return done(Buffer());
        }
        if (r.curl == CURLE_OK && (r.status == 200 || r.status == 206)) {
          Buffer b = r.body;
          if (r.status == 200 && ranged) b = b.slice(range.offset, want);  // server ignored Range
          if (want != Range::kToEnd && b.size() > want) b = b.slice(0, want);
          StoreCounters::add(eng->counters.get_bytes, b.size());
          return done(std::move(b));
        }
        StoreCounters::add(eng->counters.errors);
        done(to_error(r, "GetObject", eng->opts.bucket, key));
      });
}

void S3Store::remove(std::vector<std::string> keys, StatusCallback done) {
  S3Engine* eng = engine_.get();
  StoreCounters::add(eng->counters.deletes, keys.size());
  if (keys.empty()) return done(ok_status());
  for (const auto& k : keys) {
    if (Status c = check_key(k); !c.ok()) return done(std::move(c));
  }
  struct State {
    std::mutex mu;
    size_t pending = 0;
    Status first_error;
    StatusCallback done;
  };
  auto st = std::make_shared<State>();
  st->done = std::move(done);
  size_t batch = static_cast<size_t>(eng->opts.delete_batch);
  st->pending = (keys.size() + batch - 1) / batch;
  for (size_t i = 0; i < keys.size(); i += batch) {
    std::vector<std::string> part(keys.begin() + i,
                                  keys.begin() + std::min(keys.size(), i + batch));
    std::string xml = s3xml::build_delete_request(part);
    HttpRequest req;
    req.method = "POST";
    req.query = {{"delete", ""}};
    req.headers = {"Content-MD5: " + md5_base64(xml), "Content-Type: application/xml"};
    req.body = Buffer::copy(xml);
    req.op = "DeleteObjects";
    eng->submit(std::move(req), [eng, st](HttpResponse r) {
      Status s;
      if (r.curl == CURLE_OK && r.status == 200) {
        auto res = s3xml::parse_delete_result(r.body.view());
        if (!res.ok()) {
          s = std::move(res).error();
        } else {
          for (const auto& e : *res) {
            if (e.code == "NoSuchKey") continue;  // already gone is what we wanted
            s = Error::make(e.code == "AccessDenied" ? Errc::kIoError : Errc::kUnavailable,
                            "S3 DeleteObjects " + e.key + ": " + e.code + ": " + e.message,
                            e.code != "AccessDenied");
            break;
          }
        }
      } else {
        s = to_error(r, "DeleteObjects", eng->opts.bucket, "");
      }
      StatusCallback cb;
      Status result;
      {
        std::lock_guard lk(st->mu);
        if (!s.ok() && st->first_error.ok()) st->first_error = s;
        if (--st->pending == 0) {
          cb = std::move(st->done);
          result = st->first_error;
        }
      }
      if (!s.ok()) StoreCounters::add(eng->counters.errors);
      if (cb) cb(std::move(result));
    });
  }
}

namespace {
struct ListState : std::enable_shared_from_this<ListState> {
  S3Engine* eng;
  std::string prefix;
  std::vector<ObjectInfo> out;
  ListCallback done;

  void fetch(const std::string& token) {
    HttpRequest req;
    req.method = "GET";
    req.op = "ListObjectsV2";
    req.query = {{"list-type", "2"},
                 {"max-keys", std::to_string(eng->opts.list_page_size)},
                 {"prefix", prefix}};
    if (!token.empty()) req.query.push_back({"continuation-token", token});
    auto self = shared_from_this();
    eng->submit(std::move(req), [self](HttpResponse r) { self->on_page(std::move(r)); });
  }

  void on_page(HttpResponse r) {
    if (r.curl != CURLE_OK || r.status != 200) {
      StoreCounters::add(eng->counters.errors);
      return done(to_error(r, "ListObjectsV2", eng->opts.bucket, prefix));
    }
    auto page = s3xml::parse_list_objects_v2(r.body.view());
    if (!page.ok()) {
      StoreCounters::add(eng->counters.errors);
      return done(std::move(page).error());
    }
    for (auto& o : page->objects) out.push_back(std::move(o));
    if (page->truncated) return fetch(page->next_token);
    std::sort(out.begin(), out.end(),
              [](const ObjectInfo& a, const ObjectInfo& b) { return a.key < b.key; });
    done(std::move(out));
  }
};
}  // namespace

void S3Store::list(const std::string& prefix, ListCallback done) {
  StoreCounters::add(engine_->counters.lists);
  auto st = std::make_shared<ListState>();
  st->eng = engine_.get();
  st->prefix = prefix;
  st->done = std::move(done);
  st->fetch("");
}

// An S3 multipart upload: parts' ETags are remembered for CompleteMultipartUpload.
class S3Multipart final : public MultipartUpload {
 public:
  S3Multipart(S3Engine* eng, std::string key, std::string upload_id)
      : eng_(eng), key_(std::move(key)), upload_id_(std::move(upload_id)) {}

  void upload_part(int part_number, BufferChain data, StatusCallback done) override {
    if (part_number < 1 || part_number > 10000) {
      return done(Error::make(Errc::kInvalidArgument, "part numbers are 1..10000"));
    }
    HttpRequest req;
    req.method = "PUT";
    req.key = key_;
    req.query = {{"partNumber", std::to_string(part_number)}, {"uploadId", upload_id_}};
    req.body = data.flatten();
    req.op = "UploadPart";
    uint64_t n = req.body.size();
    eng_->submit(std::move(req), [this, part_number, n, done = std::move(done)](HttpResponse r) {
      if (r.curl == CURLE_OK && ok_status_code(r.status)) {
        auto it = r.headers.find("etag");
        if (it == r.headers.end() || it->second.empty()) {
          StoreCounters::add(eng_->counters.errors);
          return done(Error::make(Errc::kCorruption, "S3 UploadPart: response without ETag", true));
        }
        {
          std::lock_guard lk(mu_);
          etags_[part_number] = it->second;
        }
        StoreCounters::add(eng_->counters.put_bytes, n);
        return done(ok_status());
      }
      StoreCounters::add(eng_->counters.errors);
      done(to_error(r, "UploadPart", eng_->opts.bucket, key_));
    });
  }

  void complete(StatusCallback done) override {
    std::vector<std::pair<int, std::string>> parts;
    {
      std::lock_guard lk(mu_);
      parts.assign(etags_.begin(), etags_.end());
    }
    if (parts.empty()) {
      return done(
          Error::make(Errc::kInvalidArgument, "multipart upload of " + key_ + " has no parts"));
    }
    std::string xml = s3xml::build_complete_multipart(parts);
    HttpRequest req;
    req.method = "POST";
    req.key = key_;
    req.query = {{"uploadId", upload_id_}};
    req.headers = {"Content-Type: application/xml"};
    req.body = Buffer::copy(xml);
    req.op = "CompleteMultipartUpload";
    // S3 may answer 200 and put an <Error> in the body (e.g. InternalError) after it started
    // streaming whitespace to keep the connection alive: that is a failure to retry.
    auto error_in_200 = [](const HttpResponse& r) {
      return r.curl == CURLE_OK && r.status == 200 && s3xml::is_error_document(r.body.view());
    };
    eng_->submit(
        std::move(req),
        [this, done = std::move(done)](HttpResponse r) {
          StoreCounters::add(eng_->counters.puts);
          if (r.curl == CURLE_OK && r.status == 200) {
            if (auto e = s3xml::parse_error(r.body.view()); e.ok()) {
              StoreCounters::add(eng_->counters.errors);
              return done(Error::make(
                  Errc::kUnavailable,
                  "S3 CompleteMultipartUpload " + key_ + ": " + e->code + ": " + e->message, true));
            }
            return done(ok_status());
          }
          StoreCounters::add(eng_->counters.errors);
          done(to_error(r, "CompleteMultipartUpload", eng_->opts.bucket, key_));
        },
        error_in_200);
  }

  void abort(StatusCallback done) override {
    HttpRequest req;
    req.method = "DELETE";
    req.key = key_;
    req.query = {{"uploadId", upload_id_}};
    req.op = "AbortMultipartUpload";
    eng_->submit(std::move(req), [this, done = std::move(done)](HttpResponse r) {
      if (r.curl == CURLE_OK && (ok_status_code(r.status) || r.status == 404)) {
        return done(ok_status());
      }
      done(to_error(r, "AbortMultipartUpload", eng_->opts.bucket, key_));
    });
  }

 private:
  S3Engine* eng_;
  std::string key_;
  std::string upload_id_;
  std::mutex mu_;
  std::map<int, std::string> etags_;
};

void S3Store::create_multipart(const std::string& key, MultipartCallback done) {
  if (Status k = check_key(key); !k.ok()) return done(std::move(k).error());
  S3Engine* eng = engine_.get();
  HttpRequest req;
  req.method = "POST";
  req.key = key;
  req.query = {{"uploads", ""}};
  req.op = "CreateMultipartUpload";
  eng->submit(std::move(req), [eng, key, done = std::move(done)](HttpResponse r) {
    if (r.curl == CURLE_OK && r.status == 200) {
      auto id = s3xml::parse_initiate_multipart(r.body.view());
      if (!id.ok()) {
        StoreCounters::add(eng->counters.errors);
        return done(std::move(id).error());
      }
      return done(std::unique_ptr<MultipartUpload>(new S3Multipart(eng, key, *id)));
    }
    StoreCounters::add(eng->counters.errors);
    done(to_error(r, "CreateMultipartUpload", eng->opts.bucket, key));
  });
}

}  // namespace shale::objstore
