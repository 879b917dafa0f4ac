#include "broker/api_versions.h"

#include <cctype>

namespace shale::broker {

using protocol::ApiVersionsRequest;
using protocol::ApiVersionsResponse;

ApiVersionsResponse make_api_versions_response(const Dispatcher& d, protocol::ErrorCode error) {
  ApiVersionsResponse resp;
  resp.error_code = static_cast<int16_t>(error);
  for (const ApiRange& r : d.supported()) {
    ApiVersionsResponse::ApiVersion v;
    v.api_key = static_cast<int16_t>(r.key);
    v.min_version = r.min_version;
    v.max_version = r.max_version;
    resp.api_keys.push_back(v);
  }
  return resp;
}

bool valid_client_software_field(const std::string& s) {
  if (s.empty()) return false;
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  if (!alnum(s.front()) || !alnum(s.back())) return false;
  for (char c : s) {
    if (!alnum(c) && c != '-' && c != '.') return false;
  }
  return true;
}

void register_api_versions(Dispatcher& d) {
  const Dispatcher* self = &d;
  d.add<ApiVersionsRequest, ApiVersionsResponse>(
      kApiVersionsMin, kApiVersionsMax,
      [self](const RequestContext& ctx,
             ApiVersionsRequest& req) -> asio::awaitable<std::optional<ApiVersionsResponse>> {
        if (ctx.version() >= 3 && (!valid_client_software_field(req.client_software_name) ||
                                   !valid_client_software_field(req.client_software_version))) {
          // As Kafka: the error alone, without the version list.
          ApiVersionsResponse bad;
          bad.error_code = static_cast<int16_t>(protocol::ErrorCode::kInvalidRequest);
          co_return bad;
        }
        co_return make_api_versions_response(*self, protocol::ErrorCode::kNone);
      });
}

}  // namespace shale::broker
