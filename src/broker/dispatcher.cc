#include "broker/dispatcher.h"

#include <algorithm>
#include <chrono>

#include "base/endian.h"
#include "broker/api_versions.h"
#include "protocol/errors.h"
#include "protocol/generated/api_table.h"

namespace shale::broker {

void Dispatcher::add_entry(Entry e) {
  const metrics::Labels api{{"request", protocol::api_name(e.key)}};
  auto& reg = metrics::global();
  // Kafka's RequestMetrics (RequestsPerSec, TotalTimeMs) under Prometheus names.
  e.requests = &reg.counter("kafka_network_requests_total",
                            "Requests handled, by API (Kafka's RequestsPerSec)", api);
  e.failures =
      &reg.counter("kafka_network_request_failures_total",
                   "Requests that closed their connection (undecodable, unsupported)", api);
  e.latency = &reg.histogram("kafka_network_request_duration_seconds",
                             "Time from a request's start to its response, by API "
                             "(Kafka's TotalTimeMs)",
                             api);
  auto idx = static_cast<size_t>(e.key);
  if (by_key_.size() <= idx) by_key_.resize(idx + 1);
  by_key_[idx] = std::make_unique<Entry>(std::move(e));
}

const Dispatcher::Entry* Dispatcher::find(int16_t key) const {
  if (key < 0 || static_cast<size_t>(key) >= by_key_.size()) return nullptr;
  return by_key_[static_cast<size_t>(key)].get();
}

std::vector<ApiRange> Dispatcher::supported() const {
  std::vector<ApiRange> out;
  for (const auto& e : by_key_) {
    if (!e) continue;
    const protocol::ApiInfo* info = protocol::find_api(e->key);
    int16_t max = e->max_version;
    if (info != nullptr) max = std::min(max, info->max_stable_version());
    if (max >= e->min_version) out.push_back({e->key, e->min_version, max});
  }
  return out;
}

net::Response Dispatcher::reject(log::RateLimiter& limiter, const net::ConnectionInfo& conn,
                                 const std::string& why) {
  uint64_t suppressed = 0;
  if (limiter.allow(&suppressed)) {
    spdlog::warn("closing connection from {}: {}{}", conn.peer, why,
                 suppressed ? fmt::format(" [{} similar suppressed]", suppressed) : "");
  }
  return net::Response::close_connection();
}

asio::awaitable<net::Response> Dispatcher::unsupported_api_versions(
    const protocol::RequestHeader& h) {
  // Kafka's rule (KIP-511): answer at v0, which every client can read, with the error and the
  // ranges we do support; the client then retries at a version we have.
  auto resp = make_api_versions_response(*this, protocol::ErrorCode::kUnsupportedVersion);
  auto frame = encode_response_at(h.correlation_id, 0, resp);
  if (!frame.ok()) co_return net::Response::close_connection();
  co_return net::Response::reply(std::move(frame).value());
}

asio::awaitable<net::Response> Dispatcher::handle(const net::ConnectionInfo& conn, Buffer frame,
                                                  net::RequestOrder& order) {
  if (conn.session->sasl_raw_tokens) {
    if (!raw_sasl_) co_return net::Response::close_connection();
    co_return co_await raw_sasl_(conn, std::move(frame));
  }
  if (frame.size() < 4) {
    co_return reject(bad_request_log_, conn,
                     fmt::format("request of {} bytes has no header", frame.size()));
  }
  const auto key = static_cast<int16_t>(be::load16(frame.data()));
  const auto version = static_cast<int16_t>(be::load16(frame.data() + 2));
  protocol::Reader r(frame);
  protocol::RequestHeader header;
  Status st = protocol::decode_request_header(r, header);
  // kUnsupported means the header itself was read (unknown key or version); anything else
  // means the header bytes are malformed.
  if (!st.ok() && st.error().code != Errc::kUnsupported) {
    co_return reject(bad_request_log_, conn,
                     fmt::format("malformed request header (api key {}, version {}): {}", key,
                                 version, st.error().message));
  }
  // A SASL listener serves nothing but the authentication exchange (and ApiVersions) before the
  // connection has authenticated; anything else closes it, as Kafka does.
  if (!conn.session->authenticated && key != static_cast<int16_t>(protocol::ApiKey::kApiVersions) &&
      key != static_cast<int16_t>(protocol::ApiKey::kSaslHandshake) &&
      key != static_cast<int16_t>(protocol::ApiKey::kSaslAuthenticate)) {
    const protocol::ApiInfo* info = protocol::find_api(key);
    co_return reject(unauthenticated_log_, conn,
                     fmt::format("{} (api key {}) before SASL authentication (ILLEGAL_SASL_STATE)",
                                 info ? info->name : "unknown api", key));
  }
  const Entry* e = find(key);
  if (e == nullptr) {
    const protocol::ApiInfo* info = protocol::find_api(key);
    co_return reject(unknown_key_log_, conn,
                     info == nullptr
                         ? fmt::format("unknown api key {}", key)
                         : fmt::format("api {} ({}) is not served here", info->name, key));
  }
  if (!st.ok() || version < e->min_version || version > e->max_version) {
    if (e->key == protocol::ApiKey::kApiVersions)
      co_return co_await unsupported_api_versions(header);
    co_return reject(bad_version_log_, conn,
                     fmt::format("unsupported version {} of {} (we support {}-{})", version,
                                 protocol::api_name(e->key), e->min_version, e->max_version));
  }
  RequestContext ctx{conn, header, order};
  const auto started = std::chrono::steady_clock::now();
  auto result = co_await e->invoke(ctx, r);
  e->requests->inc();
  e->latency->observe(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  if (!result.ok()) {
    e->failures->inc();
    co_return reject(bad_request_log_, conn,
                     fmt::format("cannot decode or encode {} v{} (correlation id {}): {}",
                                 protocol::api_name(e->key), version, header.correlation_id,
                                 result.error().message));
  }
  if (conn.session->close_after_response) {
    net::Response closing = net::Response::close_connection();
    if (result->has_value()) closing.frame = std::move(**result);
    co_return closing;
  }
  if (!result->has_value()) co_return net::Response::none();
  co_return net::Response::reply(std::move(**result));
}

}  // namespace shale::broker
