#include "broker/broker.h"

namespace shale::broker {

Broker::Broker(BrokerConfig cfg, storage::Engine* engine, meta::MetaStore* meta)
    : cfg_(std::move(cfg)),
      engine_(engine),
      meta_(meta),
      topics_(engine, meta, cfg_.ns, cfg_.topic_defaults),
      producer_ids_(meta, cfg_.ns),
      sessions_(cfg_.max_fetch_sessions),
      workers_(static_cast<size_t>(cfg_.worker_threads > 0 ? cfg_.worker_threads : 1)) {}

Broker::~Broker() { stop(); }

Status Broker::start() { return topics_.load(); }

void Broker::stop() {
  if (stopped_) return;
  stopped_ = true;
  workers_.join();
}

}  // namespace shale::broker
