// Client telemetry (KIP-714): GetTelemetrySubscriptions and PushTelemetry answered as an Apache
// Kafka 4.x broker without client-metrics subscriptions answers them, so Kafka 3.7+/4.x clients
// neither log errors nor push anything: a client instance id (a new one when the client sent
// none), a subscription id, the codecs a push may use, Kafka's default push interval (5 min),
// and no requested metrics. A push is accepted only for the current subscription id
// (UNKNOWN_SUBSCRIPTION_ID otherwise) and within telemetry_max_bytes (TELEMETRY_TOO_LARGE).
#include "broker/handlers.h"

namespace shale::broker {

using protocol::ErrorCode;

namespace {

// The subscription a broker without client-metrics resources hands out: every client gets the
// same (empty) one, so its id is a constant.
constexpr int32_t kSubscriptionId = 0x5ba1e000;
constexpr int32_t kPushIntervalMs = 300000;      // Kafka's ClientMetricsConfigs default
constexpr int32_t kTelemetryMaxBytes = 1048576;  // Kafka's telemetry.max.bytes default

}  // namespace

asio::awaitable<protocol::GetTelemetrySubscriptionsResponse> handle_get_telemetry_subscriptions(
    Broker&, int16_t, protocol::GetTelemetrySubscriptionsRequest req) {
  protocol::GetTelemetrySubscriptionsResponse resp;
  resp.client_instance_id =
      req.client_instance_id.is_zero() ? random_topic_id() : req.client_instance_id;
  resp.subscription_id = kSubscriptionId;
  // Codec ids in Kafka's preference order: zstd, lz4, gzip, snappy.
  resp.accepted_compression_types = {4, 3, 1, 2};
  resp.push_interval_ms = kPushIntervalMs;
  resp.telemetry_max_bytes = kTelemetryMaxBytes;
  resp.delta_temporality = true;
  co_return resp;
}

asio::awaitable<protocol::PushTelemetryResponse> handle_push_telemetry(
    Broker&, int16_t, protocol::PushTelemetryRequest req) {
  protocol::PushTelemetryResponse resp;
  if (req.subscription_id != kSubscriptionId) {
    resp.error_code = static_cast<int16_t>(ErrorCode::kUnknownSubscriptionId);
  } else if (req.metrics.size() > static_cast<size_t>(kTelemetryMaxBytes)) {
    resp.error_code = static_cast<int16_t>(ErrorCode::kTelemetryTooLarge);
  }
  co_return resp;
}

}  // namespace shale::broker
