#include <gtest/gtest.h>

#include <cstdlib>

#include "fake_http_server.h"
#include "objstore/bucket_uri.h"
#include "objstore/factory.h"
#include "test_util.h"

namespace shale::objstore {
namespace {

TEST(BucketUri, ParsesAutoMqS3Uri) {
  auto u = parse_bucket_uri(
      "0@s3://bucket?region=us-east-1&endpoint=http://127.0.0.1:8333&pathStyle=true");
  ASSERT_TRUE(u.ok()) << u.error().to_string();
  EXPECT_EQ(u->id, 0);
  EXPECT_EQ(u->scheme, Scheme::kS3);
  EXPECT_EQ(u->bucket, "bucket");
  EXPECT_EQ(u->region, "us-east-1");
  EXPECT_EQ(u->endpoint, "http://127.0.0.1:8333");
  EXPECT_TRUE(u->path_style);
  EXPECT_TRUE(u->access_key.empty());
}

TEST(BucketUri, ParsesCredentialsAndKeepsUnknownParams) {
  auto u = parse_bucket_uri(
      "3@s3://b-1?region=eu-west-1&accessKey=AK&secretKey=a%2Fb%2Bc&authType=static");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->id, 3);
  EXPECT_EQ(u->access_key, "AK");
  EXPECT_EQ(u->secret_key, "a/b+c");
  EXPECT_FALSE(u->path_style);
  EXPECT_EQ(u->params.at("authType"), "static");
  // The secret never appears in log output.
  EXPECT_EQ(u->to_string().find("a/b+c"), std::string::npos);
  EXPECT_NE(u->to_string().find("accessKey=AK"), std::string::npos);
}

TEST(BucketUri, ParsesFileAndMemory) {
  auto f = parse_bucket_uri("0@file:///data/objects/");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->scheme, Scheme::kFile);
  EXPECT_EQ(f->path, "/data/objects");
  auto m = parse_bucket_uri("memory://");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->scheme, Scheme::kMemory);
  EXPECT_TRUE(parse_bucket_uri("-2@mem://").ok());
}

TEST(BucketUri, RejectsMalformed) {
  for (const char* bad :
       {"", "s3:/bucket", "ftp://x", "x@s3://b", "99999@s3://b", "s3://", "s3://bad/bucket",
        "s3://b?pathStyle=maybe", "s3://b?endpoint=host:1", "s3://b?accessKey=only",
        "s3://b?region=a&region=b", "file://rel/dir", "s3://b?x=%zz", "s3://b?x=%2"}) {
    auto u = parse_bucket_uri(bad);
    EXPECT_FALSE(u.ok()) << bad;
    if (!u.ok()) {
      EXPECT_EQ(u.error().code, Errc::kInvalidArgument) << bad;
      EXPECT_NE(u.error().message.find("malformed bucket URI"), std::string::npos);
    }
  }
}

TEST(BucketUri, ParsesLists) {
  auto l = parse_bucket_list("0@s3://a?region=r&endpoint=http://h:1, 1@file:///x");
  ASSERT_TRUE(l.ok()) << l.error().to_string();
  ASSERT_EQ(l->size(), 2u);
  EXPECT_EQ((*l)[0].bucket, "a");
  EXPECT_EQ((*l)[0].endpoint, "http://h:1");
  EXPECT_EQ((*l)[1].path, "/x");
  EXPECT_FALSE(parse_bucket_list("0@s3://a,0@s3://b").ok());  // duplicate id
  EXPECT_FALSE(parse_bucket_list("0@s3://a,,1@s3://b").ok());
}

TEST(Factory, OpensEachScheme) {
  auto m = open_object_store("memory://");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ((*m)->describe(), "memory");

  testing_util::TempDir tmp;
  std::string dir = tmp.path() + "/objects";  // created by the store
  auto f = open_object_store("0@file://" + dir);
  ASSERT_TRUE(f.ok()) << f.error().to_string();
  EXPECT_EQ((*f)->describe(), "file://" + dir);

  OpenOptions no_env;
  no_env.use_env = false;
  auto s = open_object_store("0@s3://b?region=r&endpoint=http://127.0.0.1:1", no_env);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("no S3 credentials"), std::string::npos);

  auto s2 = open_object_store(
      "0@s3://b?region=r&endpoint=http://127.0.0.1:1&pathStyle=true&accessKey=a&secretKey=b");
  ASSERT_TRUE(s2.ok()) << s2.error().to_string();
  EXPECT_NE((*s2)->describe().find("http://127.0.0.1:1/b"), std::string::npos);

  auto bad = open_object_store("nope://x");
  EXPECT_FALSE(bad.ok());
}

TEST(Factory, TakesCredentialsFromEnvironment) {
  ::setenv("AWS_ACCESS_KEY_ID", "envak", 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", "envsk", 1);
  auto s = open_object_store("0@s3://b?endpoint=http://127.0.0.1:1");
  ::unsetenv("AWS_ACCESS_KEY_ID");
  ::unsetenv("AWS_SECRET_ACCESS_KEY");
  ASSERT_TRUE(s.ok()) << s.error().to_string();
  // Virtual-host addressing is the default.
  EXPECT_NE((*s)->describe().find("http://b.127.0.0.1:1/"), std::string::npos);
}

TEST(Factory, CredentialPrecedenceUriThenOptionsThenEnvironment) {
  // The URI's keys win; a URI without keys takes the options' set; the environment comes
  // last. Checked through the request a store sends to a server that records it.
  ::setenv("AWS_ACCESS_KEY_ID", "ENVAK", 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", "envsk", 1);
  ::setenv("AWS_REGION", "env-region", 1);
  testing_util::FakeHttpServer srv;
  srv.set_handler([](const auto&) {
    testing_util::FakeResponse r;
    r.body = "x";
    return r;
  });
  auto credential_of = [&](const std::string& uri, const OpenOptions& o) {
    auto s = open_object_store(uri, o);
    EXPECT_TRUE(s.ok()) << s.error().to_string();
    if (!s.ok()) return std::string();
    EXPECT_TRUE(get_sync(**s, "k").ok());
    std::string auth = srv.requests().back().headers["authorization"];
    size_t p = auth.find("Credential=");
    return auth.substr(p + 11, auth.find(',', p) - p - 11);
  };
  std::string base = "0@s3://b?pathStyle=true&endpoint=" + srv.endpoint();
  OpenOptions opts;
  opts.access_key = "OPTAK";
  opts.secret_key = "optsk";
  opts.region = "opt-region";
  std::string uri_cred = credential_of(base + "&accessKey=URIAK&secretKey=urisk&region=r1", opts);
  std::string opt_cred = credential_of(base, opts);
  std::string env_cred = credential_of(base, OpenOptions{});
  ::unsetenv("AWS_ACCESS_KEY_ID");
  ::unsetenv("AWS_SECRET_ACCESS_KEY");
  ::unsetenv("AWS_REGION");
  EXPECT_EQ(uri_cred.rfind("URIAK/", 0), 0u) << uri_cred;
  EXPECT_NE(uri_cred.find("/r1/s3/aws4_request"), std::string::npos) << uri_cred;
  EXPECT_EQ(opt_cred.rfind("OPTAK/", 0), 0u) << opt_cred;
  EXPECT_NE(opt_cred.find("/opt-region/s3/"), std::string::npos) << opt_cred;
  EXPECT_EQ(env_cred.rfind("ENVAK/", 0), 0u) << env_cred;
  EXPECT_NE(env_cred.find("/env-region/s3/"), std::string::npos) << env_cred;
}

}  // namespace
}  // namespace shale::objstore
