// Input: untrusted SASL bytes. The whole input goes through the PLAIN, JAAS, base64 and stored
// credential parsers; then it is split at the first 0xff byte into a SCRAM client-first and a
// client-final message and run through a ScramServer exchange (both mechanisms). Nothing may
// crash or read out of bounds, a failed exchange must stay failed, and an accepted client-first
// must name a non-empty user.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "security/sasl.h"

using namespace shale::security;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  (void)parse_plain(in);
  (void)parse_plain_jaas(in);
  (void)base64_decode(in);
  (void)decode_credential(in);
  size_t cut = in.find('\xff');
  std::string_view first = in.substr(0, cut);
  std::string_view final_msg = cut == std::string_view::npos ? "" : in.substr(cut + 1);
  static const ScramCredential cred256 =
      scram_credential_from_password(ScramMechanism::kSha256, "pw", 4096);
  static const ScramCredential cred512 =
      scram_credential_from_password(ScramMechanism::kSha512, "pw", 4096);
  for (auto m : {ScramMechanism::kSha256, ScramMechanism::kSha512}) {
    ScramServer s(m);
    auto user = s.client_first(first);
    if (!user.ok()) {
      if (s.server_first(cred256).ok()) abort();  // a failed exchange stays failed
      continue;
    }
    if (user->empty()) abort();
    auto sf = s.server_first(m == ScramMechanism::kSha256 ? cred256 : cred512);
    if (!sf.ok()) abort();
    (void)s.client_final(final_msg);
    if (s.client_final(final_msg).ok()) abort();  // never twice
  }
  return 0;
}
