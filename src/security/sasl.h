// SASL mechanisms of Kafka's authentication: message parsers and server-side state machines for
// PLAIN (RFC 4616) and SCRAM-SHA-256 / SCRAM-SHA-512 (RFC 5802, RFC 7677), the SCRAM credential
// format stored in the MetaStore, and the PLAIN users of a JAAS-style configuration. All
// cryptography is OpenSSL's (PBKDF2, HMAC, SHA-2, RAND_bytes, constant-time compare).
//
// Bad input: every parser takes untrusted bytes and returns an Error (never throws, never reads
// past its input); tests/fuzz/fuzz_sasl.cc feeds them random bytes.
// Threads: plain values; a ScramServer belongs to one connection.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace shale::security {

// The numbering of AlterUserScramCredentials / DescribeUserScramCredentials.
enum class ScramMechanism : int8_t { kSha256 = 1, kSha512 = 2 };
std::optional<ScramMechanism> scram_mechanism(std::string_view name);  // "SCRAM-SHA-256"
std::optional<ScramMechanism> scram_mechanism(int8_t type);
const char* mechanism_name(ScramMechanism m);
constexpr int32_t kScramMinIterations = 4096;  // Kafka's bounds
constexpr int32_t kScramMaxIterations = 16384;

// What the broker keeps for a SCRAM user: never the password or the salted password.
struct ScramCredential {
  std::string salt;        // raw bytes
  std::string stored_key;  // H(HMAC(SaltedPassword, "Client Key"))
  std::string server_key;  // HMAC(SaltedPassword, "Server Key")
  int32_t iterations = 0;
};
// From the salted password (what AlterUserScramCredentials carries: the client runs PBKDF2).
ScramCredential scram_credential_from_salted(ScramMechanism m, std::string salt,
                                             std::string_view salted_password, int32_t iterations);
// From a password: PBKDF2 with a random salt (tests, tools).
ScramCredential scram_credential_from_password(ScramMechanism m, std::string_view password,
                                               int32_t iterations);
std::string salted_password(ScramMechanism m, std::string_view password, std::string_view salt,
                            int32_t iterations);
// MetaStore value: "<iterations>:<b64 salt>:<b64 stored key>:<b64 server key>".
std::string encode_credential(const ScramCredential& c);
Result<ScramCredential> decode_credential(std::string_view v);

std::string base64_encode(std::string_view raw);
Result<std::string> base64_decode(std::string_view text);

// PLAIN: "[authzid] NUL authcid NUL passwd".
struct PlainMessage {
  std::string authzid;
  std::string username;
  std::string password;
};
Result<PlainMessage> parse_plain(std::string_view msg);
// The user_<name>="<password>" options of a JAAS entry such as
//   org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="pw";
Result<std::map<std::string, std::string>> parse_plain_jaas(std::string_view jaas);
// Constant-time comparison of secrets.
bool secrets_equal(std::string_view a, std::string_view b);

// The server side of one SCRAM exchange:
//   client_first() -> the user name to look up;
//   server_first(credential) -> the server-first message;
//   client_final() -> the server-final message if the proof is right.
// A call out of this order, a malformed message or a wrong proof is an Error (the caller fails
// the authentication and closes the connection).
class ScramServer {
 public:
  explicit ScramServer(ScramMechanism m) : mech_(m) {}
  Result<std::string> client_first(std::string_view msg);
  Result<std::string> server_first(const ScramCredential& cred);
  Result<std::string> client_final(std::string_view msg);
  ScramMechanism mechanism() const { return mech_; }
  const std::string& username() const { return user_; }

 private:
  enum class State { kStart, kClientFirst, kServerFirst, kDone, kFailed };
  ScramMechanism mech_;
  State state_ = State::kStart;
  std::string gs2_header_;
  std::string client_first_bare_;
  std::string client_nonce_;
  std::string nonce_;  // client + server
  std::string server_first_;
  std::string user_;
  ScramCredential cred_;
};

}  // namespace shale::security

namespace shale::security {

// The broker's SASL configuration (docs/security.md).
struct SaslSettings {
  // sasl.enabled.mechanisms: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512.
  std::vector<std::string> enabled_mechanisms = {"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"};
  // listener.name.<l>.sasl.enabled.mechanisms, by listener name.
  std::map<std::string, std::vector<std::string>> listener_mechanisms;
  // PLAIN users (name -> password) per listener name; "" holds those of sasl.jaas.config,
  // which apply to listeners without their own listener.name.<l>.plain.sasl.jaas.config.
  std::map<std::string, std::map<std::string, std::string>> plain_users;
  // connection.failed.authentication.delay.ms: a failed authentication is answered (and its
  // connection closed) only after this delay.
  int64_t failed_authentication_delay_ms = 100;

  const std::vector<std::string>& mechanisms_of(const std::string& listener) const {
    auto it = listener_mechanisms.find(listener);
    return it == listener_mechanisms.end() ? enabled_mechanisms : it->second;
  }

  const std::map<std::string, std::string>* plain_users_of(const std::string& listener) const {
    auto it = plain_users.find(listener);
    if (it == plain_users.end()) it = plain_users.find("");
    return it == plain_users.end() ? nullptr : &it->second;
  }
};

}  // namespace shale::security
