#include "security/sasl.h"

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

namespace shale::security {
namespace {

std::string hmac(const EVP_MD* md, std::string_view key, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(md, key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &len);
  return std::string(reinterpret_cast<char*>(out), len);
}

std::string digest(const EVP_MD* md, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), out, &len, md, nullptr);
  return std::string(reinterpret_cast<char*>(out), len);
}

// A SCRAM client (RFC 5802 section 3) built from OpenSSL primitives, to drive ScramServer.
struct Client {
  ScramMechanism mech;
  std::string user, password, nonce = "fyko+d2lbbFgONRv9qkxdawL";
  std::string first_bare() const { return "n=" + user + ",r=" + nonce; }
  std::string final_message(const std::string& server_first, bool corrupt = false,
                            const std::string& nonce_prefix = "") const {
    const EVP_MD* md = mech == ScramMechanism::kSha256 ? EVP_sha256() : EVP_sha512();
    std::string r, s;
    int32_t i = 0;
    size_t pos = 0;
    while (pos < server_first.size()) {
      size_t c = server_first.find(',', pos);
      if (c == std::string::npos) c = server_first.size();
      std::string a = server_first.substr(pos, c - pos);
      if (a.rfind("r=", 0) == 0) r = a.substr(2);
      if (a.rfind("s=", 0) == 0) s = *base64_decode(a.substr(2));
      if (a.rfind("i=", 0) == 0) i = std::stoi(a.substr(2));
      pos = c + 1;
    }
    std::string salted = salted_password(mech, password, s, i);
    std::string client_key = hmac(md, salted, "Client Key");
    std::string without_proof = "c=biws,r=" + nonce_prefix + r;
    std::string auth = first_bare() + "," + server_first + "," + without_proof;
    std::string sig = hmac(md, digest(md, client_key), auth);
    std::string proof = client_key;
    for (size_t k = 0; k < proof.size(); ++k) proof[k] ^= sig[k];
    if (corrupt) proof[0] ^= 1;
    return without_proof + ",p=" + base64_encode(proof);
  }
};

TEST(Scram, FullExchangeSucceedsForBothMechanisms) {
  for (auto m : {ScramMechanism::kSha256, ScramMechanism::kSha512}) {
    auto cred = scram_credential_from_password(m, "pencil", 4096);
    ScramServer server(m);
    Client c{m, "user", "pencil"};
    auto user = server.client_first("n,," + c.first_bare());
    ASSERT_TRUE(user.ok()) << user.error().message;
    EXPECT_EQ(*user, "user");
    auto first = server.server_first(cred);
    ASSERT_TRUE(first.ok());
    EXPECT_EQ(first->rfind("r=" + c.nonce, 0), 0u) << *first;
    auto fin = server.client_final(c.final_message(*first));
    ASSERT_TRUE(fin.ok()) << fin.error().message;
    EXPECT_EQ(fin->rfind("v=", 0), 0u);
  }
}

TEST(Scram, WrongPasswordAndTamperedProofFail) {
  auto m = ScramMechanism::kSha512;
  auto cred = scram_credential_from_password(m, "right", 4096);
  {
    ScramServer server(m);
    Client c{m, "alice", "wrong"};
    ASSERT_TRUE(server.client_first("n,," + c.first_bare()).ok());
    auto first = server.server_first(cred);
    EXPECT_FALSE(server.client_final(c.final_message(*first)).ok());
  }
  {
    ScramServer server(m);
    Client c{m, "alice", "right"};
    ASSERT_TRUE(server.client_first("n,," + c.first_bare()).ok());
    auto first = server.server_first(cred);
    EXPECT_FALSE(server.client_final(c.final_message(*first, true)).ok());
  }
}

TEST(Scram, ToleratesTheClientNonceSentTwiceAsKafkaDoes) {
  // librdkafka 2.0 repeats the client nonce in front of the combined one; Kafka's server
  // accepts any nonce ending with the server-first nonce, and so does Shale.
  auto m = ScramMechanism::kSha256;
  auto cred = scram_credential_from_password(m, "pw", 4096);
  ScramServer server(m);
  Client c{m, "u", "pw"};
  ASSERT_TRUE(server.client_first("n,," + c.first_bare()).ok());
  auto first = *server.server_first(cred);
  EXPECT_TRUE(server.client_final(c.final_message(first, false, c.nonce)).ok());
  // Without the server's part of the nonce it fails.
  ScramServer s2(m);
  ASSERT_TRUE(s2.client_first("n,," + c.first_bare()).ok());
  ASSERT_TRUE(s2.server_first(cred).ok());
  EXPECT_FALSE(s2.client_final("c=biws,r=" + c.nonce + ",p=AAAA").ok());
}

TEST(Scram, MalformedAndOutOfOrderMessagesFail) {
  auto m = ScramMechanism::kSha256;
  for (const char* bad :
       {"", "n", "n,,", "p=tls-unique,,n=u,r=x", "n,,r=abc,n=u", "n,,n=u", "n,,n=,r=abc",
        "n,,n=u=,r=abc", "n,,n=u,r=", "x,,n=u,r=a", "n,,n=u,r=a,m=ext", "n,b,n=u,r=a"}) {
    ScramServer s(m);
    EXPECT_FALSE(s.client_first(bad).ok()) << bad;
    // A failed exchange stays failed.
    EXPECT_FALSE(s.client_first("n,,n=u,r=abc").ok());
  }
  ScramServer s(m);
  EXPECT_FALSE(s.client_final("c=biws,r=a,p=AAAA").ok());  // before client-first
  EXPECT_FALSE(s.server_first(ScramCredential{}).ok());
  ScramServer ok(m);
  auto u = ok.client_first("n,,n=a=2Cb=3Dc,r=nonce");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(*u, "a,b=c");
  auto first = ok.server_first(scram_credential_from_password(m, "p", 4096));
  ASSERT_TRUE(first.ok());
  for (const char* bad : {"", "c=biws", "c=biws,r=x,p=", "c=eHl6,r=nonce,p=AAAA", "p=AAAA"}) {
    ScramServer again(m);
    ASSERT_TRUE(again.client_first("n,,n=a,r=nonce").ok());
    ASSERT_TRUE(again.server_first(scram_credential_from_password(m, "p", 4096)).ok());
    EXPECT_FALSE(again.client_final(bad).ok()) << bad;
  }
}

TEST(Scram, CredentialsRoundTripAndSaltedFormMatchesPassword) {
  auto m = ScramMechanism::kSha512;
  auto c = scram_credential_from_password(m, "secret", 8192);
  auto back = decode_credential(encode_credential(c));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->iterations, 8192);
  EXPECT_EQ(back->salt, c.salt);
  EXPECT_EQ(back->stored_key, c.stored_key);
  EXPECT_EQ(back->server_key, c.server_key);
  auto from_salted =
      scram_credential_from_salted(m, c.salt, salted_password(m, "secret", c.salt, 8192), 8192);
  EXPECT_EQ(from_salted.stored_key, c.stored_key);
  EXPECT_EQ(encode_credential(c).find("secret"), std::string::npos);
  for (const char* bad : {"", "1:2:3", "x:AA==:AA==:AA==", "1:!!:AA==:AA==", "1:A:AA==:AA=="}) {
    EXPECT_FALSE(decode_credential(bad).ok()) << bad;
  }
}

TEST(Scram, RfcVectorSaltedPassword) {
  // RFC 7677 section 3: user "user", password "pencil", salt W22ZaJ0SNY7soEsUEjb6gQ==, 4096.
  auto salt = base64_decode("W22ZaJ0SNY7soEsUEjb6gQ==");
  ASSERT_TRUE(salt.ok());
  std::string sp = salted_password(ScramMechanism::kSha256, "pencil", *salt, 4096);
  auto cred = scram_credential_from_salted(ScramMechanism::kSha256, *salt, sp, 4096);
  std::string auth =
      "n=user,r=rOprNGfwEbeRWgbNEkqO,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
      "s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$"
      "k0";
  EXPECT_EQ(base64_encode(hmac(EVP_sha256(), cred.server_key, auth)),
            "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=");
}

TEST(Base64, RoundTripsAndRejectsGarbage) {
  for (const std::string& s :
       std::vector<std::string>{"", "a", "ab", "abc", "abcd", std::string("\0\xff\x10", 3)}) {
    auto back = base64_decode(base64_encode(s));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, s);
  }
  for (const char* bad : {"a", "abc", "ab!d", "ab,d"}) EXPECT_FALSE(base64_decode(bad).ok()) << bad;
}

TEST(Plain, ParsesMessagesAndRejectsMalformedOnes) {
  auto m = parse_plain(std::string("\0alice\0pw", 9));
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->username, "alice");
  EXPECT_EQ(m->password, "pw");
  EXPECT_EQ(m->authzid, "");
  auto z = parse_plain(std::string("alice\0alice\0pw", 14));
  ASSERT_TRUE(z.ok());
  EXPECT_EQ(z->authzid, "alice");
  for (const std::string& bad :
       {std::string(""), std::string("alice"), std::string("\0alice", 6), std::string("\0\0pw", 4),
        std::string("\0a\0", 3), std::string("\0a\0b\0c", 6)}) {
    EXPECT_FALSE(parse_plain(bad).ok());
  }
  EXPECT_TRUE(secrets_equal("abc", "abc"));
  EXPECT_FALSE(secrets_equal("abc", "abd"));
  EXPECT_FALSE(secrets_equal("abc", "abcd"));
}

TEST(Plain, ReadsUsersFromKafkaJaasConfig) {
  auto u = parse_plain_jaas(
      "org.apache.kafka.common.security.plain.PlainLoginModule required\n"
      "  username=\"admin\" password=\"admin-secret\"\n"
      "  user_admin=\"admin-secret\" user_alice=\"a \\\"quoted\\\" pw\" user_bob=bobpw;");
  ASSERT_TRUE(u.ok()) << u.error().message;
  EXPECT_EQ(u->size(), 3u);
  EXPECT_EQ(u->at("admin"), "admin-secret");
  EXPECT_EQ(u->at("alice"), "a \"quoted\" pw");
  EXPECT_EQ(u->at("bob"), "bobpw");
  EXPECT_FALSE(parse_plain_jaas("X required user_a=\"unterminated;").ok());
  EXPECT_FALSE(parse_plain_jaas("X required novalue;").ok());
}

TEST(Scram, MechanismNames) {
  EXPECT_EQ(scram_mechanism("SCRAM-SHA-256"), ScramMechanism::kSha256);
  EXPECT_EQ(scram_mechanism("SCRAM-SHA-512"), ScramMechanism::kSha512);
  EXPECT_FALSE(scram_mechanism("SCRAM-SHA-1").has_value());
  EXPECT_EQ(scram_mechanism(int8_t{2}), ScramMechanism::kSha512);
  EXPECT_FALSE(scram_mechanism(int8_t{0}).has_value());
  EXPECT_STREQ(mechanism_name(ScramMechanism::kSha256), "SCRAM-SHA-256");
}

}  // namespace
}  // namespace shale::security
