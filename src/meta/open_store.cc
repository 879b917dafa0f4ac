#include "meta/open_store.h"

#include <filesystem>

#include "meta/etcd_meta_store.h"
#include "meta/sqlite_meta_store.h"

namespace shale::meta {

std::string validate_store_uri(std::string_view uri) {
  if (uri == "sqlite") return "";
  if (uri.substr(0, 7) == "etcd://") {
    auto r = parse_etcd_uri(uri);
    return r.ok() ? "" : r.error().message;
  }
  return "'" + std::string(uri) + "': use sqlite or etcd://host:port[,host:port...][/prefix]";
}

Result<std::unique_ptr<MetaStore>> open_store(const StoreConfig& cfg) {
  if (cfg.uri == "sqlite") {
    auto s = SqliteMetaStore::open({(std::filesystem::path(cfg.data_dir) / "meta.db").string()});
    if (!s.ok()) return std::move(s).error();
    return std::unique_ptr<MetaStore>(std::move(s).value());
  }
  auto o = parse_etcd_uri(cfg.uri);
  if (!o.ok()) return std::move(o).error();
  o->request_timeout_ms = cfg.etcd_timeout_ms;
  o->max_txn_ops = cfg.etcd_max_txn_ops;
  o->max_request_bytes = cfg.etcd_max_request_bytes;
  auto s = EtcdMetaStore::open(*o);
  if (!s.ok()) return std::move(s).error();
  return std::unique_ptr<MetaStore>(std::move(s).value());
}

}  // namespace shale::meta
