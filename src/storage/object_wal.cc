#include "storage/object_wal.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/clock.h"
#include "base/crc32c.h"
#include "base/endian.h"
#include "base/log.h"
#include "storage/file_wal.h"

namespace shale::storage {

namespace {
constexpr uint32_t kObjectMagic = 0x5348574F;  // "SHWO"
constexpr uint32_t kReservationMagic = 0x53485752;
}  // namespace

ObjectWal::ObjectWal(ObjectWalOptions opts, objstore::ObjectStore* store)
    : opts_(std::move(opts)), store_(store) {}

std::string ObjectWal::node_prefix() const {
  return fmt::format("{}/{}/", opts_.prefix, opts_.node_id);
}

std::string ObjectWal::object_key(int64_t epoch, uint64_t start) const {
  return fmt::format("{}{:016x}/{:016x}", node_prefix(), static_cast<uint64_t>(epoch), start);
}

Result<std::unique_ptr<ObjectWal>> ObjectWal::open(const ObjectWalOptions& opts,
                                                   objstore::ObjectStore* store) {
  std::unique_ptr<ObjectWal> w(new ObjectWal(opts, store));
  // Take ownership: from now on an older writer of this node fails its next check.
  uint8_t r[16];
  be::store32(r, kReservationMagic);
  be::store64(r + 4, static_cast<uint64_t>(opts.node_epoch));
  be::store32(r + 12, crc32c::value(r, 12));
  BufferChain c;
  c.push_back(Buffer::copy(r, sizeof r));
  SHALE_TRY(objstore::put_sync(*store, w->node_prefix() + "reservation", std::move(c)));
  return w;
}

ObjectWal::~ObjectWal() { shutdown(); }

Status ObjectWal::verify_reservation() {
  auto b = objstore::get_sync(*store_, node_prefix() + "reservation");
  if (!b.ok()) return std::move(b).error();
  if (b->size() != 16 || be::load32(b->data()) != kReservationMagic ||
      be::load32(b->data() + 12) != crc32c::value(b->data(), 12)) {
    return Error::make(Errc::kCorruption, "bad WAL reservation object");
  }
  if (static_cast<int64_t>(be::load64(b->data() + 4)) != opts_.node_epoch) {
    return Error::make(Errc::kFenced,
                       "WAL taken over by node epoch " + std::to_string(be::load64(b->data() + 4)));
  }
  return ok_status();
}

Result<std::vector<WalRecord>> ObjectWal::recover() {
  auto list = objstore::list_sync(*store_, node_prefix());
  if (!list.ok()) return std::move(list).error();
  // (epoch, start) -> key; keys sort that way already (fixed-width hex).
  std::vector<WalRecord> out;
  int64_t cur_epoch = -1;
  uint64_t expect = 0;
  bool gap = false;
  uint64_t logical = 0;  // recovered records get fresh, increasing offsets
  for (auto& info : *list) {
    std::string rest = info.key.substr(node_prefix().size());
    auto slash = rest.find('/');
    if (slash == std::string::npos) continue;  // the reservation
    recovered_keys_.push_back(info.key);
    int64_t epoch = static_cast<int64_t>(std::stoull(rest.substr(0, slash), nullptr, 16));
    uint64_t start = std::stoull(rest.substr(slash + 1), nullptr, 16);
    if (epoch != cur_epoch) {
      cur_epoch = epoch;
      gap = false;
      expect = start;
    }
    if (gap || start != expect) {  // a hole ends this epoch's log
      gap = true;
      continue;
    }
    auto b = objstore::get_sync(*store_, info.key);
    if (!b.ok()) return std::move(b).error();
    const uint8_t* p = b->data();
    if (b->size() < kObjectHeader || be::load32(p) != kObjectMagic ||
        be::load32(p + 44) != crc32c::value(p, 44) || be::load64(p + 4) != start ||
        be::load64(p + 12) != b->size() - kObjectHeader) {
      SPDLOG_WARN("object wal: skipping damaged object {}", info.key);
      gap = true;
      continue;
    }
    uint64_t o = start;
    size_t pos = kObjectHeader;
    while (pos + FileWal::kRecordHeader <= b->size()) {
      const uint8_t* h = p + pos;
      uint32_t len = be::load32(h + 4);
      if (be::load32(h) != FileWal::kRecordMagic || be::load32(h + 20) != crc32c::value(h, 20) ||
          be::load64(h + 8) != o + FileWal::kRecordHeader ||
          pos + FileWal::kRecordHeader + len > b->size() ||
          crc32c::value(h + FileWal::kRecordHeader, len) != be::load32(h + 16)) {
        return Error::make(Errc::kCorruption, "object wal: bad record in " + info.key);
      }
      logical += FileWal::kRecordHeader + len;
      out.push_back(WalRecord{logical, b->slice(pos + FileWal::kRecordHeader, len)});
      pos += FileWal::kRecordHeader + len;
      o += FileWal::kRecordHeader + len;
    }
    expect = o;
  }
  return out;
}

Status ObjectWal::reset() {
  // Everything recovered has been uploaded by the engine: drop the old objects.
  if (!recovered_keys_.empty()) {
    SHALE_TRY(objstore::remove_sync(*store_, recovered_keys_));
    recovered_keys_.clear();
  }
  std::lock_guard lk(mu_);
  writable_ = true;
  if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
  return ok_status();
}

Status ObjectWal::append(Buffer head, Buffer body, WalCallback done) {
  uint64_t size = FileWal::kRecordHeader + head.size() + body.size();
  std::lock_guard lk(mu_);
  if (failed_) return fail_error_;
  if (stop_ || !writable_) return Error::make(Errc::kShutdown, "WAL is not open for writes");
  if (queued_bytes_ + size > opts_.max_unflushed) {
    return Error::make(Errc::kUnavailable, "object WAL backlog full", true);
  }
  bool first = queue_.empty();
  if (first) first_queued_ms_ = clock::mono_ms();
  queued_bytes_ += size;
  queue_.push_back(Pending{std::move(head), std::move(body), std::move(done)});
  // Wake the writer when a batch opens (to arm its timer) and when it is full.
  if (first || queued_bytes_ >= opts_.batch_bytes) cv_.notify_one();
  return ok_status();
}

void ObjectWal::trim(uint64_t offset) {
  std::lock_guard lk(mu_);
  if (offset > trim_) {
    trim_ = offset;
    cv_.notify_one();
  }
}

WalStats ObjectWal::stats() const {
  std::lock_guard lk(mu_);
  WalStats s = stats_;
  uint64_t live = 0;
  for (auto& [start, end] : objects_) live += end - start;
  s.used_bytes = live + queued_bytes_;
  return s;
}

void ObjectWal::shutdown() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ObjectWal::delete_trimmed(uint64_t trim) {
  std::vector<std::string> keys;
  {
    std::lock_guard lk(mu_);
    for (auto it = objects_.begin(); it != objects_.end() && it->second <= trim;) {
      keys.push_back(object_key(opts_.node_epoch, it->first));
      it = objects_.erase(it);
    }
  }
  if (!keys.empty()) (void)objstore::remove_sync(*store_, keys);
}

void ObjectWal::run() {
  std::unique_lock lk(mu_);
  while (true) {
    int64_t now = clock::mono_ms();
    bool due = !queue_.empty() && (queued_bytes_ >= opts_.batch_bytes || stop_ ||
                                   now - first_queued_ms_ >= opts_.batch_interval_ms);
    if (trim_ > trimmed_) {
      uint64_t t = trim_;
      trimmed_ = t;
      lk.unlock();
      delete_trimmed(t);
      lk.lock();
      continue;
    }
    if (!due) {
      if (stop_ && queue_.empty()) break;
      int64_t wait = queue_.empty() ? 1000 : opts_.batch_interval_ms - (now - first_queued_ms_);
      cv_.wait_for(lk, std::chrono::milliseconds(std::max<int64_t>(1, wait)));
      continue;
    }
    // One object holds at most ~batch_bytes; the rest waits for the next PUT.
    std::deque<Pending> batch;
    uint64_t taken = 0;
    while (!queue_.empty() && (batch.empty() || taken < opts_.batch_bytes)) {
      auto& p = queue_.front();
      taken += FileWal::kRecordHeader + p.head.size() + p.body.size();
      batch.push_back(std::move(p));
      queue_.pop_front();
    }
    queued_bytes_ -= taken;
    if (!queue_.empty()) first_queued_ms_ = 0;  // the leftover is due at once
    uint64_t start = next_offset_;
    bool failed = failed_;
    Error err = fail_error_;
    lk.unlock();

    Status st = failed ? Status(err) : ok_status();
    std::vector<uint64_t> ends;
    uint64_t end = start;
    if (st.ok()) {
      uint64_t body = 0;
      for (auto& r : batch) body += FileWal::kRecordHeader + r.head.size() + r.body.size();
      BufferBuilder b(kObjectHeader + body);
      uint8_t* h = b.grow(kObjectHeader);
      std::fill(h, h + kObjectHeader, 0);
      be::store32(h, kObjectMagic);
      be::store64(h + 4, start);
      be::store64(h + 12, body);
      be::store32(h + 20, static_cast<uint32_t>(opts_.node_id));
      be::store64(h + 24, static_cast<uint64_t>(opts_.node_epoch));
      be::store32(h + 44, crc32c::value(h, 44));
      for (auto& r : batch) {
        uint32_t len = static_cast<uint32_t>(r.head.size() + r.body.size());
        uint8_t* rh = b.grow(FileWal::kRecordHeader);
        size_t body_at = b.size();
        b.append(r.head.data(), r.head.size());
        b.append(r.body.data(), r.body.size());
        rh = b.data() + body_at - FileWal::kRecordHeader;  // grow() may have moved the bytes
        be::store32(rh, FileWal::kRecordMagic);
        be::store32(rh + 4, len);
        be::store64(rh + 8, end + FileWal::kRecordHeader);
        be::store32(rh + 16, crc32c::value(b.data() + body_at, len));
        be::store32(rh + 20, crc32c::value(rh, 20));
        end += FileWal::kRecordHeader + len;
        ends.push_back(end);
      }
      BufferChain c;
      c.push_back(std::move(b).freeze());
      st = objstore::put_sync(*store_, object_key(opts_.node_epoch, start), std::move(c));
      // Re-check ownership after the PUT and before acknowledging anything.
      if (st.ok()) st = verify_reservation();
    }
    lk.lock();
    if (st.ok()) {
      next_offset_ = end;
      objects_[start] = end;
      stats_.writes += 1;
      stats_.bytes_written += end - start;
    } else if (!failed_) {
      failed_ = true;
      fail_error_ = Error::make(st.error().code == Errc::kFenced ? Errc::kFenced : Errc::kIoError,
                                "object WAL failed: " + st.error().message);
      SPDLOG_ERROR("{}", fail_error_.message);
    }
    Error e = fail_error_;
    lk.unlock();
    for (size_t i = 0; i < batch.size(); ++i) {
      if (st.ok()) {
        batch[i].done(ends[i]);
      } else {
        batch[i].done(e);
      }
    }
    lk.lock();
  }
}

}  // namespace shale::storage
