#include "security/sasl.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <cctype>
#include <charconv>
#include <stdexcept>
#include <vector>

namespace shale::security {

namespace {

Error bad(std::string msg) { return Error::make(Errc::kInvalidArgument, std::move(msg)); }

const EVP_MD* md(ScramMechanism m) {
  return m == ScramMechanism::kSha256 ? EVP_sha256() : EVP_sha512();
}

std::string hmac(ScramMechanism m, std::string_view key, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(md(m), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &len);
  return std::string(reinterpret_cast<char*>(out), len);
}

std::string hash(ScramMechanism m, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), out, &len, md(m), nullptr);
  return std::string(reinterpret_cast<char*>(out), len);
}

std::string random_bytes(size_t n) {
  std::string s(n, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(s.data()), static_cast<int>(n)) != 1) {
    throw std::runtime_error("RAND_bytes failed");
  }
  return s;
}

// Splits "a=1,b=2" into its attributes (SCRAM messages); values may contain '='.
std::vector<std::pair<char, std::string_view>> attributes(std::string_view msg) {
  std::vector<std::pair<char, std::string_view>> out;
  size_t pos = 0;
  while (pos <= msg.size()) {
    size_t comma = msg.find(',', pos);
    if (comma == std::string_view::npos) comma = msg.size();
    std::string_view item = msg.substr(pos, comma - pos);
    if (item.size() >= 2 && item[1] == '=') {
      out.emplace_back(item[0], item.substr(2));
    } else {
      out.emplace_back('\0', item);  // malformed: the caller rejects it
    }
    pos = comma + 1;
  }
  return out;
}

// saslname: "=2C" is ',' and "=3D" is '='; any other '=' is malformed.
Result<std::string> decode_saslname(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '=') {
      out.push_back(s[i]);
      continue;
    }
    std::string_view esc = s.substr(i + 1, 2);
    if (esc == "2C") {
      out.push_back(',');
    } else if (esc == "3D") {
      out.push_back('=');
    } else {
      return bad("malformed user name");
    }
    i += 2;
  }
  return out;
}

bool printable_nonce(std::string_view n) {
  if (n.empty()) return false;
  for (char c : n) {
    if (c < 0x21 || c > 0x7e || c == ',') return false;
  }
  return true;
}

}  // namespace

std::optional<ScramMechanism> scram_mechanism(std::string_view name) {
  if (name == "SCRAM-SHA-256") return ScramMechanism::kSha256;
  if (name == "SCRAM-SHA-512") return ScramMechanism::kSha512;
  return std::nullopt;
}

std::optional<ScramMechanism> scram_mechanism(int8_t type) {
  if (type == 1) return ScramMechanism::kSha256;
  if (type == 2) return ScramMechanism::kSha512;
  return std::nullopt;
}

const char* mechanism_name(ScramMechanism m) {
  return m == ScramMechanism::kSha256 ? "SCRAM-SHA-256" : "SCRAM-SHA-512";
}

std::string base64_encode(std::string_view raw) {
  std::string out(4 * ((raw.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(raw.data()),
                          static_cast<int>(raw.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

Result<std::string> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) return bad("malformed base64");
  for (char c : text) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '/' || c == '=')) {
      return bad("malformed base64");
    }
  }
  if (text.empty()) return std::string();
  std::string out(text.size() / 4 * 3 + 1, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(text.data()),
                          static_cast<int>(text.size()));
  if (n < 0) return bad("malformed base64");
  size_t pad = 0;
  if (text.back() == '=') ++pad;
  if (text.size() >= 2 && text[text.size() - 2] == '=') ++pad;
  if (static_cast<size_t>(n) < pad) return bad("malformed base64");
  out.resize(static_cast<size_t>(n) - pad);
  return out;
}

std::string salted_password(ScramMechanism m, std::string_view password, std::string_view salt,
                            int32_t iterations) {
  std::string out(static_cast<size_t>(EVP_MD_get_size(md(m))), '\0');
  PKCS5_PBKDF2_HMAC(password.data(), static_cast<int>(password.size()),
                    reinterpret_cast<const unsigned char*>(salt.data()),
                    static_cast<int>(salt.size()), iterations, md(m), static_cast<int>(out.size()),
                    reinterpret_cast<unsigned char*>(out.data()));
  return out;
}

ScramCredential scram_credential_from_salted(ScramMechanism m, std::string salt,
                                             std::string_view salted, int32_t iterations) {
  ScramCredential c;
  c.salt = std::move(salt);
  c.iterations = iterations;
  c.stored_key = hash(m, hmac(m, salted, "Client Key"));
  c.server_key = hmac(m, salted, "Server Key");
  return c;
}

ScramCredential scram_credential_from_password(ScramMechanism m, std::string_view password,
                                               int32_t iterations) {
  std::string salt = random_bytes(16);
  std::string sp = salted_password(m, password, salt, iterations);
  return scram_credential_from_salted(m, std::move(salt), sp, iterations);
}

std::string encode_credential(const ScramCredential& c) {
  return std::to_string(c.iterations) + ":" + base64_encode(c.salt) + ":" +
         base64_encode(c.stored_key) + ":" + base64_encode(c.server_key);
}

Result<ScramCredential> decode_credential(std::string_view v) {
  std::vector<std::string_view> parts;
  size_t pos = 0;
  while (parts.size() < 4) {
    size_t colon = v.find(':', pos);
    if (colon == std::string_view::npos) colon = v.size();
    parts.push_back(v.substr(pos, colon - pos));
    if (colon == v.size()) break;
    pos = colon + 1;
  }
  if (parts.size() != 4) return bad("malformed SCRAM credential");
  ScramCredential c;
  auto [p, ec] = std::from_chars(parts[0].data(), parts[0].data() + parts[0].size(), c.iterations);
  if (ec != std::errc() || p != parts[0].data() + parts[0].size()) {
    return bad("malformed SCRAM credential");
  }
  auto salt = base64_decode(parts[1]);
  auto sk = base64_decode(parts[2]);
  auto svk = base64_decode(parts[3]);
  if (!salt.ok() || !sk.ok() || !svk.ok()) return bad("malformed SCRAM credential");
  c.salt = std::move(salt).value();
  c.stored_key = std::move(sk).value();
  c.server_key = std::move(svk).value();
  return c;
}

bool secrets_equal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

Result<PlainMessage> parse_plain(std::string_view msg) {
  size_t first = msg.find('\0');
  if (first == std::string_view::npos) return bad("malformed PLAIN message");
  size_t second = msg.find('\0', first + 1);
  if (second == std::string_view::npos) return bad("malformed PLAIN message");
  if (msg.find('\0', second + 1) != std::string_view::npos) return bad("malformed PLAIN message");
  PlainMessage m;
  m.authzid = std::string(msg.substr(0, first));
  m.username = std::string(msg.substr(first + 1, second - first - 1));
  m.password = std::string(msg.substr(second + 1));
  if (m.username.empty() || m.password.empty()) return bad("empty PLAIN user name or password");
  return m;
}

Result<std::map<std::string, std::string>> parse_plain_jaas(std::string_view jaas) {
  std::map<std::string, std::string> users;
  size_t i = 0;
  auto skip_ws = [&] {
    while (i < jaas.size() && std::isspace(static_cast<unsigned char>(jaas[i]))) ++i;
  };
  // "<LoginModule class> <flag> key=value ... ;"
  skip_ws();
  while (i < jaas.size() && !std::isspace(static_cast<unsigned char>(jaas[i]))) ++i;  // class
  skip_ws();
  while (i < jaas.size() && !std::isspace(static_cast<unsigned char>(jaas[i])) && jaas[i] != ';')
    ++i;  // control flag
  for (;;) {
    skip_ws();
    if (i >= jaas.size() || jaas[i] == ';') break;
    size_t eq = jaas.find('=', i);
    if (eq == std::string_view::npos) return bad("JAAS option without '=' in sasl.jaas.config");
    std::string key(jaas.substr(i, eq - i));
    while (!key.empty() && std::isspace(static_cast<unsigned char>(key.back()))) key.pop_back();
    i = eq + 1;
    skip_ws();
    std::string value;
    if (i < jaas.size() && jaas[i] == '"') {
      ++i;
      while (i < jaas.size() && jaas[i] != '"') {
        if (jaas[i] == '\\' && i + 1 < jaas.size()) ++i;
        value.push_back(jaas[i++]);
      }
      if (i >= jaas.size()) return bad("unterminated quoted value in sasl.jaas.config");
      ++i;
    } else {
      while (i < jaas.size() && !std::isspace(static_cast<unsigned char>(jaas[i])) &&
             jaas[i] != ';') {
        value.push_back(jaas[i++]);
      }
    }
    if (key.rfind("user_", 0) == 0 && key.size() > 5) users[key.substr(5)] = value;
  }
  return users;
}

Result<std::string> ScramServer::client_first(std::string_view msg) {
  if (state_ != State::kStart) return bad("SCRAM client-first message out of order");
  state_ = State::kFailed;
  // gs2-header: "n,," or "y,," (no channel binding), optionally with an authzid "n,a=x,".
  if (msg.size() < 3 || (msg[0] != 'n' && msg[0] != 'y') || msg[1] != ',') {
    return bad("SCRAM: unsupported or malformed GS2 header (channel binding is not supported)");
  }
  size_t second = msg.find(',', 2);
  if (second == std::string_view::npos) return bad("SCRAM: malformed GS2 header");
  std::string_view authzid = msg.substr(2, second - 2);
  if (!authzid.empty() && authzid.rfind("a=", 0) != 0) return bad("SCRAM: malformed GS2 header");
  gs2_header_ = std::string(msg.substr(0, second + 1));
  client_first_bare_ = std::string(msg.substr(second + 1));
  auto attrs = attributes(client_first_bare_);
  if (attrs.size() < 2 || attrs[0].first != 'n' || attrs[1].first != 'r') {
    return bad("SCRAM: malformed client-first message");
  }
  // Further attributes are extensions (Kafka's tokenauth); none is acted upon.
  for (size_t i = 2; i < attrs.size(); ++i) {
    if (attrs[i].first == '\0') return bad("SCRAM: malformed client-first message");
    if (attrs[i].first == 'm') return bad("SCRAM: mandatory extension not supported");
  }
  auto user = decode_saslname(attrs[0].second);
  if (!user.ok() || user->empty()) return bad("SCRAM: malformed user name");
  if (!printable_nonce(attrs[1].second)) return bad("SCRAM: malformed nonce");
  user_ = std::move(user).value();
  client_nonce_ = std::string(attrs[1].second);
  state_ = State::kClientFirst;
  return user_;
}

Result<std::string> ScramServer::server_first(const ScramCredential& cred) {
  if (state_ != State::kClientFirst) return bad("SCRAM server-first out of order");
  cred_ = cred;
  nonce_ = client_nonce_ + base64_encode(random_bytes(18));
  server_first_ =
      "r=" + nonce_ + ",s=" + base64_encode(cred.salt) + ",i=" + std::to_string(cred.iterations);
  state_ = State::kServerFirst;
  return server_first_;
}

Result<std::string> ScramServer::client_final(std::string_view msg) {
  if (state_ != State::kServerFirst) return bad("SCRAM client-final message out of order");
  state_ = State::kFailed;
  // "c=<b64 gs2 header>,r=<nonce>[,ext...],p=<b64 proof>"; the proof is last.
  size_t p = msg.rfind(",p=");
  if (p == std::string_view::npos) return bad("SCRAM: client-final message without a proof");
  std::string_view without_proof = msg.substr(0, p);
  auto attrs = attributes(without_proof);
  if (attrs.size() < 2 || attrs[0].first != 'c' || attrs[1].first != 'r') {
    return bad("SCRAM: malformed client-final message");
  }
  auto cb = base64_decode(attrs[0].second);
  if (!cb.ok() || *cb != gs2_header_) return bad("SCRAM: channel binding does not match");
  // Kafka accepts a nonce that ends with the server-first nonce (librdkafka up to 2.x sends
  // the client nonce twice), so Shale does too; the server's random part is still required.
  std::string_view got_nonce = attrs[1].second;
  if (got_nonce.size() < nonce_.size() ||
      got_nonce.substr(got_nonce.size() - nonce_.size()) != nonce_) {
    return bad("SCRAM: nonce does not match");
  }
  auto proof = base64_decode(msg.substr(p + 3));
  if (!proof.ok()) return bad("SCRAM: malformed proof");
  std::string auth_message =
      client_first_bare_ + "," + server_first_ + "," + std::string(without_proof);
  std::string client_signature = hmac(mech_, cred_.stored_key, auth_message);
  if (proof->size() != client_signature.size()) return bad("SCRAM: invalid credentials");
  std::string client_key(proof->size(), '\0');
  for (size_t i = 0; i < client_key.size(); ++i) client_key[i] = (*proof)[i] ^ client_signature[i];
  if (!secrets_equal(hash(mech_, client_key), cred_.stored_key)) {
    return bad("SCRAM: invalid credentials");
  }
  state_ = State::kDone;
  return "v=" + base64_encode(hmac(mech_, cred_.server_key, auth_message));
}

}  // namespace shale::security
