// The request dispatcher with ApiVersions and one more API (a Metadata handler local to this
// test): header versions, routing, the ApiVersions downgrade rule, rejection of bad requests.
// The broker's own handlers behind the dispatcher are covered by router_test.cc.
#include "broker/dispatcher.h"

#include <exception>

#include <gtest/gtest.h>
#include <asio/co_spawn.hpp>
#include <asio/io_context.hpp>

#include "base/endian.h"
#include "broker/api_versions.h"
#include "protocol/errors.h"
#include "protocol/generated/metadata_request.h"
#include "protocol/generated/metadata_response.h"
#include "protocol/generated/produce_request.h"
#include "protocol/generated/produce_response.h"

namespace shale::broker {
namespace {

using protocol::ApiKey;
using protocol::ApiVersionsRequest;
using protocol::ApiVersionsResponse;
using protocol::ErrorCode;
using protocol::MetadataRequest;
using protocol::MetadataResponse;

template <typename T>
T run(asio::awaitable<T> a) {
  asio::io_context io;
  std::optional<T> out;
  std::exception_ptr err;
  asio::co_spawn(io, std::move(a), [&](std::exception_ptr e, T v) {
    err = e;
    if (!e) out = std::move(v);
  });
  io.run();
  if (err) std::rethrow_exception(err);
  return std::move(*out);
}

// A request frame without its size prefix (the server strips it before the dispatcher).
template <typename Req>
Buffer request(int16_t version, const Req& body, int32_t correlation_id = 42) {
  auto f =
      protocol::encode_request_frame(correlation_id, std::string("test-client"), version, body);
  EXPECT_TRUE(f.ok()) << f.error().message;
  return f->slice(4, f->size() - 4);
}

// Raw header bytes (v1: key, version, correlation id, client id) followed by `body`.
Buffer raw_request(int16_t key, int16_t version, int32_t correlation_id, const std::string& body,
                   bool flexible_header = false) {
  std::string s(8, '\0');
  auto* p = reinterpret_cast<uint8_t*>(s.data());
  be::store16(p, static_cast<uint16_t>(key));
  be::store16(p + 2, static_cast<uint16_t>(version));
  be::store32(p + 4, static_cast<uint32_t>(correlation_id));
  s += std::string("\x00\x01x", 3);  // client id "x" (int16 length, even in header v2)
  if (flexible_header) s += '\0';    // no tagged fields
  return Buffer::copy(s + body);
}

template <typename Resp>
Resp decode_response(const net::Response& r, int16_t version, int32_t* correlation_id = nullptr) {
  EXPECT_FALSE(r.close);
  EXPECT_TRUE(r.frame.has_value());
  Buffer b = r.frame->flatten();
  protocol::Reader rd(b);
  protocol::ResponseHeader h;
  EXPECT_TRUE(protocol::decode_response_header(rd, Resp::kApiKey, version, h).ok());
  if (correlation_id != nullptr) *correlation_id = h.correlation_id;
  Resp resp;
  Status st = resp.decode(rd, version);
  EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().message);
  EXPECT_EQ(rd.remaining(), 0u) << "trailing bytes in response";
  return resp;
}

class DispatcherTest : public ::testing::Test {
 protected:
  DispatcherTest() {
    register_api_versions(d_);
    // Answers with the request's topic count as the controller id, so tests can see that the
    // body was decoded at the right version.
    d_.add<MetadataRequest, MetadataResponse>(
        0, 12,
        [](const RequestContext&,
           MetadataRequest& req) -> asio::awaitable<std::optional<MetadataResponse>> {
          MetadataResponse resp;
          resp.controller_id = req.topics ? static_cast<int32_t>(req.topics->size()) : -1;
          co_return resp;
        });
    conn_.listener = "PLAINTEXT";
    conn_.peer = "127.0.0.1:5555";
  }
  net::Response call(Buffer frame) { return run(d_.handle(conn_, std::move(frame))); }

  Dispatcher d_;
  net::ConnectionInfo conn_;
};

TEST_F(DispatcherTest, ApiVersionsListsExactlyTheRegisteredApis) {
  for (int16_t v = 0; v <= 4; ++v) {
    ApiVersionsRequest req;
    req.client_software_name = "librdkafka";
    req.client_software_version = "2.0.2";
    int32_t corr = 0;
    // ApiVersions responses always use header v0 (KIP-511), whatever the request version.
    auto resp = decode_response<ApiVersionsResponse>(call(request(v, req, 7)), v, &corr);
    EXPECT_EQ(corr, 7);
    EXPECT_EQ(resp.error_code, 0) << "v" << v;
    ASSERT_EQ(resp.api_keys.size(), 2u) << "v" << v;
    EXPECT_EQ(resp.api_keys[0].api_key, static_cast<int16_t>(ApiKey::kMetadata));
    EXPECT_EQ(resp.api_keys[0].min_version, 0);
    EXPECT_EQ(resp.api_keys[0].max_version, 12);
    EXPECT_EQ(resp.api_keys[1].api_key, static_cast<int16_t>(ApiKey::kApiVersions));
    EXPECT_EQ(resp.api_keys[1].min_version, 0);
    EXPECT_EQ(resp.api_keys[1].max_version, 4);
  }
}

TEST_F(DispatcherTest, UnsupportedApiVersionsVersionGetsV0AnswerWithRanges) {
  // A future client: ApiVersions v7 with a flexible (v2) request header and a body we cannot
  // know.
  auto r = call(raw_request(18, 7, 99, "\x05garbage", true));
  int32_t corr = 0;
  auto resp = decode_response<ApiVersionsResponse>(r, 0, &corr);
  EXPECT_EQ(corr, 99);
  EXPECT_EQ(resp.error_code, static_cast<int16_t>(ErrorCode::kUnsupportedVersion));
  EXPECT_EQ(resp.api_keys.size(), 2u);
}

TEST_F(DispatcherTest, InvalidClientSoftwareNameIsInvalidRequest) {
  ApiVersionsRequest req;
  req.client_software_name = "bad name!";
  req.client_software_version = "1.0";
  auto resp = decode_response<ApiVersionsResponse>(call(request(3, req)), 3);
  EXPECT_EQ(resp.error_code, static_cast<int16_t>(ErrorCode::kInvalidRequest));
  EXPECT_TRUE(valid_client_software_field("apache-kafka-java"));
  EXPECT_TRUE(valid_client_software_field("3.9.0"));
  EXPECT_FALSE(valid_client_software_field("-x"));
  EXPECT_FALSE(valid_client_software_field(""));
}

TEST_F(DispatcherTest, UnknownApiKeyClosesTheConnection) {
  auto r = call(raw_request(999, 0, 1, ""));
  EXPECT_TRUE(r.close);
  EXPECT_FALSE(r.frame.has_value());
  EXPECT_TRUE(call(raw_request(-1, 0, 1, "")).close);
}

TEST_F(DispatcherTest, ApiWithoutHandlerIsNotAdvertisedAndClosesTheConnection) {
  EXPECT_FALSE(d_.handles(ApiKey::kProduce));
  protocol::ProduceRequest p;
  p.acks = 1;
  auto r = call(request(9, p));
  EXPECT_TRUE(r.close);
}

TEST_F(DispatcherTest, UnsupportedVersionOfOtherApisClosesTheConnection) {
  EXPECT_TRUE(call(raw_request(3, 13, 1, "")).close);
  EXPECT_TRUE(call(raw_request(3, -1, 1, "")).close);
}

TEST_F(DispatcherTest, MalformedFramesCloseTheConnection) {
  EXPECT_TRUE(call(Buffer::copy("\x00\x03", 2)).close);                           // < 4 bytes
  EXPECT_TRUE(call(Buffer::copy(std::string("\x00\x03\x00\x01\x00", 5))).close);  // header cut
  // Metadata v1: the topic array says 5 entries but the body ends.
  EXPECT_TRUE(call(raw_request(3, 1, 1, std::string("\x00\x00\x00\x05", 4))).close);
  // Client id length longer than the frame.
  EXPECT_TRUE(
      call(Buffer::copy(std::string("\x00\x03\x00\x01\x00\x00\x00\x01\x7f\xff", 10))).close);
}

TEST_F(DispatcherTest, RequestsAreDecodedAtTheirVersion) {
  for (int16_t v = 1; v <= 12; ++v) {
    MetadataRequest req;
    req.topics = std::vector<MetadataRequest::MetadataRequestTopic>(3);
    for (auto& t : *req.topics) t.name = "orders";
    req.allow_auto_topic_creation = v < 4;  // the field exists from v4
    int32_t corr = 0;
    auto resp = decode_response<MetadataResponse>(call(request(v, req, 1000 + v)), v, &corr);
    EXPECT_EQ(corr, 1000 + v);
    EXPECT_EQ(resp.controller_id, 3) << "v" << v;
  }
}

TEST(DispatcherRegistry, RegisteringAnApiAdvertisesIt) {
  Dispatcher d;
  register_api_versions(d);
  d.add<protocol::ProduceRequest, protocol::ProduceResponse>(
      5, 99,
      [](const RequestContext&, protocol::ProduceRequest& req)
          -> asio::awaitable<std::optional<protocol::ProduceResponse>> {
        if (req.acks == 0) co_return std::nullopt;  // acks=0: no response
        co_return protocol::ProduceResponse{};
      });
  auto ranges = d.supported();
  ASSERT_EQ(ranges.size(), 2u);
  EXPECT_EQ(ranges[0].key, ApiKey::kProduce);
  EXPECT_EQ(ranges[0].min_version, 5);
  // Clamped to the schema's highest stable version.
  const protocol::ApiInfo* info = protocol::find_api(ApiKey::kProduce);
  EXPECT_EQ(ranges[0].max_version, info->max_stable_version());

  net::ConnectionInfo conn;
  protocol::ProduceRequest p;
  p.acks = 0;
  auto none = run(d.handle(conn, request(9, p)));
  EXPECT_FALSE(none.close);
  EXPECT_FALSE(none.frame.has_value());
  p.acks = -1;
  auto some = run(d.handle(conn, request(9, p)));
  EXPECT_TRUE(some.frame.has_value());
  // Below the registered minimum (v4: the schema has it, the handler does not): closed.
  EXPECT_TRUE(run(d.handle(conn, request(4, p))).close);
}

}  // namespace
}  // namespace shale::broker
