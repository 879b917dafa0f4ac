// Registers the data-path and admin handlers of handlers.h with the request dispatcher, each
// over the version range Shale serves (Kafka 4.x's floors after KIP-896 up to the highest
// stable version in the schemas). ApiVersions then advertises exactly these APIs.
//
// Threads: call before the server starts; the broker must outlive the dispatcher's use.
#pragma once

#include "broker/broker.h"
#include "broker/dispatcher.h"

namespace shale::broker {

void register_broker_handlers(Dispatcher& d, Broker& b);

}  // namespace shale::broker
