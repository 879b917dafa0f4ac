#include "security/tls.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/x509.h>

#include <cctype>

#include <asio/ssl/context.hpp>

namespace shale::security {

namespace {

Error tls_error(const std::string& what, const std::error_code& ec = {}) {
  std::string msg = what;
  if (ec) msg += ": " + ec.message();
  unsigned long e = 0;
  char buf[256];
  while ((e = ERR_get_error()) != 0) {
    ERR_error_string_n(e, buf, sizeof buf);
    msg += std::string(" [") + buf + "]";
  }
  return Error::make(Errc::kInvalidArgument, msg);
}

bool is_tls13_suite(const std::string& s) {
  return s == "TLS_AES_128_GCM_SHA256" || s == "TLS_AES_256_GCM_SHA384" ||
         s == "TLS_CHACHA20_POLY1305_SHA256" || s == "TLS_AES_128_CCM_SHA256" ||
         s == "TLS_AES_128_CCM_8_SHA256";
}

int protocol_version(const std::string& p) {
  if (p == "TLSv1.3") return TLS1_3_VERSION;
  if (p == "TLSv1.2") return TLS1_2_VERSION;
  if (p == "TLSv1.1") return TLS1_1_VERSION;
  if (p == "TLSv1") return TLS1_VERSION;
  return 0;
}

}  // namespace

Result<ClientAuth> parse_client_auth(const std::string& v) {
  if (v.empty() || v == "none") return ClientAuth::kNone;
  if (v == "requested") return ClientAuth::kRequested;
  if (v == "required") return ClientAuth::kRequired;
  return Error::make(Errc::kInvalidArgument,
                     "ssl.client.auth: '" + v + "' is not none, requested or required");
}

Result<std::shared_ptr<asio::ssl::context>> make_server_context(const TlsSettings& s) {
  ERR_clear_error();
  auto ctx = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_server);
  SSL_CTX* native = ctx->native_handle();
  std::error_code ec;
  ctx->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                       asio::ssl::context::no_sslv3 | asio::ssl::context::single_dh_use,
                   ec);
  if (ec) return tls_error("TLS context", ec);

  // Protocols: the lowest and highest listed (OpenSSL enables a contiguous range).
  int lo = 0, hi = 0;
  for (const auto& p : s.enabled_protocols) {
    int v = protocol_version(p);
    if (v == 0) {
      return Error::make(Errc::kInvalidArgument, "ssl.enabled.protocols: unknown protocol '" + p +
                                                     "' (TLSv1.2 and TLSv1.3 are supported)");
    }
    if (v < TLS1_2_VERSION) {
      return Error::make(Errc::kInvalidArgument,
                         "ssl.enabled.protocols: " + p + " is insecure and not supported");
    }
    lo = lo == 0 ? v : std::min(lo, v);
    hi = std::max(hi, v);
  }
  if (lo == 0) return Error::make(Errc::kInvalidArgument, "ssl.enabled.protocols: empty");
  SSL_CTX_set_min_proto_version(native, lo);
  SSL_CTX_set_max_proto_version(native, hi);

  // Cipher suites: Kafka lists IANA names; TLS 1.3 suites go to the 1.3 list, the others are
  // translated to OpenSSL's names for the TLS 1.2 list.
  if (!s.cipher_suites.empty()) {
    std::string v12, v13;
    for (const auto& c : s.cipher_suites) {
      if (is_tls13_suite(c)) {
        v13 += (v13.empty() ? "" : ":") + c;
        continue;
      }
      const char* name = OPENSSL_cipher_name(c.c_str());
      if (name == nullptr || std::string(name) == "(NONE)") {
        return Error::make(Errc::kInvalidArgument,
                           "ssl.cipher.suites: unknown cipher suite '" + c + "'");
      }
      v12 += (v12.empty() ? "" : ":") + std::string(name);
    }
    // An empty list for one version disables that version's suites.
    if (SSL_CTX_set_cipher_list(native, v12.empty() ? "" : v12.c_str()) != 1 && !v12.empty()) {
      return tls_error("ssl.cipher.suites: no usable TLS 1.2 suite in '" + v12 + "'");
    }
    if (SSL_CTX_set_ciphersuites(native, v13.c_str()) != 1) {
      return tls_error("ssl.cipher.suites: no usable TLS 1.3 suite in '" + v13 + "'");
    }
    ERR_clear_error();
  }

  if (s.keystore_type != "PEM") {
    return Error::make(Errc::kInvalidArgument, "ssl.keystore.type: '" + s.keystore_type +
                                                   "' is not supported (set it to PEM)");
  }
  if (!s.key_password.empty()) {
    ctx->set_password_callback(
        [pw = s.key_password](std::size_t, asio::ssl::context::password_purpose) { return pw; },
        ec);
  }
  if (!s.keystore_location.empty()) {
    // A PEM keystore file holds the private key and the certificate chain.
    ctx->use_certificate_chain_file(s.keystore_location, ec);
    if (ec) return tls_error("ssl.keystore.location " + s.keystore_location, ec);
    ctx->use_private_key_file(s.keystore_location, asio::ssl::context::pem, ec);
    if (ec) {
      return tls_error("ssl.keystore.location " + s.keystore_location +
                           ": no usable private key (wrong ssl.key.password?)",
                       ec);
    }
  } else if (!s.keystore_certificate_chain.empty() && !s.keystore_key.empty()) {
    ctx->use_certificate_chain(
        asio::buffer(s.keystore_certificate_chain.data(), s.keystore_certificate_chain.size()), ec);
    if (ec) return tls_error("ssl.keystore.certificate.chain", ec);
    ctx->use_private_key(asio::buffer(s.keystore_key.data(), s.keystore_key.size()),
                         asio::ssl::context::pem, ec);
    if (ec) return tls_error("ssl.keystore.key (wrong ssl.key.password?)", ec);
  } else {
    return Error::make(Errc::kInvalidArgument,
                       "a TLS listener needs ssl.keystore.location, or "
                       "ssl.keystore.certificate.chain and ssl.keystore.key");
  }
  if (SSL_CTX_check_private_key(native) != 1) {
    return tls_error("the private key does not match the keystore certificate");
  }

  if (s.truststore_type != "PEM") {
    return Error::make(Errc::kInvalidArgument, "ssl.truststore.type: '" + s.truststore_type +
                                                   "' is not supported (set it to PEM)");
  }
  bool trust = false;
  if (!s.truststore_location.empty()) {
    ctx->load_verify_file(s.truststore_location, ec);
    if (ec) return tls_error("ssl.truststore.location " + s.truststore_location, ec);
    trust = true;
  }
  if (!s.truststore_certificates.empty()) {
    ctx->add_certificate_authority(
        asio::buffer(s.truststore_certificates.data(), s.truststore_certificates.size()), ec);
    if (ec) return tls_error("ssl.truststore.certificates", ec);
    trust = true;
  }
  // Resumed sessions (TLS 1.3 tickets, which the Java client uses for its second connection)
  // need a session id context once client certificates are verified, or OpenSSL aborts the
  // handshake with internal_error.
  static const unsigned char kSessionContext[] = "shale-kafka";
  SSL_CTX_set_session_id_context(native, kSessionContext, sizeof kSessionContext - 1);
  switch (s.client_auth) {
    case ClientAuth::kNone:
      ctx->set_verify_mode(asio::ssl::verify_none, ec);
      break;
    case ClientAuth::kRequested:
    case ClientAuth::kRequired:
      if (!trust) {
        return Error::make(Errc::kInvalidArgument,
                           "ssl.client.auth=requested/required needs ssl.truststore.location or "
                           "ssl.truststore.certificates (the CAs client certificates are "
                           "checked against)");
      }
      ctx->set_verify_mode(s.client_auth == ClientAuth::kRequired
                               ? asio::ssl::verify_peer | asio::ssl::verify_fail_if_no_peer_cert
                               : asio::ssl::verify_peer,
                           ec);
      break;
  }
  if (ec) return tls_error("ssl.client.auth", ec);
  ERR_clear_error();
  return ctx;
}

Result<PrincipalMapper> PrincipalMapper::parse(std::string_view text) {
  PrincipalMapper m;
  size_t i = 0;
  auto bad = [&](const std::string& why) {
    return Error::make(Errc::kInvalidArgument, "ssl.principal.mapping.rules: " + why);
  };
  auto skip = [&] {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  };
  // Up to the next unescaped '/'; escapes stay as written (the regex reads them).
  auto until_slash = [&](std::string* out) {
    while (i < text.size() && text[i] != '/') {
      if (text[i] == '\\' && i + 1 < text.size()) out->push_back(text[i++]);
      out->push_back(text[i++]);
    }
    if (i >= text.size()) return false;
    ++i;
    return true;
  };
  for (;;) {
    skip();
    if (i >= text.size()) break;
    Rule r;
    if (text.substr(i, 7) == "DEFAULT") {
      r.is_default = true;
      i += 7;
    } else if (text.substr(i, 5) == "RULE:") {
      i += 5;
      std::string pattern, replacement;
      if (!until_slash(&pattern) || !until_slash(&replacement)) {
        return bad("expected RULE:<pattern>/<replacement>/[L|U]");
      }
      if (i < text.size() && (text[i] == 'L' || text[i] == 'U')) r.cases = text[i++];
      try {
        r.pattern = std::regex(pattern, std::regex::ECMAScript);
      } catch (const std::regex_error& e) {
        return bad("invalid pattern '" + pattern + "': " + e.what());
      }
      r.replacement = std::move(replacement);
    } else {
      return bad("expected DEFAULT or RULE: at '" + std::string(text.substr(i, 20)) + "'");
    }
    skip();
    if (i < text.size() && text[i] != ',') return bad("expected ',' between rules");
    ++i;
    m.rules_.push_back(std::move(r));
  }
  if (m.rules_.empty()) return bad("no rules");
  return m;
}

std::optional<std::string> PrincipalMapper::map(const std::string& subject) const {
  for (const Rule& r : rules_) {
    if (r.is_default) return subject;
    std::smatch match;
    if (!std::regex_match(subject, match, r.pattern)) continue;
    std::string out = match.format(r.replacement);
    if (r.cases == 'L') {
      for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (r.cases == 'U') {
      for (auto& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    return out;
  }
  return std::nullopt;
}

std::optional<std::string> tls_subject(SSL* ssl) {
  if (ssl == nullptr) return std::nullopt;
  X509* cert = SSL_get1_peer_certificate(ssl);
  if (cert == nullptr) return std::nullopt;
  // Only a certificate that verified names a principal ("requested" lets a client through
  // with none; a bad one fails the handshake).
  if (SSL_get_verify_result(ssl) != X509_V_OK) {
    X509_free(cert);
    return std::nullopt;
  }
  std::string name;
  BIO* bio = BIO_new(BIO_s_mem());
  if (bio != nullptr) {
    // RFC 2253 (most specific first), as Java's X500Principal.getName() gives it.
    X509_NAME_print_ex(bio, X509_get_subject_name(cert), 0, XN_FLAG_RFC2253);
    char* data = nullptr;
    long n = BIO_get_mem_data(bio, &data);
    if (n > 0) name.assign(data, static_cast<size_t>(n));
    BIO_free(bio);
  }
  X509_free(cert);
  if (name.empty()) return std::nullopt;
  return name;
}

std::optional<std::string> tls_principal(SSL* ssl, const PrincipalMapper* mapper) {
  auto subject = tls_subject(ssl);
  if (!subject) return std::string("User:ANONYMOUS");
  if (mapper == nullptr) return "User:" + *subject;
  auto mapped = mapper->map(*subject);
  if (!mapped) return std::nullopt;
  return "User:" + *mapped;
}

}  // namespace shale::security
