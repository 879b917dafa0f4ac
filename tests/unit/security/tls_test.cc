#include "security/tls.h"

#include <gtest/gtest.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <asio/ssl/context.hpp>

namespace shale::security {
namespace {

// A key and a certificate made in memory with OpenSSL (no key material in the repository).
struct Cert {
  EVP_PKEY* key = nullptr;
  X509* cert = nullptr;
  ~Cert() {
    EVP_PKEY_free(key);
    X509_free(cert);
  }
  std::string key_pem() const {
    BIO* b = BIO_new(BIO_s_mem());
    PEM_write_bio_PrivateKey(b, key, nullptr, nullptr, 0, nullptr, nullptr);
    return drain(b);
  }
  std::string cert_pem() const {
    BIO* b = BIO_new(BIO_s_mem());
    PEM_write_bio_X509(b, cert);
    return drain(b);
  }
  static std::string drain(BIO* b) {
    char* data = nullptr;
    long n = BIO_get_mem_data(b, &data);
    std::string s(data, static_cast<size_t>(n));
    BIO_free(b);
    return s;
  }
};

// Subject from (field, value) pairs; signed by `issuer` (self-signed when null).
std::unique_ptr<Cert> make_cert(std::vector<std::pair<const char*, const char*>> subject,
                                const Cert* issuer, long serial) {
  auto c = std::make_unique<Cert>();
  c->key = EVP_EC_gen("P-256");
  c->cert = X509_new();
  X509_set_version(c->cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(c->cert), serial);
  X509_gmtime_adj(X509_getm_notBefore(c->cert), -60);
  X509_gmtime_adj(X509_getm_notAfter(c->cert), 3600);
  X509_set_pubkey(c->cert, c->key);
  X509_NAME* name = X509_get_subject_name(c->cert);
  for (auto [f, v] : subject) {
    X509_NAME_add_entry_by_txt(name, f, MBSTRING_ASC, reinterpret_cast<const unsigned char*>(v), -1,
                               -1, 0);
  }
  X509_set_issuer_name(c->cert, issuer ? X509_get_subject_name(issuer->cert) : name);
  X509V3_CTX v3;
  X509V3_set_ctx_nodb(&v3);
  X509V3_set_ctx(&v3, issuer ? issuer->cert : c->cert, c->cert, nullptr, nullptr, 0);
  X509_EXTENSION* bc = X509V3_EXT_conf_nid(nullptr, &v3, NID_basic_constraints,
                                           issuer ? "critical,CA:FALSE" : "critical,CA:TRUE");
  X509_add_ext(c->cert, bc, -1);
  X509_EXTENSION_free(bc);
  X509_sign(c->cert, issuer ? issuer->key : c->key, EVP_sha256());
  return c;
}

struct Pki {
  std::unique_ptr<Cert> ca = make_cert({{"CN", "Test CA"}}, nullptr, 1);
  std::unique_ptr<Cert> server = make_cert({{"CN", "localhost"}}, ca.get(), 2);
  std::unique_ptr<Cert> client = make_cert({{"O", "Shale"}, {"CN", "alice"}}, ca.get(), 3);

  TlsSettings settings(ClientAuth auth) const {
    TlsSettings s;
    s.keystore_certificate_chain = server->cert_pem();
    s.keystore_key = server->key_pem();
    s.truststore_certificates = ca->cert_pem();
    s.client_auth = auth;
    return s;
  }
};

// Runs a TLS handshake between a client SSL and the server context through memory BIOs;
// returns the server's principal, or "" when the handshake fails.
std::string handshake(asio::ssl::context& server_ctx, const Cert* client_cert, const Cert* ca,
                      const PrincipalMapper* mapper = nullptr) {
  SSL_CTX* cctx = SSL_CTX_new(TLS_client_method());
  if (ca != nullptr) X509_STORE_add_cert(SSL_CTX_get_cert_store(cctx), ca->cert);
  SSL_CTX_set_verify(cctx, SSL_VERIFY_PEER, nullptr);
  if (client_cert != nullptr) {
    SSL_CTX_use_certificate(cctx, client_cert->cert);
    SSL_CTX_use_PrivateKey(cctx, client_cert->key);
  }
  SSL* c = SSL_new(cctx);
  SSL* s = SSL_new(server_ctx.native_handle());
  BIO *c_bio = nullptr, *s_bio = nullptr;
  BIO_new_bio_pair(&c_bio, 0, &s_bio, 0);
  SSL_set_bio(c, c_bio, c_bio);
  SSL_set_bio(s, s_bio, s_bio);
  SSL_set_connect_state(c);
  SSL_set_accept_state(s);
  bool c_done = false, s_done = false, failed = false;
  for (int i = 0; i < 100 && !(c_done && s_done) && !failed; ++i) {
    if (!c_done) {
      int r = SSL_do_handshake(c);
      if (r == 1)
        c_done = true;
      else if (SSL_get_error(c, r) != SSL_ERROR_WANT_READ)
        failed = true;
    }
    if (!s_done) {
      int r = SSL_do_handshake(s);
      if (r == 1)
        s_done = true;
      else if (SSL_get_error(s, r) != SSL_ERROR_WANT_READ)
        failed = true;
    }
  }
  std::string principal =
      !failed && c_done && s_done ? tls_principal(s, mapper).value_or("<no rule>") : "";
  SSL_free(c);
  SSL_free(s);
  SSL_CTX_free(cctx);
  return principal;
}

TEST(Tls, HandshakeWithoutClientAuthIsAnonymous) {
  Pki pki;
  auto ctx = make_server_context(pki.settings(ClientAuth::kNone));
  ASSERT_TRUE(ctx.ok()) << ctx.error().message;
  EXPECT_EQ(handshake(**ctx, nullptr, pki.ca.get()), "User:ANONYMOUS");
  EXPECT_EQ(handshake(**ctx, pki.client.get(), pki.ca.get()), "User:ANONYMOUS");
}

TEST(Tls, RequiredClientAuthNamesTheCertificateSubject) {
  Pki pki;
  auto ctx = make_server_context(pki.settings(ClientAuth::kRequired));
  ASSERT_TRUE(ctx.ok()) << ctx.error().message;
  EXPECT_EQ(handshake(**ctx, pki.client.get(), pki.ca.get()), "User:CN=alice,O=Shale");
  EXPECT_EQ(handshake(**ctx, nullptr, pki.ca.get()), "");      // no certificate: refused
  auto stranger = make_cert({{"CN", "mallory"}}, nullptr, 9);  // not signed by the CA
  EXPECT_EQ(handshake(**ctx, stranger.get(), pki.ca.get()), "");
}

TEST(Tls, RequestedClientAuthAcceptsClientsWithout) {
  Pki pki;
  auto ctx = make_server_context(pki.settings(ClientAuth::kRequested));
  ASSERT_TRUE(ctx.ok()) << ctx.error().message;
  EXPECT_EQ(handshake(**ctx, nullptr, pki.ca.get()), "User:ANONYMOUS");
  EXPECT_EQ(handshake(**ctx, pki.client.get(), pki.ca.get()), "User:CN=alice,O=Shale");
}

TEST(Tls, ConfigurationErrorsNameTheKey) {
  Pki pki;
  auto err = [&](TlsSettings s) {
    auto r = make_server_context(s);
    return r.ok() ? std::string() : r.error().message;
  };
  TlsSettings s = pki.settings(ClientAuth::kNone);
  s.keystore_key = pki.client->key_pem();  // does not match the certificate
  EXPECT_NE(err(s).find("ssl.keystore.key"), std::string::npos) << err(s);
  EXPECT_NE(err(s).find("mismatch"), std::string::npos) << err(s);
  s = pki.settings(ClientAuth::kNone);
  s.keystore_type = "JKS";
  EXPECT_NE(err(s).find("ssl.keystore.type"), std::string::npos);
  s = pki.settings(ClientAuth::kNone);
  s.keystore_certificate_chain.clear();
  EXPECT_NE(err(s).find("ssl.keystore.location"), std::string::npos);
  s = pki.settings(ClientAuth::kNone);
  s.enabled_protocols = {"TLSv1.1"};
  EXPECT_NE(err(s).find("ssl.enabled.protocols"), std::string::npos);
  s.enabled_protocols = {"SSLv9"};
  EXPECT_NE(err(s).find("ssl.enabled.protocols"), std::string::npos);
  s = pki.settings(ClientAuth::kRequired);
  s.truststore_certificates.clear();
  EXPECT_NE(err(s).find("truststore"), std::string::npos);
  s = pki.settings(ClientAuth::kNone);
  s.cipher_suites = {"TLS_NOT_A_SUITE"};
  EXPECT_NE(err(s).find("ssl.cipher.suites"), std::string::npos);
  s.keystore_location = "/nonexistent/keystore.pem";
  EXPECT_NE(err(s).find("ssl.cipher.suites"), std::string::npos);
  s.cipher_suites.clear();
  EXPECT_NE(err(s).find("ssl.keystore.location"), std::string::npos);
}

TEST(Tls, CipherSuitesTakeIanaNamesForBothVersions) {
  Pki pki;
  TlsSettings s = pki.settings(ClientAuth::kNone);
  s.cipher_suites = {"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "TLS_AES_256_GCM_SHA384"};
  auto ctx = make_server_context(s);
  ASSERT_TRUE(ctx.ok()) << ctx.error().message;
  EXPECT_EQ(handshake(**ctx, nullptr, pki.ca.get()), "User:ANONYMOUS");
  s.enabled_protocols = {"TLSv1.2"};
  ctx = make_server_context(s);
  ASSERT_TRUE(ctx.ok()) << ctx.error().message;
  EXPECT_EQ(handshake(**ctx, nullptr, pki.ca.get()), "User:ANONYMOUS");
}

TEST(Tls, PrincipalMappingRulesAsKafkaWritesThem) {
  auto m = PrincipalMapper::parse(
      "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,"
      "RULE:^CN=([a-zA-Z]+),O=(.*)$/$1@$2/L, DEFAULT");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->map("CN=kafka1,OU=ServiceUsers,O=Org"), "kafka1");
  EXPECT_EQ(m->map("CN=Alice,O=Shale"), "alice@shale");
  EXPECT_EQ(m->map("CN=a-b,O=X"), "CN=a-b,O=X");  // falls through to DEFAULT
  auto strict = PrincipalMapper::parse("RULE:^CN=(.*),O=Shale$/$1/U");
  ASSERT_TRUE(strict.ok());
  EXPECT_EQ(strict->map("CN=alice,O=Shale"), "ALICE");
  EXPECT_FALSE(strict->map("CN=alice,O=Other").has_value());
  for (const char* bad : {"", "RULE:abc", "RULE:(/x/", "NOPE", "DEFAULT DEFAULT"}) {
    EXPECT_FALSE(PrincipalMapper::parse(bad).ok()) << bad;
  }
  // Through a handshake: the mapped name, or no connection when no rule matches.
  Pki pki;
  auto ctx = make_server_context(pki.settings(ClientAuth::kRequired));
  ASSERT_TRUE(ctx.ok());
  EXPECT_EQ(handshake(**ctx, pki.client.get(), pki.ca.get(), &*strict), "User:ALICE");
  auto other = PrincipalMapper::parse("RULE:^CN=bob$/bob/");
  EXPECT_EQ(handshake(**ctx, pki.client.get(), pki.ca.get(), &*other), "<no rule>");
}

TEST(Tls, ParsesClientAuth) {
  EXPECT_EQ(*parse_client_auth("none"), ClientAuth::kNone);
  EXPECT_EQ(*parse_client_auth("requested"), ClientAuth::kRequested);
  EXPECT_EQ(*parse_client_auth("required"), ClientAuth::kRequired);
  EXPECT_FALSE(parse_client_auth("yes").ok());
}

}  // namespace
}  // namespace shale::security
