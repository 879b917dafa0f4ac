// Dispatcher + register_broker_handlers: every routed API answers every version it advertises
// (request frames encoded as a client would, responses decoded at the same version), ApiVersions
// lists exactly the routed APIs, and unsupported or malformed requests close the connection.
#include <map>
#include <utility>

#include "broker/api_versions.h"
#include "broker/broker_handlers.h"
#include "broker/dispatcher.h"
#include "broker_test_util.h"
#include "protocol/frame.h"
#include "protocol/generated/api_versions_request.h"
#include "protocol/generated/api_versions_response.h"

namespace shale::broker::testing {
namespace {

using protocol::ApiKey;

class RouterTest : public BrokerTest {
 protected:
  // The dispatcher as `shale serve` sets it up (ApiVersions + the broker's handlers).
  Dispatcher& dispatcher() {
    if (!dispatcher_) {
      dispatcher_ = std::make_unique<Dispatcher>();
      register_api_versions(*dispatcher_);
      register_broker_handlers(*dispatcher_, *broker_);
    }
    return *dispatcher_;
  }
  std::unique_ptr<Dispatcher> dispatcher_;

  // Sends `req` at `version`; returns the decoded response, or nullopt when the request cannot
  // be expressed at that version (the test then skips it).
  template <typename Req, typename Resp>
  std::optional<Resp> call(const Req& req, int16_t version) {
    auto frame = protocol::encode_request_frame(42, std::string("router-test"), version, req);
    if (!frame.ok()) return std::nullopt;
    Dispatcher& router = dispatcher();
    net::ConnectionInfo conn{1, 0, "PLAINTEXT", "127.0.0.1:1"};
    net::Response r = run(router.handle(conn, frame->slice(4, frame->size() - 4)));
    EXPECT_FALSE(r.close) << protocol::api_name(Req::kApiKey) << " v" << version;
    EXPECT_TRUE(r.frame.has_value()) << protocol::api_name(Req::kApiKey) << " v" << version;
    if (!r.frame) return Resp{};
    protocol::Reader rd(r.frame->flatten());
    protocol::ResponseHeader h;
    EXPECT_TRUE(protocol::decode_response_header(rd, Resp::kApiKey, version, h).ok());
    EXPECT_EQ(h.correlation_id, 42);
    Resp resp;
    auto st = resp.decode(rd, version);
    EXPECT_TRUE(st.ok()) << protocol::api_name(Req::kApiKey) << " v" << version << ": "
                         << (st.ok() ? "" : st.error().to_string());
    return resp;
  }

  template <typename Req, typename Resp, typename Make>
  int every_version(Make make) {
    const ApiRange* api = nullptr;
    const std::vector<ApiRange> apis = dispatcher().supported();
    for (const auto& a : apis) {
      if (a.key == Req::kApiKey) api = &a;
    }
    EXPECT_NE(api, nullptr);
    int answered = 0;
    for (int16_t v = api->min_version; v <= api->max_version; ++v) {
      Req req = make(v);
      if (call<Req, Resp>(req, v)) ++answered;
    }
    return answered;
  }
};

TEST_F(RouterTest, EveryRoutedApiAnswersEveryAdvertisedVersion) {
  auto id = create_topic("t", 1).topics.at(0).topic_id;
  create_topic("cp", 1);
  produce("t", 0, batch(2));

  EXPECT_GT((every_version<protocol::ProduceRequest, protocol::ProduceResponse>([](int16_t) {
              protocol::ProduceRequest r;
              r.acks = -1;
              r.timeout_ms = 1000;
              r.topic_data.push_back({"t", {}, {{0, batch(1)}}});
              return r;
            })),
            0);
  EXPECT_GT((every_version<protocol::FetchRequest, protocol::FetchResponse>([&](int16_t) {
              protocol::FetchRequest r;
              r.max_bytes = 1 << 20;
              auto& t = r.topics.emplace_back();
              t.topic = "t";
              t.topic_id = id;
              t.partitions.push_back({0, -1, 0, -1, -1, 1 << 20, {}});
              return r;
            })),
            0);
  EXPECT_GT(
      (every_version<protocol::ListOffsetsRequest, protocol::ListOffsetsResponse>([](int16_t) {
        protocol::ListOffsetsRequest r;
        r.replica_id = -1;
        auto& t = r.topics.emplace_back();
        t.name = "t";
        auto& p = t.partitions.emplace_back();
        p.timestamp = -1;
        return r;
      })),
      0);
  EXPECT_GT((every_version<protocol::MetadataRequest, protocol::MetadataResponse>([](int16_t) {
              protocol::MetadataRequest r;
              r.topics = std::vector<protocol::MetadataRequest::MetadataRequestTopic>{};
              r.topics->push_back({{}, std::string("t")});
              return r;
            })),
            0);
  EXPECT_GT(
      (every_version<protocol::CreateTopicsRequest, protocol::CreateTopicsResponse>([](int16_t v) {
        protocol::CreateTopicsRequest r;
        r.topics.push_back({"new" + std::to_string(v), 1, 1, {}, {}});
        return r;
      })),
      0);
  EXPECT_GT(
      (every_version<protocol::DeleteTopicsRequest, protocol::DeleteTopicsResponse>([](int16_t v) {
        protocol::DeleteTopicsRequest r;
        if (v >= 6) {
          r.topics.push_back({std::string("new" + std::to_string(v)), {}});
        } else {
          r.topic_names.push_back("new" + std::to_string(v));
        }
        return r;
      })),
      0);
  EXPECT_GT(
      (every_version<protocol::DeleteRecordsRequest, protocol::DeleteRecordsResponse>([](int16_t) {
        protocol::DeleteRecordsRequest r;
        r.topics.push_back({"t", {{0, 0}}});
        return r;
      })),
      0);
  EXPECT_GT((every_version<protocol::InitProducerIdRequest, protocol::InitProducerIdResponse>(
                [](int16_t) {
                  protocol::InitProducerIdRequest r;
                  r.transactional_id = std::nullopt;
                  r.transaction_timeout_ms = 60000;
                  return r;
                })),
            0);
  EXPECT_GT(
      (every_version<protocol::OffsetForLeaderEpochRequest, protocol::OffsetForLeaderEpochResponse>(
          [](int16_t) {
            protocol::OffsetForLeaderEpochRequest r;
            r.topics.push_back({"t", {{0, -1, 0}}});
            return r;
          })),
      0);
  EXPECT_GT((every_version<protocol::DescribeConfigsRequest, protocol::DescribeConfigsResponse>(
                [](int16_t) {
                  protocol::DescribeConfigsRequest r;
                  r.include_synonyms = true;
                  r.resources.push_back({2, "t", std::nullopt});
                  r.resources.push_back({4, "1", std::nullopt});
                  return r;
                })),
            0);
  EXPECT_GT((every_version<protocol::DescribeClusterRequest, protocol::DescribeClusterResponse>(
                [](int16_t) { return protocol::DescribeClusterRequest{}; })),
            0);
  EXPECT_GT((every_version<protocol::DescribeLogDirsRequest, protocol::DescribeLogDirsResponse>(
                [](int16_t) { return protocol::DescribeLogDirsRequest{}; })),
            0);
  EXPECT_GT((every_version<protocol::DescribeTopicPartitionsRequest,
                           protocol::DescribeTopicPartitionsResponse>(
                [](int16_t) { return protocol::DescribeTopicPartitionsRequest{}; })),
            0);
  EXPECT_GT((every_version<protocol::GetTelemetrySubscriptionsRequest,
                           protocol::GetTelemetrySubscriptionsResponse>(
                [](int16_t) { return protocol::GetTelemetrySubscriptionsRequest{}; })),
            0);
  EXPECT_GT((every_version<protocol::PushTelemetryRequest, protocol::PushTelemetryResponse>(
                [](int16_t) { return protocol::PushTelemetryRequest{}; })),
            0);
  int grow = 1;
  EXPECT_GT((every_version<protocol::CreatePartitionsRequest, protocol::CreatePartitionsResponse>(
                [&](int16_t) {
                  protocol::CreatePartitionsRequest r;
                  r.topics.push_back({"cp", ++grow, std::nullopt});
                  return r;
                })),
            0);
}

TEST_F(RouterTest, ApiVersionsListsExactlyTheRoutedApis) {
  protocol::ApiVersionsRequest av;  // v3+ requires a valid client software name and version
  av.client_software_name = "router-test";
  av.client_software_version = "1.0";
  auto r = call<protocol::ApiVersionsRequest, protocol::ApiVersionsResponse>(av, 3);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->error_code, 0);
  const std::vector<ApiRange> apis = dispatcher().supported();
  ASSERT_EQ(r->api_keys.size(), apis.size());
  for (const auto& k : r->api_keys) {
    bool found = false;
    for (const auto& a : apis) {
      if (static_cast<int16_t>(a.key) == k.api_key) {
        found = true;
        EXPECT_EQ(a.min_version, k.min_version);
        EXPECT_EQ(a.max_version, k.max_version);
      }
    }
    EXPECT_TRUE(found) << k.api_key;
  }
}

// Each handler names its own highest version: the schemas (kafka-clients 4.1.2) define newer
// ones the handlers do not implement (Produce v12-13, with v13 naming topics by id only; Fetch
// v18; Metadata v13; DescribeCluster v2), and a schema update must not advertise them.
TEST_F(RouterTest, AdvertisedVersionsAreTheHandlersNotTheSchemas) {
  using protocol::ApiKey;
  const std::map<ApiKey, std::pair<int16_t, int16_t>> want = {
      {ApiKey::kProduce, {3, 11}},
      {ApiKey::kFetch, {4, 17}},
      {ApiKey::kListOffsets, {1, 10}},
      {ApiKey::kMetadata, {0, 12}},
      {ApiKey::kApiVersions, {0, 4}},
      {ApiKey::kCreateTopics, {2, 7}},
      {ApiKey::kDeleteTopics, {1, 6}},
      {ApiKey::kDeleteRecords, {0, 2}},
      {ApiKey::kInitProducerId, {0, 5}},
      {ApiKey::kOffsetForLeaderEpoch, {2, 4}},
      {ApiKey::kDescribeConfigs, {1, 4}},
      {ApiKey::kAlterConfigs, {0, 2}},
      {ApiKey::kDescribeLogDirs, {1, 4}},
      {ApiKey::kCreatePartitions, {0, 3}},
      {ApiKey::kIncrementalAlterConfigs, {0, 1}},
      {ApiKey::kAlterPartitionReassignments, {0, 1}},
      {ApiKey::kListPartitionReassignments, {0, 0}},
      {ApiKey::kElectLeaders, {0, 2}},
      {ApiKey::kDescribeCluster, {0, 1}},
      {ApiKey::kDescribeTopicPartitions, {0, 0}},
      {ApiKey::kGetTelemetrySubscriptions, {0, 0}},
      {ApiKey::kPushTelemetry, {0, 0}},
      // Transactions: the forms before KIP-890 part 2 (txn_handlers.h).
      {ApiKey::kAddPartitionsToTxn, {0, 3}},
      {ApiKey::kAddOffsetsToTxn, {0, 4}},
      {ApiKey::kTxnOffsetCommit, {0, 4}},
      {ApiKey::kEndTxn, {0, 4}},
      {ApiKey::kDescribeTransactions, {0, 0}},
      {ApiKey::kListTransactions, {0, 2}},
      {ApiKey::kDescribeProducers, {0, 0}},
      {ApiKey::kSaslHandshake, {0, 1}},
      {ApiKey::kSaslAuthenticate, {0, 2}},
      {ApiKey::kDescribeUserScramCredentials, {0, 0}},
      {ApiKey::kAlterUserScramCredentials, {0, 0}},
      {ApiKey::kDescribeClientQuotas, {0, 1}},
  };
  std::map<ApiKey, std::pair<int16_t, int16_t>> got;
  for (const auto& a : dispatcher().supported()) got[a.key] = {a.min_version, a.max_version};
  EXPECT_EQ(got, want);
}

// Metadata describes this broker by its address on the listener the client connected to.
TEST_F(RouterTest, MetadataAdvertisesTheListenerTheClientUsed) {
  broker_->set_endpoints({{"PLAINTEXT", "broker.example", 9092}, {"INTERNAL", "10.0.0.1", 9093}});
  for (const std::string listener : {"PLAINTEXT", "INTERNAL", "UNKNOWN"}) {
    protocol::MetadataRequest req;
    auto frame = protocol::encode_request_frame(7, std::string("c"), 12, req);
    ASSERT_TRUE(frame.ok());
    net::ConnectionInfo conn{1, 0, listener, "127.0.0.1:1"};
    net::Response r = run(dispatcher().handle(conn, frame->slice(4, frame->size() - 4)));
    ASSERT_TRUE(r.frame.has_value());
    protocol::Reader rd(r.frame->flatten());
    protocol::ResponseHeader h;
    ASSERT_TRUE(protocol::decode_response_header(rd, ApiKey::kMetadata, 12, h).ok());
    protocol::MetadataResponse resp;
    ASSERT_TRUE(resp.decode(rd, 12).ok());
    ASSERT_EQ(resp.brokers.size(), 1u) << listener;
    EXPECT_EQ(resp.brokers[0].node_id, 1);
    // An unknown listener name falls back to the first advertised endpoint.
    EXPECT_EQ(resp.brokers[0].host, listener == "INTERNAL" ? "10.0.0.1" : "broker.example");
    EXPECT_EQ(resp.brokers[0].port, listener == "INTERNAL" ? 9093 : 9092);
  }
}

TEST_F(RouterTest, UnsupportedOrMalformedRequestsCloseTheConnection) {
  Dispatcher& router = dispatcher();
  net::ConnectionInfo conn{1, 0, "PLAINTEXT", "127.0.0.1:1"};
  // Produce v2 (removed in Kafka 4), a garbage API key, and a truncated Metadata body.
  // The codec cannot encode Produce v2 any more, so the frame is written by hand: header v1
  // (key 0, version 2, correlation id 1, client id "c"), then acks -1, timeout 1000, no topics.
  const uint8_t old[] = {0,    0,    0, 2, 0,    0,    0, 1, 0, 1, 'c',
                         0xff, 0xff, 0, 0, 0x03, 0xe8, 0, 0, 0, 0};
  EXPECT_TRUE(run(router.handle(conn, Buffer::copy(old, sizeof old))).close);
  const uint8_t junk[] = {0x7f, 0x7f, 0, 0, 0, 1};
  EXPECT_TRUE(run(router.handle(conn, Buffer::copy(junk, sizeof junk))).close);
  protocol::MetadataRequest m;
  auto meta = protocol::encode_request_frame(1, std::string("c"), 12, m);
  ASSERT_TRUE(meta.ok());
  EXPECT_TRUE(run(router.handle(conn, meta->slice(4, meta->size() - 6))).close);
}

}  // namespace
}  // namespace shale::broker::testing
