// KIP-714 client telemetry answered as a broker without client-metrics subscriptions.
#include "broker_test_util.h"

namespace shale::broker::testing {
namespace {

using protocol::ErrorCode;

TEST_F(BrokerTest, TelemetrySubscriptionHasNoMetricsAndAnInstanceId) {
  auto r = run(handle_get_telemetry_subscriptions(*broker_, 0, {}));
  EXPECT_EQ(r.error_code, 0);
  EXPECT_FALSE(r.client_instance_id.is_zero());  // a new client gets an id
  EXPECT_TRUE(r.requested_metrics.empty());      // nothing to push
  EXPECT_EQ(r.push_interval_ms, 300000);
  EXPECT_FALSE(r.accepted_compression_types.empty());
  // A client that has an id keeps it.
  protocol::GetTelemetrySubscriptionsRequest again;
  again.client_instance_id = r.client_instance_id;
  auto r2 = run(handle_get_telemetry_subscriptions(*broker_, 0, again));
  EXPECT_EQ(r2.client_instance_id, r.client_instance_id);
  EXPECT_EQ(r2.subscription_id, r.subscription_id);
  // Pushes: the current subscription is accepted, another one is not.
  protocol::PushTelemetryRequest push;
  push.client_instance_id = r.client_instance_id;
  push.subscription_id = r.subscription_id;
  push.terminating = true;
  EXPECT_EQ(run(handle_push_telemetry(*broker_, 0, push)).error_code, 0);
  push.subscription_id = r.subscription_id + 1;
  EXPECT_EQ(run(handle_push_telemetry(*broker_, 0, push)).error_code,
            static_cast<int16_t>(ErrorCode::kUnknownSubscriptionId));
  push.subscription_id = r.subscription_id;
  push.metrics = Buffer::copy(std::string(2 << 20, 'm'));
  EXPECT_EQ(run(handle_push_telemetry(*broker_, 0, push)).error_code,
            static_cast<int16_t>(ErrorCode::kTelemetryTooLarge));
}

}  // namespace
}  // namespace shale::broker::testing
