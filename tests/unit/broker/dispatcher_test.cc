// The request dispatcher with ApiVersions and Metadata: header versions, routing, the
// ApiVersions downgrade rule, rejection of bad requests, and the Metadata answers.
#include "broker/dispatcher.h"

#include <exception>

#include <gtest/gtest.h>
#include <asio/co_spawn.hpp>
#include <asio/io_context.hpp>

#include "base/endian.h"
#include "broker/api_versions.h"
#include "broker/metadata.h"
#include "protocol/errors.h"
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
    cluster_.cluster_id = "test-cluster-id";
    cluster_.controller_id = 1;
    BrokerInfo b;
    b.node_id = 1;
    b.endpoints.push_back({"PLAINTEXT", "broker.example", 9092});
    b.endpoints.push_back({"INTERNAL", "10.0.0.1", 9093});
    cluster_.brokers.push_back(b);
    register_api_versions(d_);
    register_metadata(d_, cluster_, topics_);
    conn_.listener = "PLAINTEXT";
    conn_.peer = "127.0.0.1:5555";
  }
  net::Response call(Buffer frame) { return run(d_.handle(conn_, std::move(frame))); }

  ClusterView cluster_;
  NoTopics topics_;
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

TEST_F(DispatcherTest, MetadataAnswersEveryVersion) {
  for (int16_t v = 0; v <= 12; ++v) {
    MetadataRequest req;
    MetadataRequest::MetadataRequestTopic t;
    t.name = "orders";
    req.topics = std::vector<MetadataRequest::MetadataRequestTopic>{t};
    req.allow_auto_topic_creation = v < 4;  // the field exists from v4
    int32_t corr = 0;
    auto resp = decode_response<MetadataResponse>(call(request(v, req, 1000 + v)), v, &corr);
    EXPECT_EQ(corr, 1000 + v);
    ASSERT_EQ(resp.brokers.size(), 1u) << "v" << v;
    EXPECT_EQ(resp.brokers[0].node_id, 1);
    EXPECT_EQ(resp.brokers[0].host, "broker.example");
    EXPECT_EQ(resp.brokers[0].port, 9092);
    if (v >= 1) {
      EXPECT_EQ(resp.controller_id, 1) << "v" << v;
    }
    if (v >= 2) {
      EXPECT_EQ(resp.cluster_id, "test-cluster-id") << "v" << v;
    }
    ASSERT_EQ(resp.topics.size(), 1u) << "v" << v;
    EXPECT_EQ(resp.topics[0].name, "orders");
    EXPECT_EQ(resp.topics[0].error_code, static_cast<int16_t>(ErrorCode::kUnknownTopicOrPartition));
  }
}

TEST_F(DispatcherTest, MetadataAllTopicsIsEmptyForNow) {
  MetadataRequest all;
  all.topics.reset();  // null = all topics (v1+)
  auto r1 = decode_response<MetadataResponse>(call(request(1, all)), 1);
  EXPECT_TRUE(r1.topics.empty());
  MetadataRequest v0all;  // v0: an empty list means all topics
  v0all.topics.emplace();
  auto r0 = decode_response<MetadataResponse>(call(request(0, v0all)), 0);
  EXPECT_TRUE(r0.topics.empty());
  EXPECT_EQ(r0.brokers.size(), 1u);
}

TEST_F(DispatcherTest, MetadataByTopicIdAnswersUnknownTopicId) {
  MetadataRequest req;
  MetadataRequest::MetadataRequestTopic t;
  t.name.reset();
  t.topic_id.bytes[15] = 7;
  req.topics = std::vector<MetadataRequest::MetadataRequestTopic>{t};
  auto resp = decode_response<MetadataResponse>(call(request(12, req)), 12);
  ASSERT_EQ(resp.topics.size(), 1u);
  EXPECT_EQ(resp.topics[0].error_code, static_cast<int16_t>(ErrorCode::kUnknownTopicId));
  EXPECT_EQ(resp.topics[0].topic_id, t.topic_id);
}

TEST_F(DispatcherTest, MetadataAdvertisesTheListenerTheClientUsed) {
  conn_.listener = "INTERNAL";
  MetadataRequest req;
  auto resp = decode_response<MetadataResponse>(call(request(9, req)), 9);
  ASSERT_EQ(resp.brokers.size(), 1u);
  EXPECT_EQ(resp.brokers[0].host, "10.0.0.1");
  EXPECT_EQ(resp.brokers[0].port, 9093);
}

class FakeTopics : public TopicSource {
 public:
  asio::awaitable<std::vector<Topic>> describe(const std::optional<std::vector<TopicQuery>>& q,
                                               bool allow_auto_create) override {
    last_auto_create = allow_auto_create;
    saw_all = !q.has_value();
    Topic t;
    t.name = "present";
    t.partitions.resize(2);
    t.partitions[1].partition_index = 1;
    co_return std::vector<Topic>{t};
  }
  bool last_auto_create = false;
  bool saw_all = false;
};

TEST(Metadata, TopicSourcePlugsIn) {
  ClusterView cluster;
  cluster.cluster_id = "c";
  cluster.brokers.push_back({0, std::nullopt, {{"PLAINTEXT", "h", 1}}});
  FakeTopics topics;
  MetadataRequest req;
  req.topics.reset();
  req.allow_auto_topic_creation = false;
  auto resp = run(answer_metadata(cluster, topics, "PLAINTEXT", 4, req));
  EXPECT_TRUE(topics.saw_all);
  EXPECT_FALSE(topics.last_auto_create);
  ASSERT_EQ(resp.topics.size(), 1u);
  EXPECT_EQ(resp.topics[0].partitions.size(), 2u);
  // Before v4 the request has no flag: auto-creation is implied.
  MetadataRequest old;
  old.topics.reset();
  run(answer_metadata(cluster, topics, "PLAINTEXT", 3, old));
  EXPECT_TRUE(topics.last_auto_create);
}

TEST(DispatcherRegistry, RegisteringAnApiAdvertisesIt) {
  Dispatcher d;
  register_api_versions(d);
  d.add<protocol::ProduceRequest, protocol::ProduceResponse>(
      3, 99,
      [](const RequestContext&, protocol::ProduceRequest& req)
          -> asio::awaitable<std::optional<protocol::ProduceResponse>> {
        if (req.acks == 0) co_return std::nullopt;  // acks=0: no response
        co_return protocol::ProduceResponse{};
      });
  auto ranges = d.supported();
  ASSERT_EQ(ranges.size(), 2u);
  EXPECT_EQ(ranges[0].key, ApiKey::kProduce);
  EXPECT_EQ(ranges[0].min_version, 3);
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
  // Below the registered minimum: closed.
  EXPECT_TRUE(run(d.handle(conn, request(2, p))).close);
}

}  // namespace
}  // namespace shale::broker
