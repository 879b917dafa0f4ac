// An in-memory storage::Engine for the broker's unit tests: the real Engine implementation is
// not on this branch yet. It keeps the contract the broker relies on (dense offsets,
// expected_base == next_offset, reads of whole records below end_offset, append callbacks in
// order) and adds test controls: hold appends (durability later), refuse appends
// (back-pressure) and persistence across "restarts" (a new FakeEngine over the same FakeDisk).
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <mutex>

#include "storage/engine.h"

namespace shale::broker::testing {

struct FakeStreamData {
  int64_t start = 0;
  std::vector<storage::StreamRecord> records;  // durable
  std::map<std::string, std::string> meta;
  std::map<std::string, std::string> tags;
  bool deleted = false;
};

// What survives an engine "restart".
struct FakeDisk {
  std::mutex mu;
  int64_t next_id = 1;
  std::map<int64_t, FakeStreamData> streams;
};

class FakeEngine;

class FakeStream : public storage::Stream {
 public:
  FakeStream(FakeEngine* e, int64_t id) : engine_(e), id_(id) {}
  int64_t id() const override { return id_; }
  int64_t epoch() const override { return 1; }
  int64_t start_offset() const override;
  int64_t end_offset() const override;
  int64_t next_offset() const override;
  void append(int64_t expected_base, uint32_t count, Buffer payload,
              storage::AppendCallback done) override;
  void read(int64_t start, int64_t end, size_t max_bytes, storage::ReadCallback done) override;
  Status trim(int64_t new_start) override;
  Status put_meta(const std::string& key, const std::string& value) override;
  Result<std::optional<std::string>> get_meta(const std::string& key) override;
  void close(std::function<void(Status)> done) override { done(ok_status()); }

  struct Held {
    storage::StreamRecord rec;
    storage::AppendCallback done;
  };

 private:
  friend class FakeEngine;
  FakeEngine* engine_;
  int64_t id_;
  int64_t next_ = 0;  // guarded by the engine mutex
  std::deque<Held> held_;
};

class FakeEngine : public storage::Engine {
 public:
  explicit FakeEngine(std::shared_ptr<FakeDisk> disk) : disk_(std::move(disk)) {}
  Result<int64_t> create_stream(const storage::StreamOptions& opts) override {
    std::lock_guard l(disk_->mu);
    int64_t id = disk_->next_id++;
    disk_->streams[id].tags = opts.tags;
    return id;
  }
  Result<storage::Stream*> open_stream(int64_t id) override {
    std::lock_guard l(disk_->mu);
    auto it = disk_->streams.find(id);
    if (it == disk_->streams.end() || it->second.deleted) {
      return Error::make(Errc::kNotFound, "no stream");
    }
    auto& s = open_[id];
    if (!s) {
      s = std::make_unique<FakeStream>(this, id);
      const auto& recs = it->second.records;
      s->next_ = recs.empty() ? it->second.start : recs.back().end_offset();
    }
    return s.get();
  }
  Status delete_stream(int64_t id) override {
    std::lock_guard l(disk_->mu);
    disk_->streams[id].deleted = true;
    return ok_status();
  }
  Result<std::map<int64_t, std::map<std::string, std::string>>> list_streams() override {
    std::lock_guard l(disk_->mu);
    std::map<int64_t, std::map<std::string, std::string>> out;
    for (auto& [id, s] : disk_->streams) {
      if (!s.deleted) out[id] = s.tags;
    }
    return out;
  }
  Status flush() override { return ok_status(); }
  Status compact_now() override { return ok_status(); }
  storage::EngineStats stats() const override { return {}; }
  storage::EngineHealth health() const override {
    std::lock_guard l(disk_->mu);
    return health_;
  }
  void shutdown() override {}

  // Test controls.
  void hold_appends(bool hold) {
    std::lock_guard l(disk_->mu);
    hold_ = hold;
  }
  void refuse_appends(bool refuse) {
    std::lock_guard l(disk_->mu);
    refuse_ = refuse;
  }
  // Degraded (uploads failing): health() says so and refused appends get the engine's
  // degraded error (kNoSpace) instead of plain back-pressure.
  void set_degraded(bool degraded) {
    std::lock_guard l(disk_->mu);
    health_ = storage::EngineHealth();
    if (degraded) {
      health_.degraded = true;
      health_.cause = storage::DegradedCause::kObjectStoreFull;
      health_.detail = "No space left on device";
    }
  }
  // Makes every held append durable (callbacks run on the calling thread).
  void release_held();
  size_t appends() const { return appends_; }

 private:
  friend class FakeStream;
  std::shared_ptr<FakeDisk> disk_;
  std::map<int64_t, std::unique_ptr<FakeStream>> open_;
  bool hold_ = false;
  bool refuse_ = false;
  storage::EngineHealth health_;
  size_t appends_ = 0;
};

inline int64_t FakeStream::start_offset() const {
  std::lock_guard l(engine_->disk_->mu);
  return engine_->disk_->streams[id_].start;
}

inline int64_t FakeStream::end_offset() const {
  std::lock_guard l(engine_->disk_->mu);
  auto& d = engine_->disk_->streams[id_];
  return d.records.empty() ? d.start : d.records.back().end_offset();
}

inline int64_t FakeStream::next_offset() const {
  std::lock_guard l(engine_->disk_->mu);
  return next_;
}

inline void FakeStream::append(int64_t expected_base, uint32_t count, Buffer payload,
                               storage::AppendCallback done) {
  std::unique_lock l(engine_->disk_->mu);
  if (engine_->refuse_) {
    const bool degraded = engine_->health_.degraded;
    l.unlock();
    done(degraded ? Error::make(Errc::kNoSpace, "storage degraded (object_store_full)", true)
                  : Error::make(Errc::kUnavailable, "log cache full", true));
    return;
  }
  if (expected_base != next_) {
    l.unlock();
    done(Error::make(Errc::kInvalidArgument, "expected_base != next_offset"));
    return;
  }
  // Copy: the broker's buffer is a slice of a request frame; a real WAL copies it too.
  storage::StreamRecord rec{expected_base, count, Buffer::copy(payload.data(), payload.size())};
  next_ += count;
  engine_->appends_++;
  if (engine_->hold_) {
    held_.push_back({rec, std::move(done)});
    return;
  }
  engine_->disk_->streams[id_].records.push_back(rec);
  l.unlock();
  done(storage::AppendResult{rec.base_offset, rec.end_offset()});
}

inline void FakeEngine::release_held() {
  std::vector<std::pair<storage::AppendCallback, storage::AppendResult>> cbs;
  {
    std::lock_guard l(disk_->mu);
    for (auto& [id, s] : open_) {
      for (auto& h : s->held_) {
        disk_->streams[id].records.push_back(h.rec);
        cbs.emplace_back(std::move(h.done),
                         storage::AppendResult{h.rec.base_offset, h.rec.end_offset()});
      }
      s->held_.clear();
    }
  }
  for (auto& [cb, r] : cbs) cb(r);
}

inline void FakeStream::read(int64_t start, int64_t end, size_t max_bytes,
                             storage::ReadCallback done) {
  std::unique_lock l(engine_->disk_->mu);
  auto& d = engine_->disk_->streams[id_];
  const int64_t durable_end = d.records.empty() ? d.start : d.records.back().end_offset();
  if (start < d.start || start >= end || end > durable_end) {
    l.unlock();
    done(Error::make(Errc::kOutOfRange, "read out of range"));
    return;
  }
  std::vector<storage::StreamRecord> out;
  size_t bytes = 0;
  for (const auto& r : d.records) {
    if (r.end_offset() <= start) continue;
    if (r.base_offset >= end) break;
    if (!out.empty() && bytes + r.payload.size() > max_bytes) break;
    out.push_back(r);
    bytes += r.payload.size();
  }
  l.unlock();
  done(std::move(out));
}

inline Status FakeStream::trim(int64_t new_start) {
  std::lock_guard l(engine_->disk_->mu);
  auto& d = engine_->disk_->streams[id_];
  if (new_start <= d.start) return ok_status();
  d.start = new_start;
  while (!d.records.empty() && d.records.front().end_offset() <= new_start) {
    d.records.erase(d.records.begin());
  }
  return ok_status();
}

inline Status FakeStream::put_meta(const std::string& key, const std::string& value) {
  std::lock_guard l(engine_->disk_->mu);
  engine_->disk_->streams[id_].meta[key] = value;
  return ok_status();
}

inline Result<std::optional<std::string>> FakeStream::get_meta(const std::string& key) {
  std::lock_guard l(engine_->disk_->mu);
  auto& m = engine_->disk_->streams[id_].meta;
  auto it = m.find(key);
  if (it == m.end()) return std::optional<std::string>();
  return std::optional<std::string>(it->second);
}

}  // namespace shale::broker::testing
