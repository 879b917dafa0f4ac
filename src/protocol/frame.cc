#include "protocol/frame.h"

#include "base/endian.h"

namespace shale::protocol {

Status decode_request_header(Reader& r, RequestHeader& out) {
  if (r.remaining() < 4) {
    r.fail("truncated request header");
    return r.status();
  }
  const uint8_t* p = r.buffer().data() + r.position();
  const auto key = static_cast<int16_t>(be::load16(p));
  const auto version = static_cast<int16_t>(be::load16(p + 2));
  const ApiInfo* api = find_api(key);
  const int16_t hv = request_header_version(static_cast<ApiKey>(key), version);
  SHALE_TRY(out.decode(r, hv));
  if (api == nullptr) {
    return Error::make(Errc::kUnsupported, "unknown api key " + std::to_string(key));
  }
  if (!api->supports(version)) {
    return Error::make(Errc::kUnsupported, std::string(api->name) + " version " +
                                               std::to_string(version) + " is not supported");
  }
  return ok_status();
}

Status encode_request_header(Writer& w, const RequestHeader& h) {
  const int16_t hv =
      request_header_version(static_cast<ApiKey>(h.request_api_key), h.request_api_version);
  return h.encode(w, hv);
}

void encode_response_header(Writer& w, ApiKey key, int16_t api_version, int32_t correlation_id) {
  w.write_i32(correlation_id);
  if (response_header_version(key, api_version) >= 1) w.write_uvarint(0);
}

Status decode_response_header(Reader& r, ApiKey key, int16_t api_version, ResponseHeader& out) {
  return out.decode(r, response_header_version(key, api_version));
}

}  // namespace shale::protocol
