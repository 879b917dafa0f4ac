#include "storage/file_wal.h"

#include <cstdlib>
#include <cstring>
#include <optional>

#include "base/crc32c.h"
#include "base/endian.h"
#include "base/log.h"

namespace shale::storage {

namespace {

constexpr uint32_t kHeaderMagic = 0x5348574C;  // "SHWL"
constexpr uint32_t kHeaderVersion = 1;
constexpr size_t kHeaderBytes = 48;

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

struct AlignedBuf {
  uint8_t* p = nullptr;
  size_t cap = 0;
  ~AlignedBuf() { std::free(p); }
  uint8_t* get(size_t n) {
    if (n > cap) {
      std::free(p);
      if (posix_memalign(reinterpret_cast<void**>(&p), FileWal::kAlign, n) != 0) p = nullptr;
      cap = p ? n : 0;
    }
    return p;
  }
};

}  // namespace

FileWal::FileWal(FileWalOptions opts) : opts_(std::move(opts)) {}

Result<std::unique_ptr<FileWal>> FileWal::open(const FileWalOptions& opts) {
  std::unique_ptr<FileWal> w(new FileWal(opts));
  if (!w->opts_.fs) w->opts_.fs = posix_fs();
  uint64_t cap = opts.capacity / kAlign * kAlign;
  if (cap < kHeaderArea + 4 * opts.max_write) {
    return Error::make(Errc::kInvalidArgument, "s3.wal.capacity too small for the write size");
  }
  w->ring_ = cap - kHeaderArea;
  FileSystem* fs = w->opts_.fs;
  bool fresh = !fs->exists(opts.path);
  if (fresh) SHALE_TRY(fs->preallocate(opts.path, cap));
  auto f = fs->open(opts.path, OpenOptions{false, opts.direct_io, false});
  if (!f.ok() && opts.direct_io) {
    // tmpfs and some NFS setups refuse O_DIRECT: fall back to write + fdatasync per group.
    SPDLOG_WARN("wal {}: O_DIRECT not available ({}); using buffered writes + fdatasync", opts.path,
                f.error().message);
    w->opts_.direct_io = false;
    f = fs->open(opts.path, OpenOptions{false, false, false});
  }
  if (!f.ok()) return std::move(f).error();
  w->file_ = std::move(f).value();
  auto size = w->file_->size();
  if (!size.ok()) return std::move(size).error();
  if (*size != cap) {
    return Error::make(Errc::kInvalidArgument,
                       "WAL file " + opts.path + " has size " + std::to_string(*size) +
                           ", configured capacity is " + std::to_string(cap));
  }
  SHALE_TRY(w->load_header());
  return w;
}

FileWal::~FileWal() { shutdown(); }

Status FileWal::load_header() {
  AlignedBuf buf;
  uint8_t* p = buf.get(kHeaderArea);
  if (!p) return Error::make(Errc::kNoSpace, "out of memory");
  auto n = file_->read_at(p, kHeaderArea, 0);
  if (!n.ok()) return std::move(n).error();
  bool found = false;
  for (int slot = 0; slot < 2; ++slot) {
    const uint8_t* h = p + slot * kAlign;
    if (be::load32(h) != kHeaderMagic) continue;
    if (be::load32(h + 44) != crc32c::value(h, 44)) continue;
    if (be::load64(h + 8) != ring_ + kHeaderArea) {
      return Error::make(Errc::kInvalidArgument, "WAL header capacity differs from config");
    }
    uint64_t seq = be::load64(h + 24);
    if (!found || seq > header_seq_) {
      header_seq_ = seq;
      durable_trim_ = be::load64(h + 16);
      found = true;
    }
  }
  if (!found) {
    // A new file (or both slots torn, which two alternating slots rule out after the first
    // header write): start empty.
    durable_trim_ = 0;
    SHALE_TRY(write_header(0));
  }
  trim_req_ = write_pos_ = durable_trim_;
  return ok_status();
}

Status FileWal::write_header(uint64_t trim) {
  AlignedBuf buf;
  uint8_t* h = buf.get(kAlign);
  if (!h) return Error::make(Errc::kNoSpace, "out of memory");
  std::memset(h, 0, kAlign);
  uint64_t seq = header_seq_ + 1;
  be::store32(h, kHeaderMagic);
  be::store32(h + 4, kHeaderVersion);
  be::store64(h + 8, ring_ + kHeaderArea);
  be::store64(h + 16, trim);
  be::store64(h + 24, seq);
  be::store32(h + 32, static_cast<uint32_t>(opts_.node_id));
  be::store64(h + 36, static_cast<uint64_t>(opts_.node_epoch));
  be::store32(h + 44, crc32c::value(h, 44));
  SHALE_TRY(file_->write_at(h, kAlign, (seq % 2) * kAlign));
  if (!opts_.direct_io) SHALE_TRY(file_->sync());
  header_seq_ = seq;
  return ok_status();
}

Result<std::vector<WalRecord>> FileWal::recover() {
  // A separate buffered handle: O_DIRECT reads would need aligned buffers and offsets.
  auto rf = opts_.fs->open(opts_.path, OpenOptions{false, false, true});
  if (!rf.ok()) return std::move(rf).error();
  File* file = rf->get();
  // Sequential reader over the ring with an 8 MiB window, so recovery costs a few large reads.
  std::vector<uint8_t> win;
  uint64_t win_pos = 0;
  auto bytes = [&](uint64_t pos, size_t n) -> Result<const uint8_t*> {
    if (win.empty() || pos < win_pos || pos + n > win_pos + win.size()) {
      size_t want = std::max<size_t>(n, 8 << 20);
      uint64_t file_end = kHeaderArea + ring_;
      want = static_cast<size_t>(std::min<uint64_t>(want, file_end - pos));
      if (want < n) return Error::make(Errc::kCorruption, "read past ring end");
      win.resize(want);
      auto r = file->read_at(win.data(), want, pos);
      if (!r.ok()) return std::move(r).error();
      if (*r < n) return Error::make(Errc::kCorruption, "short WAL read");
      win.resize(*r);
      win_pos = pos;
    }
    return win.data() + (pos - win_pos);
  };
  // Returns the record at logical offset o, or nothing if it is not a valid record written at
  // exactly that offset (torn, zero padding, or left over from an earlier ring cycle).
  auto try_read = [&](uint64_t o) -> Result<std::optional<WalRecord>> {
    uint64_t in_ring = o % ring_;
    if (in_ring + kRecordHeader > ring_) return std::optional<WalRecord>();
    auto hp = bytes(kHeaderArea + in_ring, kRecordHeader);
    if (!hp.ok()) return std::move(hp).error();
    const uint8_t* h = *hp;
    if (be::load32(h) != kRecordMagic || be::load32(h + 20) != crc32c::value(h, 20)) {
      return std::optional<WalRecord>();
    }
    uint32_t len = be::load32(h + 4);
    if (be::load64(h + 8) != o + kRecordHeader) return std::optional<WalRecord>();
    if (in_ring + kRecordHeader + len > ring_) return std::optional<WalRecord>();
    uint32_t body_crc = be::load32(h + 16);
    auto bp = bytes(kHeaderArea + in_ring + kRecordHeader, len);
    if (!bp.ok()) return std::move(bp).error();
    if (crc32c::value(*bp, len) != body_crc) return std::optional<WalRecord>();
    return std::optional<WalRecord>(WalRecord{o + kRecordHeader + len, Buffer::copy(*bp, len)});
  };

  std::vector<WalRecord> out;
  uint64_t o = durable_trim_;
  while (o - durable_trim_ < ring_) {
    auto r = try_read(o);
    if (!r.ok()) return std::move(r).error();
    if (r->has_value()) {
      o = (*r)->end;
      out.push_back(std::move(**r));
      continue;
    }
    if (o % kAlign != 0) {  // end of a block: the next one starts at the 4 KiB boundary
      o = align_up(o, kAlign);
      auto a = try_read(o);
      if (!a.ok()) return std::move(a).error();
      if (a->has_value()) continue;
    }
    if (o % ring_ != 0) {  // a block that did not fit before the ring end moved to the start
      uint64_t next = (o / ring_ + 1) * ring_;
      auto w = try_read(next);
      if (!w.ok()) return std::move(w).error();
      if (w->has_value() && next - durable_trim_ < ring_) {
        o = next;
        continue;
      }
    }
    break;
  }
  std::lock_guard lk(mu_);
  write_pos_ = o;
  SPDLOG_INFO("wal {}: recovered {} records ({} bytes of log) from trim offset {}", opts_.path,
              out.size(), o - durable_trim_, durable_trim_);
  return out;
}

Status FileWal::reset() {
  // Skip two whole ring cycles past anything that may have been written (only the last block
  // can be torn), so stale records can never carry a body offset that new writes will use.
  uint64_t start;
  {
    std::lock_guard lk(mu_);
    start = (write_pos_ / ring_ + 2) * ring_;
  }
  SHALE_TRY(write_header(start));
  std::lock_guard lk(mu_);
  durable_trim_ = trim_req_ = write_pos_ = start;
  writable_ = true;
  if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
  return ok_status();
}

Status FileWal::append(Buffer head, Buffer body, WalCallback done) {
  uint64_t size = kRecordHeader + head.size() + body.size();
  std::lock_guard lk(mu_);
  if (failed_) return fail_error_;
  if (stop_ || !writable_) return Error::make(Errc::kShutdown, "WAL is not open for writes");
  uint64_t biggest = align_up(std::max(opts_.max_write, size), kAlign);
  uint64_t used = write_pos_ - durable_trim_;
  uint64_t slack = (queued_bytes_ / opts_.max_write + 2) * kAlign + 2 * biggest;
  if (used + queued_bytes_ + size + slack > ring_) {
    return Error::make(Errc::kUnavailable, "WAL full", true);
  }
  queued_bytes_ += size;
  queue_.push_back(Pending{std::move(head), std::move(body), std::move(done), 0});
  cv_.notify_one();
  return ok_status();
}

void FileWal::trim(uint64_t offset) {
  std::lock_guard lk(mu_);
  if (offset > trim_req_ && offset <= write_pos_) {
    trim_req_ = offset;
    cv_.notify_one();
  }
}

WalStats FileWal::stats() const {
  std::lock_guard lk(mu_);
  WalStats s = stats_;
  s.used_bytes = write_pos_ - durable_trim_ + queued_bytes_;
  return s;
}

void FileWal::shutdown() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void FileWal::fail_all(std::deque<Pending>* batch, const Error& e) {
  for (auto& p : *batch) p.done(e);
  batch->clear();
}

void FileWal::run() {
  AlignedBuf buf;
  std::unique_lock lk(mu_);
  bool blocked = false;  // the next block does not fit until a trim frees space
  while (true) {
    cv_.wait(lk, [&] {
      return stop_ || (trim_req_ > durable_trim_ && !failed_) || (!queue_.empty() && !blocked);
    });
    if (trim_req_ > durable_trim_ && !failed_) {
      uint64_t t = trim_req_;
      lk.unlock();
      Status st = write_header(t);
      lk.lock();
      if (st.ok()) {
        durable_trim_ = t;
        blocked = false;
      } else {
        failed_ = true;
        fail_error_ = Error::make(Errc::kIoError, "WAL header write failed: " + st.error().message);
        SPDLOG_ERROR("wal {}: {}", opts_.path, fail_error_.message);
      }
      continue;
    }
    if (queue_.empty()) {
      if (stop_) break;
      continue;
    }
    std::deque<Pending> batch;
    if (failed_ || (blocked && stop_)) {
      batch.swap(queue_);
      queued_bytes_ = 0;
      Error e = failed_ ? fail_error_ : Error::make(Errc::kShutdown, "WAL stopped while full");
      lk.unlock();
      fail_all(&batch, e);
      lk.lock();
      continue;
    }
    // Take as many queued records as fit in one write (at least one).
    uint64_t total = 0;
    size_t n = 0;
    for (auto& p : queue_) {
      uint64_t sz = kRecordHeader + p.head.size() + p.body.size();
      if (n > 0 && total + sz > opts_.max_write) break;
      total += sz;
      ++n;
    }
    uint64_t span = align_up(total, kAlign);
    uint64_t at = write_pos_;
    if (at % ring_ + span > ring_) at = (at / ring_ + 1) * ring_;
    if (at + span - durable_trim_ > ring_) {
      blocked = true;  // wait for the engine's next trim
      continue;
    }
    for (size_t i = 0; i < n; ++i) {
      batch.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    queued_bytes_ -= total;
    write_pos_ = at + span;
    lk.unlock();

    uint8_t* p = buf.get(span);
    Status st = p ? ok_status() : Status(Error::make(Errc::kNoSpace, "out of memory"));
    if (st.ok()) {
      uint64_t o = at;
      uint8_t* w = p;
      for (auto& r : batch) {
        uint32_t len = static_cast<uint32_t>(r.head.size() + r.body.size());
        std::memcpy(w + kRecordHeader, r.head.data(), r.head.size());
        std::memcpy(w + kRecordHeader + r.head.size(), r.body.data(), r.body.size());
        be::store32(w, kRecordMagic);
        be::store32(w + 4, len);
        be::store64(w + 8, o + kRecordHeader);
        be::store32(w + 16, crc32c::value(w + kRecordHeader, len));
        be::store32(w + 20, crc32c::value(w, 20));
        o += kRecordHeader + len;
        r.end = o;
        w += kRecordHeader + len;
      }
      std::memset(w, 0, span - total);
      st = file_->write_at(p, span, kHeaderArea + at % ring_);
      if (st.ok() && !opts_.direct_io) st = file_->sync();
    }
    lk.lock();
    if (!st.ok()) {
      failed_ = true;
      fail_error_ = Error::make(Errc::kIoError, "WAL write failed: " + st.error().message);
      SPDLOG_ERROR("wal {}: {}", opts_.path, fail_error_.message);
      Error e = fail_error_;
      lk.unlock();
      fail_all(&batch, e);
      lk.lock();
      continue;
    }
    stats_.bytes_written += span;
    stats_.writes += 1;
    lk.unlock();
    for (auto& r : batch) r.done(r.end);
    lk.lock();
  }
}

}  // namespace shale::storage
