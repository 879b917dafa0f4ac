#include <future>

#include "objstore/object_store.h"

namespace shale::objstore {

Status put_sync(ObjectStore& s, const std::string& key, BufferChain data) {
  std::promise<Status> p;
  auto f = p.get_future();
  s.put(key, std::move(data), [&p](Status st) { p.set_value(std::move(st)); });
  return f.get();
}

Result<Buffer> get_sync(ObjectStore& s, const std::string& key, Range range) {
  std::promise<Result<Buffer>> p;
  auto f = p.get_future();
  s.get(key, range, [&p](Result<Buffer> r) { p.set_value(std::move(r)); });
  return f.get();
}

Status remove_sync(ObjectStore& s, std::vector<std::string> keys) {
  std::promise<Status> p;
  auto f = p.get_future();
  s.remove(std::move(keys), [&p](Status st) { p.set_value(std::move(st)); });
  return f.get();
}

Result<std::vector<ObjectInfo>> list_sync(ObjectStore& s, const std::string& prefix) {
  std::promise<Result<std::vector<ObjectInfo>>> p;
  auto f = p.get_future();
  s.list(prefix, [&p](Result<std::vector<ObjectInfo>> r) { p.set_value(std::move(r)); });
  return f.get();
}

}  // namespace shale::objstore
