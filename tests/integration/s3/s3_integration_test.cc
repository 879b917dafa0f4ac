// The S3 backend against a real S3-compatible server that checks signatures: a wrong secret is
// refused, then put/get/range/list (past 1000 keys, so continuation tokens are used)/delete/
// multipart and the error paths (missing key, missing bucket) run for real. The storage
// engine's own tests against the same server are in s3_engine_test.cc.
// The server is scripts/s3-test-server (moto), started here on 127.0.0.1 and a free port and
// stopped at the end; SHALE_S3_ENDPOINT etc. point the test at another server instead.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

#include "objstore/factory.h"
#include "objstore/s3_store.h"
#include "s3_server.h"

extern char** environ;

#define ASSERT_OK(expr)                             \
  do {                                              \
    auto _r = (expr);                               \
    ASSERT_TRUE(_r.ok()) << _r.error().to_string(); \
  } while (0)

namespace shale::objstore {
ServerInfo g_info;

namespace {

pid_t g_server_pid = -1;

std::string json_field(const std::string& json, const std::string& name) {
  std::string pat = "\"" + name + "\": \"";
  size_t p = json.find(pat);
  if (p == std::string::npos) return "";
  p += pat.size();
  return json.substr(p, json.find('"', p) - p);
}

class S3ServerEnv : public ::testing::Environment {
 public:
  void SetUp() override {
    if (const char* ep = std::getenv("SHALE_S3_ENDPOINT")) {
      auto env = [](const char* n, const char* d) {
        const char* v = std::getenv(n);
        return std::string(v ? v : d);
      };
      g_info = {ep, env("SHALE_S3_BUCKET", "shale-test"), env("SHALE_S3_REGION", "us-east-1"),
                env("SHALE_S3_ACCESS_KEY", ""), env("SHALE_S3_SECRET_KEY", "")};
      return;
    }
    std::string script = std::string(SHALE_SOURCE_DIR) + "/scripts/s3-test-server";
    info_path_ = std::filesystem::temp_directory_path().string() + "/shale-s3-info-" +
                 std::to_string(::getpid()) + ".json";
    std::filesystem::remove(info_path_);
    std::vector<std::string> args = {script, "--info", info_path_};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    // Its own process group, so SIGTERM reaches the server even if the wrapper forked.
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
    int rc = posix_spawn(&g_server_pid, script.c_str(), nullptr, &attr, argv.data(), environ);
    posix_spawnattr_destroy(&attr);
    ASSERT_EQ(rc, 0) << "cannot start " << script;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (!std::filesystem::exists(info_path_)) {
      int status = 0;
      if (waitpid(g_server_pid, &status, WNOHANG) == g_server_pid) {
        g_server_pid = -1;
        FAIL() << "S3 test server exited early (is moto installed? run scripts/setup --test)";
      }
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "S3 test server did not start";
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    std::ifstream f(info_path_);
    std::stringstream ss;
    ss << f.rdbuf();
    std::string json = ss.str();
    g_info = {json_field(json, "endpoint"), json_field(json, "bucket"), json_field(json, "region"),
              json_field(json, "access_key"), json_field(json, "secret_key")};
    ASSERT_FALSE(g_info.endpoint.empty()) << json;
  }
  void TearDown() override {
    if (g_server_pid > 0) {
      ::kill(-g_server_pid, SIGTERM);
      int status = 0;
      waitpid(g_server_pid, &status, 0);
    }
    if (!info_path_.empty()) std::filesystem::remove(info_path_);
  }

 private:
  std::string info_path_;
};

}  // namespace

std::unique_ptr<ObjectStore> open_store(const std::string& secret, const std::string& bucket,
                                        int page_size, bool path_style, std::string endpoint) {
  if (endpoint.empty()) endpoint = g_info.endpoint;
  std::string uri = "0@s3://" + bucket + "?region=" + g_info.region + "&endpoint=" + endpoint +
                    "&pathStyle=" + (path_style ? "true" : "false") +
                    "&accessKey=" + g_info.access_key +
                    "&secretKey=" + aws_uri_encode(secret, false);
  OpenOptions o;
  o.s3.max_concurrency = 16;
  o.s3.list_page_size = page_size;
  o.s3.retry.max_attempts = 4;
  auto s = open_object_store(uri, o);
  EXPECT_TRUE(s.ok()) << s.error().to_string();
  return std::move(s).value();
}

namespace {

BufferChain chain(const std::string& s) {
  BufferChain c;
  c.push_back(Buffer::copy(s));
  return c;
}

std::string pattern(size_t n, int seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 31 + seed) & 0xff);
  return s;
}

TEST(S3Integration, WrongSecretIsRejected) {
  auto s = open_store(g_info.secret_key + "x", g_info.bucket);
  Status st = put_sync(*s, "denied", chain("x"));
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, Errc::kIoError);
  EXPECT_FALSE(st.error().retryable);
  EXPECT_NE(st.error().message.find("access denied: SignatureDoesNotMatch"), std::string::npos)
      << st.error().message;
  auto g = get_sync(*s, "denied");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().message.find("access denied"), std::string::npos);
  EXPECT_EQ(s->stats().retries, 0u);  // 403 is final
}

TEST(S3Integration, PutGetRangeOverwrite) {
  auto s = open_store(g_info.secret_key, g_info.bucket);
  std::string data = pattern(100000, 1);
  const std::string key = "a2000000/_kafka_cluster/42";
  ASSERT_OK(put_sync(*s, key, chain(data)));
  auto all = get_sync(*s, key);
  ASSERT_TRUE(all.ok()) << all.error().to_string();
  EXPECT_EQ(all->view(), data);
  EXPECT_EQ(get_sync(*s, key, {1000, 500})->view(), data.substr(1000, 500));
  EXPECT_EQ(get_sync(*s, key, {99990, Range::kToEnd})->view(), data.substr(99990));
  EXPECT_EQ(get_sync(*s, key, {99990, 100})->view(), data.substr(99990));
  auto past = get_sync(*s, key, {200000, 10});
  ASSERT_TRUE(past.ok()) << past.error().to_string();
  EXPECT_TRUE(past->empty());
  // Keys that need encoding, an empty object, and an overwrite.
  const std::string odd = "odd key/with+plus&amp=eq~tilde%pct";
  ASSERT_OK(put_sync(*s, odd, chain("odd")));
  EXPECT_EQ(get_sync(*s, odd)->view(), "odd");
  ASSERT_OK(put_sync(*s, "empty", BufferChain()));
  auto empty = get_sync(*s, "empty");
  ASSERT_TRUE(empty.ok()) << empty.error().to_string();
  EXPECT_TRUE(empty->empty());
  ASSERT_OK(put_sync(*s, key, chain("v2")));
  EXPECT_EQ(get_sync(*s, key)->view(), "v2");
  StoreStats st = s->stats();
  EXPECT_GE(st.puts, 4u);
  EXPECT_GE(st.get_bytes, data.size());
  ASSERT_OK(remove_sync(*s, {key, odd, "empty"}));
}

TEST(S3Integration, ListPastOneThousandKeysAndBatchDelete) {
  auto s = open_store(g_info.secret_key, g_info.bucket);
  constexpr int kKeys = 1100;
  std::vector<std::promise<Status>> ps(kKeys);
  for (int i = 0; i < kKeys; ++i) {
    char key[64];
    std::snprintf(key, sizeof(key), "many/%05d", i);
    s->put(key, chain(std::to_string(i)), [&ps, i](Status st) { ps[i].set_value(std::move(st)); });
  }
  std::vector<Status> results;  // wait for every callback before any assertion can return
  for (auto& p : ps) results.push_back(p.get_future().get());
  for (auto& r : results) ASSERT_OK(r);
  ASSERT_OK(put_sync(*s, "manyother", chain("x")));

  auto l = list_sync(*s, "many/");  // default page size: 1000, then a continuation
  ASSERT_TRUE(l.ok()) << l.error().to_string();
  ASSERT_EQ(l->size(), static_cast<size_t>(kKeys));
  EXPECT_EQ((*l)[0].key, "many/00000");
  EXPECT_EQ((*l)[kKeys - 1].key, "many/01099");
  EXPECT_EQ((*l)[10].size, 2u);
  EXPECT_GT((*l)[10].mtime_ms, 0);

  auto small = open_store(g_info.secret_key, g_info.bucket, 7);  // many small pages
  auto l2 = list_sync(*small, "many/0000");
  ASSERT_TRUE(l2.ok()) << l2.error().to_string();
  EXPECT_EQ(l2->size(), 10u);

  std::vector<std::string> keys;
  for (auto& o : *l) keys.push_back(o.key);
  keys.push_back("never/existed");
  ASSERT_OK(remove_sync(*s, keys));  // two DeleteObjects batches
  auto after = list_sync(*s, "many");
  ASSERT_TRUE(after.ok());
  ASSERT_EQ(after->size(), 1u);
  EXPECT_EQ((*after)[0].key, "manyother");
  ASSERT_OK(remove_sync(*s, {"manyother"}));
}

Result<std::unique_ptr<MultipartUpload>> create_mpu(ObjectStore& s, const std::string& key) {
  std::promise<Result<std::unique_ptr<MultipartUpload>>> p;
  s.create_multipart(key, [&p](auto r) { p.set_value(std::move(r)); });
  return p.get_future().get();
}
Status wait_status(std::function<void(StatusCallback)> f) {
  std::promise<Status> p;
  f([&p](Status s) { p.set_value(std::move(s)); });
  return p.get_future().get();
}

TEST(S3Integration, MultipartUpload) {
  auto s = open_store(g_info.secret_key, g_info.bucket);
  const size_t kPart = 5u << 20;  // S3's minimum for all but the last part
  std::string p1 = pattern(kPart, 1), p2 = pattern(kPart, 2), p3 = pattern(1000, 3);
  auto up = create_mpu(*s, "mpu/object");
  ASSERT_TRUE(up.ok()) << up.error().to_string();
  MultipartUpload& u = **up;
  // Parts uploaded concurrently and out of order.
  std::promise<Status> a, b, c;
  u.upload_part(3, chain(p3), [&](Status st) { c.set_value(st); });
  u.upload_part(2, chain(p2), [&](Status st) { b.set_value(st); });
  u.upload_part(1, chain(p1), [&](Status st) { a.set_value(st); });
  ASSERT_TRUE(a.get_future().get().ok());
  ASSERT_TRUE(b.get_future().get().ok());
  ASSERT_TRUE(c.get_future().get().ok());
  EXPECT_EQ(get_sync(*s, "mpu/object").error().code, Errc::kNotFound);  // not visible yet
  Status done = wait_status([&](StatusCallback cb) { u.complete(std::move(cb)); });
  ASSERT_TRUE(done.ok()) << done.error().to_string();
  auto all = get_sync(*s, "mpu/object");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 2 * kPart + 1000);
  EXPECT_TRUE(all->view() == p1 + p2 + p3);
  // A range across the part boundary.
  EXPECT_EQ(get_sync(*s, "mpu/object", {kPart - 10, 20})->view(),
            p1.substr(kPart - 10) + p2.substr(0, 10));

  auto up2 = create_mpu(*s, "mpu/aborted");
  ASSERT_TRUE(up2.ok());
  ASSERT_TRUE(wait_status([&](StatusCallback cb) {
                (*up2)->upload_part(1, chain("tiny"), std::move(cb));
              }).ok());
  ASSERT_TRUE(wait_status([&](StatusCallback cb) { (*up2)->abort(std::move(cb)); }).ok());
  EXPECT_EQ(get_sync(*s, "mpu/aborted").error().code, Errc::kNotFound);
  ASSERT_OK(remove_sync(*s, {"mpu/object"}));
}

TEST(S3Integration, UnsignedPayloadIsAccepted) {
  std::string uri = "0@s3://" + g_info.bucket + "?region=" + g_info.region +
                    "&endpoint=" + g_info.endpoint +
                    "&pathStyle=true&accessKey=" + g_info.access_key +
                    "&secretKey=" + aws_uri_encode(g_info.secret_key, false);
  OpenOptions o;
  o.s3.payload_signing = S3Options::PayloadSigning::kUnsigned;
  auto s = open_object_store(uri, o);
  ASSERT_TRUE(s.ok());
  ASSERT_OK(put_sync(**s, "unsigned", chain("u")));
  EXPECT_EQ(get_sync(**s, "unsigned")->view(), "u");
  ASSERT_OK(remove_sync(**s, {"unsigned"}));
}

TEST(S3Integration, VirtualHostAddressing) {
  // libcurl resolves *.localhost to the loopback address itself (RFC 6761), so
  // http://<bucket>.localhost:<port>/ reaches the test server without any DNS set-up.
  std::string ep = g_info.endpoint;
  size_t host = ep.find("127.0.0.1");
  if (host == std::string::npos) GTEST_SKIP() << "endpoint is not 127.0.0.1: " << ep;
  ep.replace(host, 9, "localhost");
  auto s = open_store(g_info.secret_key, g_info.bucket, 1000, false, ep);
  ASSERT_OK(put_sync(*s, "vhost/key", chain("virtual")));
  EXPECT_EQ(get_sync(*s, "vhost/key")->view(), "virtual");
  auto l = list_sync(*s, "vhost/");
  ASSERT_TRUE(l.ok()) << l.error().to_string();
  ASSERT_EQ(l->size(), 1u);
  // The same object through path-style addressing.
  auto p = open_store(g_info.secret_key, g_info.bucket);
  EXPECT_EQ(get_sync(*p, "vhost/key")->view(), "virtual");
  ASSERT_OK(remove_sync(*s, {"vhost/key"}));
}

TEST(S3Integration, MissingKeyAndMissingBucket) {
  auto s = open_store(g_info.secret_key, g_info.bucket);
  auto g = get_sync(*s, "no/such/key");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().code, Errc::kNotFound);
  auto r = get_sync(*s, "no/such/key", {5, 10});
  EXPECT_EQ(r.error().code, Errc::kNotFound);

  auto nb = open_store(g_info.secret_key, "no-such-bucket-shale");
  auto g2 = get_sync(*nb, "k");
  ASSERT_FALSE(g2.ok());
  EXPECT_EQ(g2.error().code, Errc::kNotFound);
  EXPECT_NE(g2.error().message.find("bucket no-such-bucket-shale does not exist"),
            std::string::npos)
      << g2.error().message;
  Status p = put_sync(*nb, "k", chain("x"));
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().code, Errc::kNotFound);
  auto l = list_sync(*nb, "");
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.error().code, Errc::kNotFound);
}

}  // namespace
}  // namespace shale::objstore

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new shale::objstore::S3ServerEnv);
  return RUN_ALL_TESTS();
}
