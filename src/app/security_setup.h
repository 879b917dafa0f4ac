// Builds the network listeners' security from the configuration: each listener's protocol
// (listener.security.protocol.map), the TLS context of SSL / SASL_SSL listeners from the
// ssl.* keys (with listener.name.<name>.ssl.* overrides), and whether connections must
// authenticate with SASL first.
//
// Threads: start-up only.
#pragma once

#include <vector>

#include "app/config.h"
#include "base/result.h"
#include "net/server.h"
#include "security/sasl.h"

namespace shale::app {

Result<std::vector<net::ListenerSpec>> listener_specs(const Config& cfg);
// sasl.enabled.mechanisms, the PLAIN users of sasl.jaas.config and of every
// listener.name.<l>.plain.sasl.jaas.config, connection.failed.authentication.delay.ms.
Result<std::shared_ptr<const security::SaslSettings>> sasl_settings(const Config& cfg);

}  // namespace shale::app
