#include "app/security_setup.h"

#include <spdlog/spdlog.h>

#include "security/tls.h"

namespace shale::app {

namespace {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t comma = s.find(',', pos);
    if (comma == std::string::npos) comma = s.size();
    std::string item = s.substr(pos, comma - pos);
    while (!item.empty() && std::isspace(static_cast<unsigned char>(item.front())))
      item.erase(0, 1);
    while (!item.empty() && std::isspace(static_cast<unsigned char>(item.back()))) item.pop_back();
    if (!item.empty()) out.push_back(item);
    pos = comma + 1;
  }
  return out;
}

}  // namespace

Result<std::vector<net::ListenerSpec>> listener_specs(const Config& cfg) {
  std::vector<net::ListenerSpec> out;
  for (const auto& l : cfg.listeners()) {
    net::ListenerSpec spec{l.name, l.host, l.port};
    spec.security_protocol = cfg.security_protocol(l.name);
    spec.sasl = spec.security_protocol.rfind("SASL_", 0) == 0;
    if (spec.security_protocol == "SSL" || spec.security_protocol == "SASL_SSL") {
      auto v = [&](const char* key) { return cfg.listener_value(l.name, key); };
      security::TlsSettings t;
      t.keystore_type = v("ssl.keystore.type");
      t.keystore_location = v("ssl.keystore.location");
      t.keystore_certificate_chain = v("ssl.keystore.certificate.chain");
      t.keystore_key = v("ssl.keystore.key");
      t.key_password = v("ssl.key.password");
      t.truststore_location = v("ssl.truststore.location");
      t.truststore_certificates = v("ssl.truststore.certificates");
      // The truststore type matters only when a truststore is given.
      t.truststore_type = t.truststore_location.empty() && t.truststore_certificates.empty()
                              ? "PEM"
                              : v("ssl.truststore.type");
      auto auth = security::parse_client_auth(v("ssl.client.auth"));
      if (!auth.ok())
        return Error::make(Errc::kInvalidArgument,
                           "listener " + l.name + ": " + auth.error().message);
      t.client_auth = *auth;
      t.enabled_protocols = split(v("ssl.enabled.protocols"));
      t.cipher_suites = split(v("ssl.cipher.suites"));
      auto ctx = security::make_server_context(t);
      if (!ctx.ok()) {
        return Error::make(
            Errc::kInvalidArgument,
            "listener " + l.name + " (" + spec.security_protocol + "): " + ctx.error().message);
      }
      spec.tls = std::move(ctx).value();
      std::string rules = v("ssl.principal.mapping.rules");
      if (!rules.empty() && rules != "DEFAULT") {
        auto mapper = security::PrincipalMapper::parse(rules);
        if (!mapper.ok()) {
          return Error::make(Errc::kInvalidArgument,
                             "listener " + l.name + ": " + mapper.error().message);
        }
        spec.principal_mapper =
            std::make_shared<const security::PrincipalMapper>(std::move(mapper).value());
      }
    }
    out.push_back(std::move(spec));
  }
  return out;
}

Result<std::shared_ptr<const security::SaslSettings>> sasl_settings(const Config& cfg) {
  auto s = std::make_shared<security::SaslSettings>();
  s->enabled_mechanisms = cfg.get_list("sasl.enabled.mechanisms");
  s->failed_authentication_delay_ms = cfg.get_int("connection.failed.authentication.delay.ms");
  const std::string& global = cfg.get_string("sasl.jaas.config");
  if (!global.empty()) {
    auto users = security::parse_plain_jaas(global);
    if (!users.ok())
      return Error::make(Errc::kInvalidArgument, "sasl.jaas.config: " + users.error().message);
    s->plain_users[""] = std::move(users).value();
  }
  for (const auto& l : cfg.listeners()) {
    std::string lower = l.name;
    for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    auto mechs = cfg.listener_keys().find("listener.name." + lower + ".sasl.enabled.mechanisms");
    if (mechs != cfg.listener_keys().end()) {
      auto list = split(mechs->second);
      for (const auto& m : list) {
        if (m != "PLAIN" && !security::scram_mechanism(m)) {
          return Error::make(Errc::kInvalidArgument, mechs->first +
                                                         ": unsupported SASL mechanism '" + m +
                                                         "' (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)");
        }
      }
      s->listener_mechanisms[l.name] = std::move(list);
    }
    auto it = cfg.listener_keys().find("listener.name." + lower + ".plain.sasl.jaas.config");
    if (it == cfg.listener_keys().end()) continue;
    auto users = security::parse_plain_jaas(it->second);
    if (!users.ok())
      return Error::make(Errc::kInvalidArgument, it->first + ": " + users.error().message);
    s->plain_users[l.name] = std::move(users).value();
  }
  return std::shared_ptr<const security::SaslSettings>(std::move(s));
}

}  // namespace shale::app
