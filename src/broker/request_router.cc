#include "broker/request_router.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "base/log.h"
#include "broker/handlers.h"
#include "protocol/frame.h"
#include "protocol/generated/api_versions_request.h"
#include "protocol/generated/api_versions_response.h"

namespace shale::broker {

using protocol::ApiKey;
using protocol::RequestHeader;

namespace {

// Oldest versions Kafka 4.x still serves (KIP-896 removed the older ones).
const std::vector<RoutedApi>& table() {
  static const std::vector<RoutedApi> apis = [] {
    std::vector<std::pair<ApiKey, int16_t>> mins = {
        {ApiKey::kProduce, 3},          {ApiKey::kFetch, 4},
        {ApiKey::kListOffsets, 1},      {ApiKey::kMetadata, 0},
        {ApiKey::kApiVersions, 0},      {ApiKey::kCreateTopics, 2},
        {ApiKey::kDeleteTopics, 1},     {ApiKey::kDeleteRecords, 0},
        {ApiKey::kInitProducerId, 0},   {ApiKey::kOffsetForLeaderEpoch, 2},
        {ApiKey::kCreatePartitions, 0}, {ApiKey::kDescribeConfigs, 1},
        {ApiKey::kDescribeCluster, 0},
    };
    std::vector<RoutedApi> out;
    for (auto [key, min] : mins) {
      const protocol::ApiInfo* info = protocol::find_api(key);
      out.push_back({key, std::max(min, info->min_version), info->max_stable_version()});
    }
    std::sort(out.begin(), out.end(), [](const RoutedApi& a, const RoutedApi& b) {
      return static_cast<int16_t>(a.key) < static_cast<int16_t>(b.key);
    });
    return out;
  }();
  return apis;
}

const RoutedApi* find_routed(int16_t key) {
  for (const auto& a : table()) {
    if (static_cast<int16_t>(a.key) == key) return &a;
  }
  return nullptr;
}

template <typename Resp>
net::Response reply(const RequestHeader& h, const Resp& resp) {
  auto frame = protocol::encode_response_frame(h.correlation_id, h.request_api_version, resp);
  if (!frame.ok()) {
    spdlog::error("encoding {} v{} response failed: {}", protocol::api_name(Resp::kApiKey),
                  h.request_api_version, frame.error().to_string());
    return net::Response::close_connection();
  }
  BufferChain c;
  c.push_back(frame->slice(4, frame->size() - 4));  // the server adds the size prefix
  return net::Response::reply(std::move(c));
}

protocol::ApiVersionsResponse api_versions(int16_t error) {
  protocol::ApiVersionsResponse r;
  r.error_code = error;
  for (const auto& a : table()) {
    r.api_keys.push_back({static_cast<int16_t>(a.key), a.min_version, a.max_version});
  }
  return r;
}

template <typename Req, typename Handler>
asio::awaitable<net::Response> call(Broker& b, const RequestHeader& h, protocol::Reader& r,
                                    Handler handler) {
  Req req;
  if (auto st = req.decode(r, h.request_api_version); !st.ok()) {
    spdlog::debug("malformed {} v{} request: {}", protocol::api_name(Req::kApiKey),
                  h.request_api_version, st.error().to_string());
    co_return net::Response::close_connection();
  }
  if constexpr (std::is_same_v<Req, protocol::ProduceRequest>) {
    const bool no_response = req.acks == 0;
    auto resp = co_await handler(b, h.request_api_version, std::move(req));
    co_return no_response ? net::Response::none() : reply(h, resp);
  } else {
    auto resp = co_await handler(b, h.request_api_version, std::move(req));
    co_return reply(h, resp);
  }
}

}  // namespace

const std::vector<RoutedApi>& RequestRouter::routed_apis() { return table(); }

asio::awaitable<net::Response> RequestRouter::handle(const net::ConnectionInfo& conn,
                                                     Buffer frame) {
  protocol::Reader r(std::move(frame));
  RequestHeader h;
  Status hs = protocol::decode_request_header(r, h);
  const RoutedApi* api = find_routed(h.request_api_key);
  if (h.request_api_key == static_cast<int16_t>(ApiKey::kApiVersions) &&
      (!hs.ok() || (api && h.request_api_version > api->max_version))) {
    // KIP-511: answer a too-new ApiVersions with v0 and our ranges so the client can downgrade.
    RequestHeader v0 = h;
    v0.request_api_version = 0;
    co_return reply(v0,
                    api_versions(static_cast<int16_t>(protocol::ErrorCode::kUnsupportedVersion)));
  }
  if (!hs.ok() || api == nullptr || h.request_api_version < api->min_version ||
      h.request_api_version > api->max_version) {
    spdlog::debug("closing {}: unsupported request (api {} v{}){}", conn.peer, h.request_api_key,
                  h.request_api_version, hs.ok() ? "" : ": " + hs.error().message);
    co_return net::Response::close_connection();
  }
  Broker& b = broker_;
  switch (api->key) {
    case ApiKey::kApiVersions: {
      protocol::ApiVersionsRequest req;
      if (auto st = req.decode(r, h.request_api_version); !st.ok()) {
        co_return net::Response::close_connection();
      }
      co_return reply(h, api_versions(0));
    }
    case ApiKey::kProduce:
      co_return co_await call<protocol::ProduceRequest>(b, h, r, handle_produce);
    case ApiKey::kFetch:
      co_return co_await call<protocol::FetchRequest>(b, h, r, handle_fetch);
    case ApiKey::kListOffsets:
      co_return co_await call<protocol::ListOffsetsRequest>(b, h, r, handle_list_offsets);
    case ApiKey::kMetadata:
      co_return co_await call<protocol::MetadataRequest>(b, h, r, handle_metadata);
    case ApiKey::kCreateTopics:
      co_return co_await call<protocol::CreateTopicsRequest>(b, h, r, handle_create_topics);
    case ApiKey::kDeleteTopics:
      co_return co_await call<protocol::DeleteTopicsRequest>(b, h, r, handle_delete_topics);
    case ApiKey::kDeleteRecords:
      co_return co_await call<protocol::DeleteRecordsRequest>(b, h, r, handle_delete_records);
    case ApiKey::kInitProducerId:
      co_return co_await call<protocol::InitProducerIdRequest>(b, h, r, handle_init_producer_id);
    case ApiKey::kOffsetForLeaderEpoch:
      co_return co_await call<protocol::OffsetForLeaderEpochRequest>(
          b, h, r, handle_offset_for_leader_epoch);
    case ApiKey::kCreatePartitions:
      co_return co_await call<protocol::CreatePartitionsRequest>(b, h, r, handle_create_partitions);
    case ApiKey::kDescribeConfigs:
      co_return co_await call<protocol::DescribeConfigsRequest>(b, h, r, handle_describe_configs);
    case ApiKey::kDescribeCluster:
      co_return co_await call<protocol::DescribeClusterRequest>(b, h, r, handle_describe_cluster);
    default:
      co_return net::Response::close_connection();
  }
}

}  // namespace shale::broker
