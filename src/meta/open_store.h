// open_store: makes the MetaStore that `metadata.store` names — "sqlite" (the embedded store,
// <data_dir>/meta.db) or "etcd://host:port[,host:port...][/prefix]" (EtcdMetaStore).
// Threads: call once at start-up. The returned store is thread-safe (see meta_store.h).
#pragma once

#include <memory>
#include <string>

#include "meta/meta_store.h"

namespace shale::meta {

struct StoreConfig {
  std::string uri = "sqlite";
  std::string data_dir;                      // for sqlite
  int64_t etcd_timeout_ms = 5000;            // metadata.etcd.request.timeout.ms
  int64_t etcd_max_txn_ops = 128;            // metadata.etcd.max.txn.ops
  int64_t etcd_max_request_bytes = 1572864;  // metadata.etcd.max.request.bytes
};

// "" when `uri` is a valid metadata.store value, else why not (no connection is made).
std::string validate_store_uri(std::string_view uri);

Result<std::unique_ptr<MetaStore>> open_store(const StoreConfig& cfg);

}  // namespace shale::meta
