#include "broker/security_handlers.h"

#include <map>
#include <set>

#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <asio/this_coro.hpp>

#include "meta/meta_store.h"
#include "protocol/errors.h"
#include "protocol/generated/alter_user_scram_credentials_request.h"
#include "protocol/generated/alter_user_scram_credentials_response.h"
#include "protocol/generated/describe_client_quotas_request.h"
#include "protocol/generated/describe_client_quotas_response.h"
#include "protocol/generated/describe_user_scram_credentials_request.h"
#include "protocol/generated/describe_user_scram_credentials_response.h"
#include "protocol/generated/sasl_authenticate_request.h"
#include "protocol/generated/sasl_authenticate_response.h"
#include "protocol/generated/sasl_handshake_request.h"
#include "protocol/generated/sasl_handshake_response.h"

namespace shale::broker {

namespace {

using protocol::ErrorCode;
using security::ScramMechanism;

// The SASL exchange of one connection (net::Session::sasl).
struct SaslState {
  std::string mechanism;
  std::optional<security::ScramServer> scram;
};

log::RateLimiter& failed_log() {
  static log::RateLimiter l{1000};
  return l;
}

int16_t err(ErrorCode e) { return static_cast<int16_t>(e); }

std::string scram_prefix(const BrokerConfig& cfg) { return cfg.ns + "/scram/"; }

const security::SaslSettings& settings(Broker& b) {
  static const security::SaslSettings defaults;
  return b.config().sasl ? *b.config().sasl : defaults;
}

bool enabled(Broker& b, const std::string& listener, const std::string& mech) {
  const auto& m = settings(b).mechanisms_of(listener);
  return std::find(m.begin(), m.end(), mech) != m.end();
}

// Fails the exchange: logged once, answered after the delay, then the connection closes.
asio::awaitable<protocol::SaslAuthenticateResponse> fail(Broker& b, const RequestContext& ctx,
                                                         const std::string& mechanism,
                                                         const std::string& user,
                                                         const std::string& reason) {
  uint64_t suppressed = 0;
  if (failed_log().allow(&suppressed)) {
    spdlog::warn("failed authentication from {} (listener {}, mechanism {}, user '{}'): {}{}",
                 ctx.conn.peer, ctx.conn.listener, mechanism, user, reason,
                 suppressed ? fmt::format(" [{} similar suppressed]", suppressed) : "");
  }
  ctx.conn.session->sasl.reset();
  ctx.conn.session->close_after_response = true;
  int64_t delay = settings(b).failed_authentication_delay_ms;
  if (delay > 0) {
    asio::steady_timer t(co_await asio::this_coro::executor);
    t.expires_after(std::chrono::milliseconds(delay));
    std::error_code ec;
    co_await t.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
  protocol::SaslAuthenticateResponse r;
  r.error_code = err(ErrorCode::kSaslAuthenticationFailed);
  r.error_message =
      "Authentication failed during authentication due to invalid credentials "
      "with SASL mechanism " +
      mechanism;
  co_return r;
}

void authenticated(const RequestContext& ctx, const std::string& user) {
  ctx.conn.session->principal = "User:" + user;
  ctx.conn.session->authenticated = true;
  ctx.conn.session->sasl_raw_tokens = false;
  ctx.conn.session->sasl.reset();
}

asio::awaitable<std::optional<protocol::SaslHandshakeResponse>> handshake(
    Broker& b, const RequestContext& ctx, protocol::SaslHandshakeRequest& req) {
  protocol::SaslHandshakeResponse r;
  r.mechanisms = settings(b).mechanisms_of(ctx.conn.listener);
  auto& s = *ctx.conn.session;
  const bool sasl_listener = ctx.conn.security_protocol.rfind("SASL_", 0) == 0;
  if (!sasl_listener || s.authenticated || s.sasl) {
    r.error_code = err(ErrorCode::kIllegalSaslState);
    s.close_after_response = true;
    co_return r;
  }
  if (!enabled(b, ctx.conn.listener, req.mechanism)) {
    uint64_t suppressed = 0;
    if (failed_log().allow(&suppressed)) {
      spdlog::warn("closing connection from {} (listener {}): unsupported SASL mechanism '{}'",
                   ctx.conn.peer, ctx.conn.listener, req.mechanism.substr(0, 64));
    }
    r.error_code = err(ErrorCode::kUnsupportedSaslMechanism);
    s.close_after_response = true;
    co_return r;
  }
  auto st = std::make_shared<SaslState>();
  st->mechanism = req.mechanism;
  if (auto m = security::scram_mechanism(req.mechanism)) st->scram.emplace(*m);
  s.sasl = st;
  // v0: the tokens follow as raw frames (Dispatcher::set_raw_sasl_handler).
  s.sasl_raw_tokens = ctx.version() == 0;
  co_return r;
}

asio::awaitable<std::optional<protocol::SaslAuthenticateResponse>> authenticate(
    Broker& b, const RequestContext& ctx, protocol::SaslAuthenticateRequest& req) {
  auto& s = *ctx.conn.session;
  auto st = std::static_pointer_cast<SaslState>(s.sasl);
  if (!st) {
    protocol::SaslAuthenticateResponse r;
    r.error_code = err(ErrorCode::kIllegalSaslState);
    r.error_message = "SaslAuthenticate without a SaslHandshake";
    s.close_after_response = true;
    co_return r;
  }
  std::string_view bytes = req.auth_bytes.view();
  if (st->mechanism == "PLAIN") {
    auto m = security::parse_plain(bytes);
    if (!m.ok()) co_return co_await fail(b, ctx, "PLAIN", "", m.error().message);
    if (!m->authzid.empty() && m->authzid != m->username) {
      co_return co_await fail(b, ctx, "PLAIN", m->username,
                              "authorization id differs from the user name");
    }
    const auto* users = settings(b).plain_users_of(ctx.conn.listener);
    auto it = users ? users->find(m->username) : decltype(users->end()){};
    if (users == nullptr || it == users->end() ||
        !security::secrets_equal(it->second, m->password)) {
      co_return co_await fail(b, ctx, "PLAIN", m->username, "invalid user name or password");
    }
    authenticated(ctx, m->username);
    co_return protocol::SaslAuthenticateResponse{};
  }
  auto& scram = *st->scram;
  const std::string mech = st->mechanism;
  if (scram.username().empty()) {
    auto user = scram.client_first(bytes);
    if (!user.ok()) co_return co_await fail(b, ctx, mech, "", user.error().message);
    std::string key = scram_key(b.config(), scram.mechanism(), *user);
    meta::MetaStore* ms = &b.meta();
    auto lookup = [ms, key] { return ms->get(key); };
    auto kv = co_await b.blocking(lookup);
    if (!kv.ok()) co_return co_await fail(b, ctx, mech, *user, "credential store unavailable");
    if (!kv->has_value()) co_return co_await fail(b, ctx, mech, *user, "unknown user");
    auto cred = security::decode_credential((*kv)->value);
    if (!cred.ok()) co_return co_await fail(b, ctx, mech, *user, "stored credential is damaged");
    auto first = scram.server_first(*cred);
    if (!first.ok()) co_return co_await fail(b, ctx, mech, *user, first.error().message);
    protocol::SaslAuthenticateResponse r;
    r.auth_bytes = Buffer::copy(*first);
    co_return r;
  }
  auto fin = scram.client_final(bytes);
  if (!fin.ok()) co_return co_await fail(b, ctx, mech, scram.username(), fin.error().message);
  std::string user = scram.username();
  authenticated(ctx, user);
  protocol::SaslAuthenticateResponse r;
  r.auth_bytes = Buffer::copy(*fin);
  co_return r;
}

asio::awaitable<std::optional<protocol::DescribeUserScramCredentialsResponse>> describe(
    Broker& b, const RequestContext&, protocol::DescribeUserScramCredentialsRequest& req) {
  meta::MetaStore* ms = &b.meta();
  std::string prefix = scram_prefix(b.config());
  auto load = [ms, prefix] { return ms->prefix(prefix); };
  auto kvs = co_await b.blocking(load);
  protocol::DescribeUserScramCredentialsResponse r;
  if (!kvs.ok()) {
    r.error_code = err(ErrorCode::kUnknownServerError);
    r.error_message = kvs.error().message;
    co_return r;
  }
  // user -> mechanism -> iterations
  std::map<std::string, std::map<int8_t, int32_t>> all;
  for (const auto& kv : *kvs) {
    std::string_view rest = std::string_view(kv.key).substr(prefix.size());
    auto slash = rest.find('/');
    if (slash == std::string_view::npos) continue;
    auto m = security::scram_mechanism(rest.substr(0, slash));
    auto cred = security::decode_credential(kv.value);
    if (!m || !cred.ok()) continue;
    all[std::string(rest.substr(slash + 1))][static_cast<int8_t>(*m)] = cred->iterations;
  }
  auto result_of = [&](const std::string& user) {
    protocol::DescribeUserScramCredentialsResponse::DescribeUserScramCredentialsResult res;
    res.user = user;
    res.error_message = std::nullopt;
    auto it = all.find(user);
    if (it == all.end()) {
      res.error_code = err(ErrorCode::kResourceNotFound);
      res.error_message = "Attempt to describe a user credential that does not exist";
      return res;
    }
    for (auto [mech, iters] : it->second) res.credential_infos.push_back({mech, iters});
    return res;
  };
  r.error_message = std::nullopt;
  if (!req.users || req.users->empty()) {
    for (const auto& [user, _] : all) r.results.push_back(result_of(user));
    co_return r;
  }
  std::map<std::string, int> seen;
  for (const auto& u : *req.users) ++seen[u.name];
  std::set<std::string> done;
  for (const auto& u : *req.users) {
    if (!done.insert(u.name).second) continue;
    if (seen[u.name] > 1) {
      protocol::DescribeUserScramCredentialsResponse::DescribeUserScramCredentialsResult res;
      res.user = u.name;
      res.error_code = err(ErrorCode::kDuplicateResource);
      res.error_message =
          "Cannot describe SCRAM credentials for the same user twice in a "
          "single request";
      r.results.push_back(std::move(res));
      continue;
    }
    r.results.push_back(result_of(u.name));
  }
  co_return r;
}

asio::awaitable<std::optional<protocol::AlterUserScramCredentialsResponse>> alter(
    Broker& b, const RequestContext&, protocol::AlterUserScramCredentialsRequest& req) {
  // Per user: the first error, or the operations to apply.
  std::map<std::string, std::pair<ErrorCode, std::string>> errors;
  std::map<std::string, std::vector<meta::Op>> ops;
  std::vector<std::string> order;
  std::set<std::pair<std::string, int8_t>> touched;
  auto note = [&](const std::string& user) {
    if (!ops.count(user) && !errors.count(user)) order.push_back(user);
    ops[user];
  };
  auto reject = [&](const std::string& user, ErrorCode e, std::string msg) {
    if (!errors.count(user)) errors[user] = {e, std::move(msg)};
  };
  meta::MetaStore* ms = &b.meta();
  for (const auto& d : req.deletions) {
    note(d.name);
    auto m = security::scram_mechanism(d.mechanism);
    if (d.name.empty()) {
      reject(d.name, ErrorCode::kUnacceptableCredential, "Username must not be empty");
    } else if (!m) {
      reject(d.name, ErrorCode::kUnsupportedSaslMechanism, "Unknown SCRAM mechanism");
    } else if (!touched.insert({d.name, d.mechanism}).second) {
      reject(d.name, ErrorCode::kDuplicateResource,
             "A user credential cannot be altered twice in the same request");
    } else {
      std::string key = scram_key(b.config(), *m, d.name);
      auto get = [ms, key] { return ms->get(key); };
      auto kv = co_await b.blocking(get);
      if (!kv.ok()) {
        reject(d.name, ErrorCode::kUnknownServerError, kv.error().message);
      } else if (!kv->has_value()) {
        reject(d.name, ErrorCode::kResourceNotFound,
               "Attempt to delete a user credential that does not exist");
      } else {
        ops[d.name].push_back(meta::Op::del(key));
      }
    }
  }
  for (const auto& u : req.upsertions) {
    note(u.name);
    auto m = security::scram_mechanism(u.mechanism);
    if (u.name.empty()) {
      reject(u.name, ErrorCode::kUnacceptableCredential, "Username must not be empty");
    } else if (!m) {
      reject(u.name, ErrorCode::kUnsupportedSaslMechanism, "Unknown SCRAM mechanism");
    } else if (!touched.insert({u.name, u.mechanism}).second) {
      reject(u.name, ErrorCode::kDuplicateResource,
             "A user credential cannot be altered twice in the same request");
    } else if (u.iterations < security::kScramMinIterations ||
               u.iterations > security::kScramMaxIterations) {
      reject(u.name, ErrorCode::kUnacceptableCredential,
             "Iterations must be between " + std::to_string(security::kScramMinIterations) +
                 " and " + std::to_string(security::kScramMaxIterations));
    } else if (u.salt.empty() || u.salted_password.empty()) {
      reject(u.name, ErrorCode::kUnacceptableCredential, "Salt and salted password are required");
    } else {
      auto cred = security::scram_credential_from_salted(*m, std::string(u.salt.view()),
                                                         u.salted_password.view(), u.iterations);
      ops[u.name].push_back(
          meta::Op::put(scram_key(b.config(), *m, u.name), security::encode_credential(cred)));
    }
  }
  protocol::AlterUserScramCredentialsResponse r;
  for (const auto& user : order) {
    protocol::AlterUserScramCredentialsResponse::AlterUserScramCredentialsResult res;
    res.user = user;
    res.error_message = std::nullopt;
    if (auto e = errors.find(user); e != errors.end()) {
      res.error_code = err(e->second.first);
      res.error_message = e->second.second;
    } else if (!ops[user].empty()) {
      meta::Txn txn;
      txn.ops = std::move(ops[user]);
      auto commit = [ms, txn] { return ms->commit(txn); };
      auto c = co_await b.blocking(commit);
      if (!c.ok()) {
        res.error_code = err(ErrorCode::kUnknownServerError);
        res.error_message = c.error().message;
      } else {
        spdlog::info("SCRAM credentials of user '{}' altered", user);
      }
    }
    r.results.push_back(std::move(res));
  }
  co_return r;
}

}  // namespace

std::string scram_key(const BrokerConfig& cfg, ScramMechanism m, std::string_view user) {
  return scram_prefix(cfg) + security::mechanism_name(m) + "/" + std::string(user);
}

void register_security_handlers(Dispatcher& d, Broker& b) {
  using namespace protocol;  // NOLINT: message types only
  Broker* bp = &b;
  // v0 of SaslHandshake means raw SASL tokens after it (pre-KIP-152): served by the raw
  // handler below; clients that know SaslAuthenticate use v1.
  d.add<SaslHandshakeRequest, SaslHandshakeResponse>(
      0, 1, [bp](const RequestContext& ctx, SaslHandshakeRequest& req) {
        return handshake(*bp, ctx, req);
      });
  d.add<SaslAuthenticateRequest, SaslAuthenticateResponse>(
      0, 2, [bp](const RequestContext& ctx, SaslAuthenticateRequest& req) {
        return authenticate(*bp, ctx, req);
      });
  d.set_raw_sasl_handler(
      [bp](const net::ConnectionInfo& conn, Buffer frame) -> asio::awaitable<net::Response> {
        // The token is the whole frame; the answer is a raw frame too, and a failure closes the
        // connection without one (Kafka's pre-KIP-152 behaviour).
        struct NoOrder final : net::RequestOrder {
          void release() override {}
        } no_order;
        protocol::RequestHeader header;
        RequestContext ctx{conn, header, no_order};
        SaslAuthenticateRequest req;
        req.auth_bytes = std::move(frame);
        auto resp = co_await authenticate(*bp, ctx, req);
        if (!resp || resp->error_code != 0) co_return net::Response::close_connection();
        BufferChain chain;
        chain.push_back(std::move(resp->auth_bytes));
        co_return net::Response::reply(std::move(chain));
      });
  d.add<DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse>(
      0, 0, [bp](const RequestContext& ctx, DescribeUserScramCredentialsRequest& req) {
        return describe(*bp, ctx, req);
      });
  // Shale has no client quotas yet: every filter matches nothing. kafka-configs --describe
  // --entity-type users asks for quotas before SCRAM credentials.
  d.add<DescribeClientQuotasRequest, DescribeClientQuotasResponse>(
      0, 1,
      [](const RequestContext&, DescribeClientQuotasRequest&)
          -> asio::awaitable<std::optional<DescribeClientQuotasResponse>> {
        DescribeClientQuotasResponse r;
        r.error_message = std::nullopt;
        co_return r;
      });
  d.add<AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse>(
      0, 0, [bp](const RequestContext& ctx, AlterUserScramCredentialsRequest& req) {
        return alter(*bp, ctx, req);
      });
}

}  // namespace shale::broker
