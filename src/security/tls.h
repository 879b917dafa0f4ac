// TLS for Kafka listeners: builds the OpenSSL server context of an SSL or SASL_SSL listener from
// Kafka's `ssl.*` keys (PEM keystore and truststore only) and names the principal of a client
// certificate. The connection code (net/server.cc) runs Asio SSL streams on these contexts.
//
// Threads: make_server_context() runs at start-up; the context it returns is shared read-only
// by every connection of the listener (OpenSSL contexts are safe to share once configured).
#pragma once

#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include <openssl/ssl.h>

#include "base/result.h"

namespace asio::ssl {
class context;
}

namespace shale::security {

enum class ClientAuth { kNone, kRequested, kRequired };

// Kafka's names; a value left empty is unset.
struct TlsSettings {
  std::string keystore_type = "PEM";       // ssl.keystore.type (only PEM)
  std::string keystore_location;           // ssl.keystore.location: key + certificate chain
  std::string keystore_certificate_chain;  // ssl.keystore.certificate.chain (PEM text)
  std::string keystore_key;                // ssl.keystore.key (PEM text)
  std::string key_password;                // ssl.key.password (encrypted keys)
  std::string truststore_type = "PEM";     // ssl.truststore.type (only PEM)
  std::string truststore_location;         // ssl.truststore.location: CA certificates
  std::string truststore_certificates;     // ssl.truststore.certificates (PEM text)
  ClientAuth client_auth = ClientAuth::kNone;
  std::vector<std::string> enabled_protocols = {"TLSv1.2", "TLSv1.3"};  // ssl.enabled.protocols
  std::vector<std::string> cipher_suites;  // ssl.cipher.suites (IANA names); empty = defaults
};

Result<ClientAuth> parse_client_auth(const std::string& v);

// The context for one listener. Errors name the Kafka key at fault (missing keystore, a key
// that does not match its certificate, a wrong password, an unknown protocol or cipher suite).
Result<std::shared_ptr<asio::ssl::context>> make_server_context(const TlsSettings& s);

// ssl.principal.mapping.rules: Kafka's list of `RULE:<regex>/<replacement>/[L|U]` and
// `DEFAULT` entries, tried in order on the certificate subject (RFC 2253). The first rule whose
// regex matches the whole subject gives the name ($1.. are its groups; L / U lower- or
// upper-case the result); DEFAULT gives the subject unchanged. No rule matching is an error.
class PrincipalMapper {
 public:
  static Result<PrincipalMapper> parse(std::string_view rules);
  // nullopt: no rule matched (the connection fails, as in Kafka).
  std::optional<std::string> map(const std::string& subject) const;

 private:
  struct Rule {
    bool is_default = false;
    std::regex pattern;
    std::string replacement;
    char cases = 0;  // 'L', 'U' or 0
  };
  std::vector<Rule> rules_;
};

// The subject (RFC 2253, as Java's X500Principal.getName() gives it) of the verified client
// certificate of `ssl`; nullopt when there is none (or it did not verify).
std::optional<std::string> tls_subject(SSL* ssl);
// "User:<mapped subject>" of the verified client certificate (DEFAULT rule when `mapper` is
// null), "User:ANONYMOUS" when the client sent none, nullopt when no mapping rule matched.
std::optional<std::string> tls_principal(SSL* ssl, const PrincipalMapper* mapper = nullptr);

}  // namespace shale::security
