#include "storage/file_wal.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>

#include "base/crc32c.h"
#include "base/endian.h"
#include "base/log.h"

namespace shale::storage {

namespace {

constexpr uint32_t kHeaderMagic = 0x5348574C;  // "SHWL"
constexpr uint32_t kHeaderVersion = 2;
constexpr size_t kHeaderCrcAt = 52;

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
  if (opts.max_write < 2 * kAlign) {
    return Error::make(Errc::kInvalidArgument, "WAL max write must be at least 8 KiB");
  }
  uint64_t inflight = std::max<uint32_t>(1, opts.max_inflight);
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
  // Buffered mode syncs with fdatasync, whose writeback error is reported to only one of
  // several concurrent callers: a second write in flight could be acknowledged after its pages
  // were dropped. O_DSYNC writes report their own errors, so they may overlap.
  w->inflight_limit_ = w->opts_.direct_io ? static_cast<uint32_t>(inflight) : 1;
  auto size = w->file_->size();
  if (!size.ok()) return std::move(size).error();
  // A block device may be larger than the ring (its first `cap` bytes are used); a file is
  // exactly the ring, as this build preallocated it.
  std::error_code bec;
  const bool block_device = std::filesystem::is_block_file(opts.path, bec);
  if (block_device ? *size < cap : *size != cap) {
    return Error::make(Errc::kInvalidArgument,
                       std::string(block_device ? "WAL block device " : "WAL file ") + opts.path +
                           " has size " + std::to_string(*size) + ", configured capacity is " +
                           std::to_string(cap));
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
    if (be::load32(h + 4) != kHeaderVersion) {
      return Error::make(Errc::kInvalidArgument,
                         "WAL file " + opts_.path + " has format version " +
                             std::to_string(be::load32(h + 4)) + ", this build writes " +
                             std::to_string(kHeaderVersion) +
                             "; drain it with the old build (clean shutdown) or remove it");
    }
    if (be::load32(h + kHeaderCrcAt) != crc32c::value(h, kHeaderCrcAt)) continue;
    if (be::load64(h + 8) != ring_ + kHeaderArea) {
      return Error::make(Errc::kInvalidArgument, "WAL header capacity differs from config");
    }
    uint64_t seq = be::load64(h + 24);
    if (!found || seq > header_seq_) {
      header_seq_ = seq;
      durable_trim_ = be::load64(h + 16);
      durable_scan_ = be::load64(h + 44);
      found = true;
    }
  }
  if (!found) {
    // A new file (or both slots torn, which two alternating slots rule out after the first
    // header write): start empty.
    durable_trim_ = durable_scan_ = 0;
    SHALE_TRY(write_header(0, 0));
  }
  trim_req_ = durable_trim_;
  write_pos_ = acked_end_ = acked_rec_end_ = durable_scan_;
  return ok_status();
}

Status FileWal::write_header(uint64_t trim, uint64_t scan) {
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
  be::store64(h + 44, scan);
  be::store32(h + kHeaderCrcAt, crc32c::value(h, kHeaderCrcAt));
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
  // Parses the block at logical offset `at` into *recs and returns its end, or nothing if no
  // intact block was written at exactly that offset (torn, never written, or left over from an
  // earlier ring cycle). With check_prev, the block must also name prev as its predecessor's end.
  auto try_block = [&](uint64_t at, bool check_prev, uint64_t prev,
                       std::vector<WalRecord>* recs) -> Result<std::optional<uint64_t>> {
    const std::optional<uint64_t> none;
    uint64_t in_ring = at % ring_;
    if (in_ring + kBlockHeader > ring_ || at + kBlockHeader - durable_scan_ > ring_) return none;
    auto hp = bytes(kHeaderArea + in_ring, kBlockHeader);
    if (!hp.ok()) return std::move(hp).error();
    const uint8_t* h = *hp;
    if (be::load32(h) != kBlockMagic || be::load32(h + 28) != crc32c::value(h, 28)) return none;
    uint32_t count = be::load32(h + 4);
    uint32_t len = be::load32(h + 8);
    if (be::load64(h + 12) != at || (check_prev && be::load64(h + 20) != prev)) return none;
    uint64_t span = align_up(kBlockHeader + len, kAlign);
    if (count == 0 || in_ring + span > ring_ || at + span - durable_scan_ > ring_) return none;
    auto bp = bytes(kHeaderArea + in_ring + kBlockHeader, len);
    if (!bp.ok()) return std::move(bp).error();
    const uint8_t* b = *bp;
    uint64_t pos = 0;
    uint64_t o = at + kBlockHeader;
    for (uint32_t i = 0; i < count; ++i) {
      if (pos + kRecordHeader > len) return none;
      const uint8_t* r = b + pos;
      if (be::load32(r) != kRecordMagic || be::load32(r + 20) != crc32c::value(r, 20)) {
        return none;
      }
      uint32_t rl = be::load32(r + 4);
      if (be::load64(r + 8) != o + kRecordHeader || pos + kRecordHeader + rl > len) return none;
      if (crc32c::value(r + kRecordHeader, rl) != be::load32(r + 16)) return none;
      o += kRecordHeader + rl;
      recs->push_back(WalRecord{o, Buffer::copy(r + kRecordHeader, rl)});
      pos += kRecordHeader + rl;
    }
    if (pos != len) return none;
    return std::optional<uint64_t>(at + span);
  };

  std::vector<WalRecord> out;
  uint64_t o = durable_scan_;
  while (true) {
    std::vector<WalRecord> recs;
    auto end = try_block(o, false, 0, &recs);
    if (!end.ok()) return std::move(end).error();
    if (!end->has_value() && o % ring_ != 0) {
      // A block that did not fit before the ring end moved to the next cycle's start; it must
      // follow the block that ended here, else the block meant for `o` is missing (torn).
      recs.clear();
      end = try_block((o / ring_ + 1) * ring_, true, o, &recs);
      if (!end.ok()) return std::move(end).error();
    }
    if (!end->has_value()) break;
    for (auto& r : recs) {
      if (r.end > durable_trim_) out.push_back(std::move(r));
    }
    o = **end;
  }
  std::lock_guard lk(mu_);
  write_pos_ = o;
  SPDLOG_INFO("wal {}: recovered {} records ({} bytes of log) from trim offset {}", opts_.path,
              out.size(), o - durable_scan_, durable_trim_);
  return out;
}

Status FileWal::reset() {
  // Skip two whole ring cycles past the recovery point: every block ever written lies below
  // durable_scan_ + ring (writes in flight included), so no stale block can carry a logical
  // offset that new writes will use.
  uint64_t start;
  {
    std::lock_guard lk(mu_);
    start = (write_pos_ / ring_ + 2) * ring_;
  }
  SHALE_TRY(write_header(start, start));
  std::lock_guard lk(mu_);
  durable_trim_ = trim_req_ = durable_scan_ = start;
  write_pos_ = acked_end_ = acked_rec_end_ = start;
  acked_.clear();
  writable_ = true;
  if (workers_.empty()) {
    for (uint32_t i = 0; i < inflight_limit_; ++i) workers_.emplace_back([this] { worker(); });
  }
  return ok_status();
}

Status FileWal::append(Buffer head, Buffer body, WalCallback done) {
  uint64_t size = kRecordHeader + head.size() + body.size();
  std::lock_guard lk(mu_);
  if (failed_) return fail_error_;
  if (stop_ || !writable_) return Error::make(Errc::kShutdown, "WAL is not open for writes");
  uint64_t biggest = align_up(std::max(opts_.max_write, kBlockHeader + size), kAlign);
  uint64_t used = write_pos_ - durable_scan_;
  // Each block wastes at most its header and the padding to 4 KiB; a block that does not fit
  // before the ring end skips the rest of the cycle (at most one block's worth).
  uint64_t slack =
      (queued_bytes_ / (opts_.max_write - kBlockHeader) + 2) * 2 * kAlign + 2 * biggest;
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
  if (offset > trim_req_ && offset <= acked_rec_end_) {
    trim_req_ = offset;
    cv_.notify_one();
  }
}

WalStats FileWal::stats() const {
  std::lock_guard lk(mu_);
  WalStats s = stats_;
  s.used_bytes = write_pos_ - durable_scan_ + queued_bytes_;
  return s;
}

void FileWal::shutdown() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
  workers_.clear();
}

Status FileWal::write_block(Block* b, void* scratch) {
  auto* buf = static_cast<AlignedBuf*>(scratch);
  uint8_t* p = buf->get(b->span);
  if (!p) return Error::make(Errc::kNoSpace, "out of memory");
  uint8_t* w = p + kBlockHeader;
  uint64_t o = b->at + kBlockHeader;
  for (auto& r : b->recs) {
    uint32_t len = static_cast<uint32_t>(r.head.size() + r.body.size());
    std::memcpy(w + kRecordHeader, r.head.data(), r.head.size());
    std::memcpy(w + kRecordHeader + r.head.size(), r.body.data(), r.body.size());
    be::store32(w, kRecordMagic);
    be::store32(w + 4, len);
    be::store64(w + 8, o + kRecordHeader);
    be::store32(w + 16, crc32c::value(w + kRecordHeader, len));
    be::store32(w + 20, crc32c::value(w, 20));
    o += kRecordHeader + len;
    w += kRecordHeader + len;
  }
  be::store32(p, kBlockMagic);
  be::store32(p + 4, static_cast<uint32_t>(b->recs.size()));
  be::store32(p + 8, static_cast<uint32_t>(b->records));
  be::store64(p + 12, b->at);
  be::store64(p + 20, b->prev_end);
  be::store32(p + 28, crc32c::value(p, 28));
  std::memset(w, 0, b->span - kBlockHeader - b->records);
  SHALE_TRY(file_->write_at(p, b->span, kHeaderArea + b->at % ring_));
  if (!opts_.direct_io) SHALE_TRY(file_->sync());
  return ok_status();
}

// Every worker does whatever is due, in this priority: acknowledge the completed head of the
// in-flight list (one worker at a time, so callbacks keep append order), persist a trim (one at
// a time), fail what is queued after a failure, or take the queue as the next block and write
// it. The worker that finishes a write acknowledges it itself when it is the head, so the
// common path has one thread hand-off: the appender waking a worker.
void FileWal::worker() {
  AlignedBuf buf;
  std::unique_lock lk(mu_);
  while (true) {
    cv_.wait(lk, [&] {
      bool ack = !acking_ && !inflight_.empty() && inflight_.front()->done;
      bool trim = !trimming_ && trim_req_ > durable_trim_ && !failed_;
      bool dispatch =
          !queue_.empty() && !failed_ && !blocked_ && inflight_.size() < inflight_limit_;
      bool drain =
          !queue_.empty() && (failed_ || (blocked_ && stop_)) && inflight_.empty() && !acking_;
      bool finished = stop_ && queue_.empty() && inflight_.empty() && !acking_;
      return ack || trim || dispatch || drain || finished;
    });
    if (!acking_ && !inflight_.empty() && inflight_.front()->done) {
      // Acknowledge completed blocks strictly in position order: a block that finished early
      // waits for every block before it.
      acking_ = true;
      std::vector<std::unique_ptr<Block>> ready;
      std::vector<bool> ok;
      while (!inflight_.empty() && inflight_.front()->done) {
        std::unique_ptr<Block> b = std::move(inflight_.front());
        inflight_.pop_front();
        bool good = b->st.ok() && b->at < fail_at_;
        if (good) {
          acked_end_ = b->at + b->span;
          acked_rec_end_ = b->recs.back().end;
          acked_.push_back(Acked{b->at, acked_rec_end_});
          stats_.bytes_written += b->span;
          stats_.writes += 1;
        }
        ok.push_back(good);
        ready.push_back(std::move(b));
      }
      Error e = fail_error_;
      lk.unlock();
      for (size_t i = 0; i < ready.size(); ++i) {
        for (auto& r : ready[i]->recs) {
          if (ok[i]) {
            r.done(r.end);
          } else {
            r.done(e);
          }
        }
      }
      ready.clear();
      lk.lock();
      acking_ = false;
      // Blocks that completed meanwhile are picked up by this loop; wake others only for
      // states that need every worker to look (shutdown, draining after a failure).
      if (stop_ || failed_) cv_.notify_all();
      continue;
    }
    if (!trimming_ && trim_req_ > durable_trim_ && !failed_) {
      trimming_ = true;
      uint64_t t = trim_req_;
      while (!acked_.empty() && acked_.front().rec_end <= t) acked_.pop_front();
      // Recovery must start at a block boundary: the block holding the first untrimmed record,
      // or where the next block goes when everything acknowledged is trimmed.
      uint64_t scan = acked_.empty() ? acked_end_ : acked_.front().at;
      lk.unlock();
      Status st = write_header(t, scan);
      lk.lock();
      trimming_ = false;
      if (st.ok()) {
        durable_trim_ = t;
        durable_scan_ = scan;
        blocked_ = false;
      } else {
        failed_ = true;
        fail_at_ = std::min(fail_at_, write_pos_);
        fail_error_ = Error::make(Errc::kIoError, "WAL header write failed: " + st.error().message);
        SPDLOG_ERROR("wal {}: {}", opts_.path, fail_error_.message);
      }
      cv_.notify_all();  // rare: unblocks dispatch for every idle worker
      continue;
    }
    if (!queue_.empty() && (failed_ || (blocked_ && stop_))) {
      if (!inflight_.empty() || acking_) continue;  // earlier records complete first, in order
      acking_ = true;
      std::deque<Pending> batch;
      batch.swap(queue_);
      queued_bytes_ = 0;
      Error e = failed_ ? fail_error_ : Error::make(Errc::kShutdown, "WAL stopped while full");
      lk.unlock();
      for (auto& p : batch) p.done(e);
      batch.clear();
      lk.lock();
      acking_ = false;
      cv_.notify_all();
      continue;
    }
    if (!queue_.empty() && !failed_ && !blocked_ && inflight_.size() < inflight_limit_) {
      // Take as many queued records as fit in one write (at least one).
      uint64_t total = 0;
      size_t n = 0;
      for (auto& p : queue_) {
        uint64_t sz = kRecordHeader + p.head.size() + p.body.size();
        if (n > 0 && kBlockHeader + total + sz > opts_.max_write) break;
        total += sz;
        ++n;
      }
      uint64_t span = align_up(kBlockHeader + total, kAlign);
      uint64_t at = write_pos_;
      if (at % ring_ + span > ring_) at = (at / ring_ + 1) * ring_;
      if (at + span - durable_scan_ > ring_) {
        blocked_ = true;  // wait for the engine's next trim
        continue;
      }
      auto owned = std::make_unique<Block>();
      Block* b = owned.get();
      b->at = at;
      b->prev_end = write_pos_;
      b->records = total;
      b->span = span;
      b->recs.reserve(n);
      uint64_t o = at + kBlockHeader;
      for (size_t i = 0; i < n; ++i) {
        Pending& p = queue_.front();
        o += kRecordHeader + p.head.size() + p.body.size();
        p.end = o;
        b->recs.push_back(std::move(p));
        queue_.pop_front();
      }
      queued_bytes_ -= total;
      write_pos_ = at + span;
      inflight_.push_back(std::move(owned));
      lk.unlock();
      // The block is this worker's until done is set: nobody else touches it before then.
      Status st = write_block(b, &buf);
      lk.lock();
      b->done = true;
      if (!st.ok()) {
        if (!failed_) {
          failed_ = true;
          fail_error_ = Error::make(Errc::kIoError, "WAL write failed: " + st.error().message);
          SPDLOG_ERROR("wal {}: {}", opts_.path, fail_error_.message);
        }
        fail_at_ = std::min(fail_at_, b->at);
        b->st = std::move(st);
        cv_.notify_all();
      }
      continue;
    }
    if (stop_ && queue_.empty() && inflight_.empty() && !acking_) break;
  }
  cv_.notify_all();  // the others see the same finished state
}

}  // namespace shale::storage
