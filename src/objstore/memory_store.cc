#include "objstore/memory_store.h"

#include <map>

#include "base/clock.h"

namespace shale::objstore {

class MemoryMultipart final : public MultipartUpload {
 public:
  MemoryMultipart(MemoryStore* store, std::string key) : store_(store), key_(std::move(key)) {}
  void upload_part(int part_number, BufferChain data, StatusCallback done) override {
    if (part_number < 1) {
      done(Error::make(Errc::kInvalidArgument, "part numbers start at 1"));
      return;
    }
    {
      std::lock_guard lk(mu_);
      parts_[part_number] = data.flatten();
    }
    done(ok_status());
  }
  void complete(StatusCallback done) override {
    BufferBuilder b;
    {
      std::lock_guard lk(mu_);
      for (auto& [n, p] : parts_) b.append(p.data(), p.size());
      parts_.clear();
    }
    store_->commit(key_, std::move(b).freeze());
    done(ok_status());
  }
  void abort(StatusCallback done) override {
    std::lock_guard lk(mu_);
    parts_.clear();
    done(ok_status());
  }

 private:
  MemoryStore* store_;
  std::string key_;
  std::mutex mu_;
  std::map<int, Buffer> parts_;
};

void MemoryStore::commit(const std::string& key, Buffer data) {
  std::lock_guard lk(mu_);
  ++puts_;
  StoreCounters::add(counters_.puts);
  StoreCounters::add(counters_.put_bytes, data.size());
  objects_[key] = {std::move(data), clock::wall_ms()};
}

void MemoryStore::put(const std::string& key, BufferChain data, StatusCallback done) {
  commit(key, data.flatten());
  done(ok_status());
}

void MemoryStore::get(const std::string& key, Range range, GetCallback done) {
  Buffer out;
  {
    std::lock_guard lk(mu_);
    ++gets_;
    StoreCounters::add(counters_.gets);
    auto it = objects_.find(key);
    if (it == objects_.end()) {
      StoreCounters::add(counters_.errors);
      done(Error::make(Errc::kNotFound, "no such object: " + key));
      return;
    }
    const Buffer& b = it->second.first;
    uint64_t off = range.offset < b.size() ? range.offset : b.size();
    out = b.slice(off, range.length == Range::kToEnd ? b.size() - off : range.length);
    StoreCounters::add(counters_.get_bytes, out.size());
  }
  done(std::move(out));
}

void MemoryStore::remove(std::vector<std::string> keys, StatusCallback done) {
  {
    std::lock_guard lk(mu_);
    StoreCounters::add(counters_.deletes, keys.size());
    for (auto& k : keys) objects_.erase(k);
  }
  done(ok_status());
}

void MemoryStore::list(const std::string& prefix, ListCallback done) {
  std::vector<ObjectInfo> out;
  {
    std::lock_guard lk(mu_);
    StoreCounters::add(counters_.lists);
    for (auto it = objects_.lower_bound(prefix);
         it != objects_.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
      out.push_back({it->first, it->second.first.size(), it->second.second});
    }
  }
  done(std::move(out));
}

void MemoryStore::create_multipart(const std::string& key, MultipartCallback done) {
  done(std::unique_ptr<MultipartUpload>(new MemoryMultipart(this, key)));
}

uint64_t MemoryStore::put_count() const {
  std::lock_guard lk(mu_);
  return puts_;
}
uint64_t MemoryStore::get_count() const {
  std::lock_guard lk(mu_);
  return gets_;
}
size_t MemoryStore::object_count() const {
  std::lock_guard lk(mu_);
  return objects_.size();
}

}  // namespace shale::objstore
