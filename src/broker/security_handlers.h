// Kafka's SASL APIs and SCRAM credential management (docs/security.md):
//   SaslHandshake v1 and SaslAuthenticate v0-2 (KIP-152 framing: the SASL tokens travel inside
//   SaslAuthenticate requests) for PLAIN and SCRAM-SHA-256/512 on SASL_PLAINTEXT and SASL_SSL
//   listeners; a success sets the connection's principal to User:<name>;
//   DescribeUserScramCredentials / AlterUserScramCredentials over the credentials kept in the
//   MetaStore under <ns>/scram/<mechanism>/<user> (salt, stored key, server key, iterations:
//   never the password).
// A connection of a SASL listener that sends anything but ApiVersions, SaslHandshake or
// SaslAuthenticate before it has authenticated is closed by the dispatcher. A failed
// authentication is logged once (peer, listener, mechanism, user name, reason; never a secret),
// answered with SASL_AUTHENTICATION_FAILED after connection.failed.authentication.delay.ms, and
// the connection closed.
//
// Threads: handlers run on the connection's shard; MetaStore calls go to the broker's workers.
#pragma once

#include "broker/broker.h"
#include "broker/dispatcher.h"
#include "security/sasl.h"

namespace shale::broker {

std::string scram_key(const BrokerConfig& cfg, security::ScramMechanism m, std::string_view user);
void register_security_handlers(Dispatcher& d, Broker& b);

}  // namespace shale::broker
