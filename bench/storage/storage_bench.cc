// storage_bench: figures for the storage engine (prints, asserts nothing).
//   1. FileWal alone: 64 KiB appends, many in flight — MiB/s, writes/s (buffered+fdatasync vs
//      O_DIRECT|O_DSYNC).
//   2. Engine: 64 KiB appends over 16 and 1280 streams — MiB/s; object PUTs per 8 MiB uploaded.
//   3. Engine: p50/p99/p99.9 append latency at a fixed 50 and 100 MiB/s.
//   4. FileWal alone with 1..8 writes in flight (warm ring): MiB/s, and append latency at a
//      fixed rate (`--wal` runs only these; `--only S` runs those whose name contains S).
//   5. Catch-up read: sequential read of a cold stream from objects (memory store, and a store
//      that adds 10 ms per GET), MiB/s and GETs.
//   6. Catch-up read from the POSIX store (a real directory in --dir, page cache dropped when
//      the kernel lets us), MiB/s.
//   7. Three staggered readers of one cold backlog (POSIX store, block cache smaller than the
//      backlog): object GETs per data block, against one reader alone.
//   8. Catch-up of a topic as bench/vs-kafka's catch-up scenario has it (`--only catchup-topic`):
//      16 streams uploaded together (LogCache 64 MiB: stream-set objects of ~21 MiB), a cold
//      backlog of 10x the LogCache, 3 groups of 16 readers 1/4 of the backlog apart, each
//      reading its partitions round-robin 1 MiB at a time through a 32 MiB BlockCache (and 128,
//      384 MiB): object GETs per GiB read from objects (goal <= 256), bytes fetched per byte
//      read, CPU seconds.
// The WAL file lives in --dir (default: build/bench-data); use a real disk, not tmpfs.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/log.h"
#include "meta/sqlite_meta_store.h"
#include "objstore/fault_injecting_store.h"
#include "objstore/memory_store.h"
#include "objstore/posix_store.h"
#include "storage/engine.h"
#include "storage/file_wal.h"

using namespace shale;
using namespace shale::storage;

namespace {

double secs_since(int64_t t0) { return (clock::mono_ns() - t0) / 1e9; }

void bench_wal(const std::string& dir, bool direct, double seconds) {
  std::string path = dir + (direct ? "/wal-direct" : "/wal-buffered");
  std::filesystem::remove(path);
  FileWalOptions o;
  o.path = path;
  o.capacity = 1 * kGiB;
  o.direct_io = direct;
  o.max_write = 4 * kMiB;
  auto w = FileWal::open(o);
  if (!w.ok()) {
    std::printf("wal %s: %s\n", direct ? "O_DIRECT" : "buffered", w.error().to_string().c_str());
    return;
  }
  (void)(*w)->recover();
  (void)(*w)->reset();
  Buffer head = Buffer::copy(std::string(33, 'h'));
  Buffer body = Buffer::copy(std::string(64 * 1024 - 33, 'x'));
  std::atomic<int64_t> inflight{0};
  std::atomic<uint64_t> done{0};
  std::atomic<uint64_t> last_end{0};
  int64_t t0 = clock::mono_ns();
  while (secs_since(t0) < seconds) {
    if (inflight.load() >= 256) {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
      continue;
    }
    ++inflight;
    Status st = (*w)->append(head, body, [&](Result<uint64_t> r) {
      if (r.ok()) last_end = *r;
      ++done;
      --inflight;
    });
    if (!st.ok()) {
      --inflight;
      (*w)->trim(last_end.load());  // keep the ring from filling: trim what is durable
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    } else if (done.load() % 1024 == 0) {
      (*w)->trim(last_end.load());
    }
  }
  while (inflight.load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  double s = secs_since(t0);
  auto st = (*w)->stats();
  std::printf(
      "wal %-9s 64 KiB appends: %8.1f MiB/s  %8.0f appends/s  %6.0f syncs/s  %.0f "
      "appends/sync\n",
      direct ? "O_DIRECT" : "buffered", done.load() * 64.0 / 1024 / s, done.load() / s,
      st.writes / s, static_cast<double>(done.load()) / std::max<uint64_t>(1, st.writes));
  (*w)->shutdown();
  std::filesystem::remove(path);
}

// A WAL file whose ring has been written once, as on a broker that has run for a while: the
// first pass over fallocate'd (unwritten) extents costs a metadata update per O_DSYNC write.
std::string warm_wal_file(const std::string& dir, uint64_t capacity) {
  std::string path = dir + "/wal-warm";
  if (std::filesystem::exists(path) && std::filesystem::file_size(path) == capacity) return path;
  std::filesystem::remove(path);
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return path;
  std::vector<char> zeros(4 * kMiB, 0);
  for (uint64_t w = 0; w < capacity; w += zeros.size())
    std::fwrite(zeros.data(), 1, zeros.size(), f);
  std::fflush(f);
  fdatasync(fileno(f));
  std::fclose(f);
  return path;
}

std::unique_ptr<FileWal> open_bench_wal(const std::string& dir, uint32_t inflight) {
  FileWalOptions o;
  o.path = warm_wal_file(dir, 1 * kGiB);
  o.capacity = 1 * kGiB;
  o.direct_io = true;
  o.max_write = 4 * kMiB;
  o.max_inflight = inflight;
  auto w = FileWal::open(o);
  if (!w.ok()) {
    std::printf("wal open: %s\n", w.error().to_string().c_str());
    return nullptr;
  }
  (void)(*w)->recover();
  (void)(*w)->reset();
  return std::move(w).value();
}

// FileWal throughput with `inflight` writes in flight (O_DIRECT|O_DSYNC, warm ring), 64 KiB
// appends with up to 256 appends outstanding.
void bench_wal_inflight(const std::string& dir, uint32_t inflight, double seconds) {
  auto w = open_bench_wal(dir, inflight);
  if (!w) return;
  Buffer head = Buffer::copy(std::string(33, 'h'));
  Buffer body = Buffer::copy(std::string(64 * 1024 - 33, 'x'));
  std::atomic<int64_t> outstanding{0};
  std::atomic<uint64_t> done{0};
  std::atomic<uint64_t> last_end{0};
  int64_t t0 = clock::mono_ns();
  while (secs_since(t0) < seconds) {
    if (outstanding.load() >= 256) {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
      continue;
    }
    ++outstanding;
    Status st = w->append(head, body, [&](Result<uint64_t> r) {
      if (r.ok()) last_end = *r;
      ++done;
      --outstanding;
    });
    if (!st.ok()) {
      --outstanding;
      w->trim(last_end.load());
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    } else if (done.load() % 256 == 0) {
      w->trim(last_end.load());
    }
  }
  while (outstanding.load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  double s = secs_since(t0);
  auto st = w->stats();
  std::printf(
      "wal O_DIRECT, %u in flight, warm, 64 KiB appends: %8.1f MiB/s  %6.0f writes/s  %.1f "
      "appends/write\n",
      w->max_inflight(), done.load() * 64.0 / 1024 / s, st.writes / s,
      static_cast<double>(done.load()) / std::max<uint64_t>(1, st.writes));
  w->shutdown();
}

// FileWal append latency (append call to callback) at a fixed rate of 64 KiB appends.
void bench_wal_latency(const std::string& dir, double mib_per_s, uint32_t inflight,
                       double seconds) {
  auto w = open_bench_wal(dir, inflight);
  if (!w) return;
  Buffer head = Buffer::copy(std::string(33, 'h'));
  Buffer body = Buffer::copy(std::string(64 * 1024 - 33, 'x'));
  double per_s = mib_per_s * 16;
  std::mutex mu;
  std::vector<double> lat_us;
  std::atomic<int64_t> outstanding{0};
  std::atomic<uint64_t> last_end{0};
  int64_t t0 = clock::mono_ns();
  int64_t n = 0;
  while (secs_since(t0) < seconds) {
    int64_t due = t0 + static_cast<int64_t>(n / per_s * 1e9);
    int64_t now = clock::mono_ns();
    if (now < due) {
      std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<int64_t>(due - now, 200000)));
      continue;
    }
    ++n;
    int64_t start = clock::mono_ns();
    ++outstanding;
    Status st = w->append(head, body, [&, start](Result<uint64_t> r) {
      if (r.ok()) {
        last_end = *r;
        std::lock_guard lk(mu);
        lat_us.push_back((clock::mono_ns() - start) / 1000.0);
      }
      --outstanding;
    });
    if (!st.ok()) --outstanding;
    if (n % 64 == 0) w->trim(last_end.load());
  }
  while (outstanding.load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  auto stats = w->stats();
  w->shutdown();
  std::sort(lat_us.begin(), lat_us.end());
  auto pct = [&](double p) {
    return lat_us.empty()
               ? 0.0
               : lat_us[std::min(lat_us.size() - 1, static_cast<size_t>(p * lat_us.size()))];
  };
  std::printf(
      "wal latency at %.0f MiB/s (64 KiB, %u in flight, %zu appends, %.1f appends/write): p50 "
      "%.2f ms  p99 %.2f ms  p99.9 %.2f ms  max %.2f ms\n",
      mib_per_s, w->max_inflight(), lat_us.size(),
      static_cast<double>(lat_us.size()) / std::max<uint64_t>(1, stats.writes), pct(0.5) / 1000,
      pct(0.99) / 1000, pct(0.999) / 1000, lat_us.empty() ? 0.0 : lat_us.back() / 1000);
}

EngineOptions engine_opts(const std::string& dir, const std::string& name) {
  EngineOptions o;
  o.wal_path = "file://" + dir + "/" + name + ".wal";
  o.wal_capacity = 1 * kGiB;
  o.log_cache_size = 1 * kGiB;
  o.block_cache_size = 256 * kMiB;
  o.upload_threshold = 128 * kMiB;
  o.upload_interval_ms = -1;
  o.compaction_interval_ms = 0;
  return o;
}

struct Rig {
  std::unique_ptr<meta::SqliteMetaStore> meta;
  objstore::MemoryStore store;
  std::unique_ptr<Engine> engine;
};

std::unique_ptr<Rig> make_rig(const std::string& dir, const std::string& name, EngineOptions o,
                              objstore::ObjectStore* store = nullptr) {
  auto rig = std::make_unique<Rig>();
  std::filesystem::remove(dir + "/" + name + ".db");
  std::filesystem::remove(dir + "/" + name + ".wal");
  rig->meta = std::move(meta::SqliteMetaStore::open({dir + "/" + name + ".db"})).value();
  auto e = Engine::open(o, store ? store : &rig->store, rig->meta.get());
  if (!e.ok()) {
    std::printf("engine open: %s\n", e.error().to_string().c_str());
    return nullptr;
  }
  rig->engine = std::move(e).value();
  return rig;
}

void bench_engine_streams(const std::string& dir, int nstreams, double seconds) {
  auto rig = make_rig(dir, "streams" + std::to_string(nstreams),
                      engine_opts(dir, "streams" + std::to_string(nstreams)));
  if (!rig) return;
  std::vector<Stream*> ss;
  for (int i = 0; i < nstreams; ++i)
    ss.push_back(*rig->engine->open_stream(*rig->engine->create_stream({})));
  Buffer payload = Buffer::copy(std::string(64 * 1024, 'p'));
  std::atomic<int64_t> inflight{0};
  std::atomic<uint64_t> done{0}, refused{0};
  int64_t t0 = clock::mono_ns();
  size_t i = 0;
  while (secs_since(t0) < seconds) {
    if (inflight.load() >= 256) {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
      continue;
    }
    Stream* s = ss[i++ % ss.size()];
    ++inflight;
    s->append(s->next_offset(), 1, payload, [&](Result<AppendResult> r) {
      if (r.ok())
        ++done;
      else
        ++refused;
      --inflight;
    });
  }
  while (inflight.load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  double s = secs_since(t0);
  (void)rig->engine->flush();
  auto st = rig->engine->stats();
  std::printf(
      "engine %5d streams, 64 KiB appends: %8.1f MiB/s acked (%llu refused by "
      "back-pressure); uploads: %llu objects, %llu PUTs, %.2f PUTs per 8 MiB\n",
      nstreams, done.load() * 64.0 / 1024 / s, static_cast<unsigned long long>(refused.load()),
      static_cast<unsigned long long>(st.objects_uploaded),
      static_cast<unsigned long long>(st.object_puts),
      st.object_puts / std::max(1.0, st.bytes_uploaded / (8.0 * kMiB)));
  rig->engine->shutdown();
}

void bench_latency(const std::string& dir, double mib_per_s, double seconds) {
  auto rig = make_rig(dir, "latency", engine_opts(dir, "latency"));
  if (!rig) return;
  std::vector<Stream*> ss;
  for (int i = 0; i < 16; ++i)
    ss.push_back(*rig->engine->open_stream(*rig->engine->create_stream({})));
  Buffer payload = Buffer::copy(std::string(64 * 1024, 'p'));
  double per_s = mib_per_s * 16;  // 64 KiB appends
  std::mutex mu;
  std::vector<double> lat_us;
  std::atomic<int64_t> inflight{0};
  int64_t t0 = clock::mono_ns();
  int64_t n = 0;
  while (secs_since(t0) < seconds) {
    int64_t due = t0 + static_cast<int64_t>(n / per_s * 1e9);
    int64_t now = clock::mono_ns();
    if (now < due) {
      std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<int64_t>(due - now, 200000)));
      continue;
    }
    Stream* s = ss[n++ % ss.size()];
    int64_t start = clock::mono_ns();
    ++inflight;
    s->append(s->next_offset(), 1, payload, [&, start](Result<AppendResult> r) {
      if (r.ok()) {
        std::lock_guard lk(mu);
        lat_us.push_back((clock::mono_ns() - start) / 1000.0);
      }
      --inflight;
    });
  }
  while (inflight.load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::sort(lat_us.begin(), lat_us.end());
  auto pct = [&](double p) {
    return lat_us.empty()
               ? 0.0
               : lat_us[std::min(lat_us.size() - 1, static_cast<size_t>(p * lat_us.size()))];
  };
  std::printf(
      "engine append latency at %.0f MiB/s (64 KiB, 16 streams, %zu appends): p50 %.2f ms  "
      "p99 %.2f ms  p99.9 %.2f ms  max %.2f ms\n",
      mib_per_s, lat_us.size(), pct(0.5) / 1000, pct(0.99) / 1000, pct(0.999) / 1000,
      lat_us.empty() ? 0.0 : lat_us.back() / 1000);
  rig->engine->shutdown();
}

// Appends `total` bytes of 16 KiB records to stream `id` and waits for every acknowledgement.
void write_backlog(Stream* s, uint64_t total) {
  Buffer payload = Buffer::copy(std::string(16 * 1024, 'b'));
  std::atomic<int64_t> inflight{0};
  for (uint64_t w = 0; w < total; w += payload.size()) {
    while (inflight.load() >= 256) std::this_thread::sleep_for(std::chrono::microseconds(50));
    ++inflight;
    s->append(s->next_offset(), 1, payload, [&](Result<AppendResult>) { --inflight; });
  }
  while (inflight.load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

// Reads [from, end) sequentially, 1 MiB per call; calls progress(bytes so far) after each
// read. Returns the bytes read, or -1 on a failed read.
int64_t read_through(Stream* s, int64_t from, int64_t end,
                     const std::function<void(uint64_t)>& progress = {}) {
  int64_t pos = from;
  uint64_t bytes = 0;
  while (pos < end) {
    auto p = std::make_shared<std::promise<Result<std::vector<StreamRecord>>>>();
    auto f = p->get_future();
    s->read(pos, end, 1 * kMiB, [p](auto r) { p->set_value(std::move(r)); });
    auto r = f.get();
    if (!r.ok() || r->empty()) {
      std::printf("read failed at %lld: %s\n", static_cast<long long>(pos),
                  r.ok() ? "empty" : r.error().to_string().c_str());
      return -1;
    }
    for (auto& rec : *r) bytes += rec.payload.size();
    pos = r->back().end_offset();
    if (progress) progress(bytes);
  }
  return static_cast<int64_t>(bytes);
}

void bench_catchup(const std::string& dir, uint64_t total, int delay_ms) {
  auto o = engine_opts(dir, "catchup");
  o.upload_threshold = 64 * kMiB;
  auto rig = make_rig(dir, "catchup", o);
  if (!rig) return;
  int64_t id = *rig->engine->create_stream({});
  write_backlog(*rig->engine->open_stream(id), total);
  rig->engine->shutdown();
  rig->engine.reset();
  // Reopen cold: the LogCache is empty, every read goes to objects. Every GET completes
  // delay_ms after it was made (an object store's first-byte latency), without blocking the
  // caller, as a real store's GETs do.
  objstore::FaultInjectingStore slow(rig->store);
  slow.set_delay(objstore::Op::kGet, std::chrono::milliseconds(delay_ms));
  auto e = Engine::open(o, &slow, rig->meta.get());
  if (!e.ok()) return;
  Stream* s = *(*e)->open_stream(id);
  int64_t t0 = clock::mono_ns();
  int64_t bytes = read_through(s, 0, s->end_offset());
  double secs = secs_since(t0);
  if (bytes > 0) {
    std::printf(
        "catch-up read, %llu MiB cold, %d ms per GET: %8.1f MiB/s, %llu GETs (%.1f per MiB)\n",
        static_cast<unsigned long long>(total / kMiB), delay_ms, bytes / 1048576.0 / secs,
        static_cast<unsigned long long>(slow.calls(objstore::Op::kGet)),
        slow.calls(objstore::Op::kGet) / (bytes / 1048576.0));
  }
  (*e)->shutdown();
}

// Tries to empty the page cache so that reads come from the disk; says whether it could.
bool drop_page_cache() {
  ::sync();
  FILE* f = std::fopen("/proc/sys/vm/drop_caches", "w");
  if (!f) return false;
  bool ok = std::fputs("3\n", f) >= 0;
  ok = std::fclose(f) == 0 && ok;
  return ok;
}

// A cold backlog in a POSIX object directory under dir/name.objects: returns the store, the
// meta store and the stream id; the engine that wrote it has been shut down.
struct PosixBacklog {
  std::unique_ptr<meta::SqliteMetaStore> meta;
  std::unique_ptr<objstore::PosixStore> store;
  int64_t stream = 0;
};

std::optional<PosixBacklog> make_posix_backlog(const std::string& dir, const std::string& name,
                                               const EngineOptions& o, uint64_t total) {
  PosixBacklog b;
  std::filesystem::remove_all(dir + "/" + name + ".objects");
  std::filesystem::remove(dir + "/" + name + ".db");
  std::filesystem::remove(dir + "/" + name + ".wal");
  auto st = objstore::PosixStore::open(dir + "/" + name + ".objects");
  if (!st.ok()) {
    std::printf("%s: %s\n", name.c_str(), st.error().to_string().c_str());
    return std::nullopt;
  }
  b.store = std::move(st).value();
  b.meta = std::move(meta::SqliteMetaStore::open({dir + "/" + name + ".db"})).value();
  auto e = Engine::open(o, b.store.get(), b.meta.get());
  if (!e.ok()) {
    std::printf("%s: engine open: %s\n", name.c_str(), e.error().to_string().c_str());
    return std::nullopt;
  }
  b.stream = *(*e)->create_stream({});
  write_backlog(*(*e)->open_stream(b.stream), total);
  (*e)->shutdown();
  return b;
}

void bench_catchup_posix(const std::string& dir, uint64_t total) {
  auto o = engine_opts(dir, "catchup-posix");
  o.upload_threshold = 64 * kMiB;
  auto b = make_posix_backlog(dir, "catchup-posix", o, total);
  if (!b) return;
  bool dropped = drop_page_cache();
  auto e = Engine::open(o, b->store.get(), b->meta.get());
  if (!e.ok()) return;
  Stream* s = *(*e)->open_stream(b->stream);
  auto before = b->store->stats();
  int64_t t0 = clock::mono_ns();
  int64_t bytes = read_through(s, 0, s->end_offset());
  double secs = secs_since(t0);
  auto after = b->store->stats();
  if (bytes >= 0) {
    std::printf(
        "catch-up read, %llu MiB cold, POSIX store (page cache %s): %8.1f MiB/s, %llu GETs "
        "(%.1f per MiB)\n",
        static_cast<unsigned long long>(total / kMiB),
        dropped ? "dropped" : "NOT dropped: drop_caches refused", bytes / 1048576.0 / secs,
        static_cast<unsigned long long>(after.gets - before.gets),
        (after.gets - before.gets) / (bytes / 1048576.0));
  }
  (*e)->shutdown();
  std::filesystem::remove_all(dir + "/catchup-posix.objects");
}

// `readers` readers of one cold backlog; reader k starts once reader k-1 has read `lag` bytes.
// The block cache holds a quarter of the backlog, so trailing readers find blocks only if the
// cache keeps what they are approaching.
void bench_staggered(const std::string& dir, uint64_t total, int readers, uint64_t lag) {
  auto o = engine_opts(dir, "staggered");
  o.upload_threshold = 64 * kMiB;
  o.block_cache_size = total / 4;
  auto b = make_posix_backlog(dir, "staggered", o, total);
  if (!b) return;
  double blocks = static_cast<double>(total) / o.object_block_size;
  for (int n : {1, readers}) {
    (void)drop_page_cache();
    auto e = Engine::open(o, b->store.get(), b->meta.get());
    if (!e.ok()) return;
    Stream* s = *(*e)->open_stream(b->stream);
    int64_t end = s->end_offset();
    auto before = b->store->stats();
    std::vector<std::atomic<uint64_t>> progress(n);
    std::vector<std::thread> ts;
    std::atomic<bool> failed{false};
    int64_t t0 = clock::mono_ns();
    for (int k = 0; k < n; ++k) {
      ts.emplace_back([&, k] {
        if (k > 0) {
          while (progress[k - 1].load() < lag && !failed.load()) {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
          }
        }
        auto* pk = &progress[k];
        if (read_through(s, 0, end, [pk](uint64_t got) { pk->store(got); }) < 0) failed = true;
        pk->store(UINT64_MAX);  // done: never hold back the next reader
      });
    }
    for (auto& t : ts) t.join();
    double secs = secs_since(t0);
    auto after = b->store->stats();
    uint64_t gets = after.gets - before.gets;
    if (!failed) {
      std::printf(
          "staggered readers: %d reader(s) of %llu MiB, %llu MiB apart, block cache %llu MiB: "
          "%llu GETs for %.0f blocks = %.2f GETs per block (%.1f s, %.0f MiB/s in all)\n",
          n, static_cast<unsigned long long>(total / kMiB),
          static_cast<unsigned long long>(lag / kMiB),
          static_cast<unsigned long long>(o.block_cache_size / kMiB),
          static_cast<unsigned long long>(gets), blocks, gets / blocks, secs,
          n * total / 1048576.0 / secs);
    }
    (*e)->shutdown();
  }
  std::filesystem::remove_all(dir + "/staggered.objects");
}

// bench/vs-kafka's catch-up, counted: GETs per GiB read from objects (issue #13's goal is
// <= 256, one GET per 4 MiB), bytes fetched per byte read, and process CPU per GiB read.
void bench_catchup_topic(const std::string& dir, uint64_t total, uint64_t block_cache) {
  constexpr int kStreams = 16;
  constexpr int kGroups = 3;
  auto o = engine_opts(dir, "catchup-topic");
  o.log_cache_size = 1 * kGiB;         // writing: no back-pressure
  o.upload_threshold = 64 * kMiB / 3;  // objects as a 64 MiB LogCache uploads them
  auto rig = make_rig(dir, "catchup-topic", o);
  if (!rig) return;
  std::vector<int64_t> ids;
  std::vector<Stream*> ss;
  for (int i = 0; i < kStreams; ++i) {
    ids.push_back(*rig->engine->create_stream({}));
    ss.push_back(*rig->engine->open_stream(ids.back()));
  }
  Buffer payload = Buffer::copy(std::string(64 * 1024, 't'));
  std::atomic<int64_t> inflight{0};
  for (uint64_t w = 0, n = 0; w < total; w += payload.size(), ++n) {
    while (inflight.load() >= 256) std::this_thread::sleep_for(std::chrono::microseconds(50));
    ++inflight;
    Stream* s = ss[n % kStreams];
    s->append(s->next_offset(), 1, payload, [&](Result<AppendResult>) { --inflight; });
  }
  while (inflight.load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  rig->engine->shutdown();
  rig->engine.reset();
  o.log_cache_size = 64 * kMiB;  // as the scenario's overrides
  o.block_cache_size = block_cache;
  o.upload_threshold = 0;
  auto e = Engine::open(o, &rig->store, rig->meta.get());
  if (!e.ok()) return;
  ss.clear();
  for (auto id : ids) ss.push_back(*(*e)->open_stream(id));
  auto before = rig->store.stats();  // the store's counters: the same figure for any engine
  rusage ru0{};
  ::getrusage(RUSAGE_SELF, &ru0);
  std::vector<std::atomic<uint64_t>> progress(kGroups);
  std::atomic<uint64_t> read_bytes{0};
  std::atomic<bool> failed{false};
  std::vector<std::thread> ts;
  const uint64_t lag = total / 4;
  int64_t t0 = clock::mono_ns();
  for (int g = 0; g < kGroups; ++g) {
    ts.emplace_back([&, g] {
      if (g > 0) {
        while (progress[g - 1].load() < lag && !failed.load()) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
      }
      std::vector<int64_t> pos(kStreams, 0);
      uint64_t bytes = 0;
      for (bool more = true; more && !failed.load();) {
        more = false;
        for (int i = 0; i < kStreams; ++i) {
          int64_t end = ss[i]->end_offset();
          if (pos[i] >= end) continue;
          auto p = std::make_shared<std::promise<Result<std::vector<StreamRecord>>>>();
          auto f = p->get_future();
          ss[i]->read(pos[i], end, 1 * kMiB, [p](auto r) { p->set_value(std::move(r)); });
          auto r = f.get();
          if (!r.ok() || r->empty()) {
            failed = true;
            break;
          }
          for (auto& rec : *r) {
            if (rec.end_offset() > pos[i]) bytes += rec.payload.size();
            pos[i] = std::max(pos[i], rec.end_offset());
          }
          more |= pos[i] < end;
          progress[g].store(bytes);
        }
      }
      read_bytes += bytes;
      progress[g].store(UINT64_MAX);
    });
  }
  for (auto& t : ts) t.join();
  double secs = secs_since(t0);
  rusage ru1{};
  ::getrusage(RUSAGE_SELF, &ru1);
  auto cpu = [](const rusage& r) {
    return r.ru_utime.tv_sec + r.ru_stime.tv_sec + (r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6;
  };
  auto after = rig->store.stats();
  // Every byte read comes from objects: the engine reopened cold with the backlog uploaded.
  double read_gib = read_bytes.load() / double(kGiB);
  uint64_t gets = after.gets - before.gets;
  if (!failed && read_gib > 0) {
    std::printf(
        "catch-up of a topic: %d streams, %llu MiB cold backlog, %d groups %llu MiB apart, "
        "LogCache 64 MiB, BlockCache %llu MiB: %llu GETs for %.2f GiB read from objects = %.0f "
        "GETs per GiB (%.2f MiB per GET), %.2f bytes fetched per byte read, %.2f CPU s per GiB "
        "read (%.1f s)\n",
        kStreams, static_cast<unsigned long long>(total / kMiB), kGroups,
        static_cast<unsigned long long>(lag / kMiB),
        static_cast<unsigned long long>(block_cache / kMiB), static_cast<unsigned long long>(gets),
        read_gib, gets / read_gib, read_gib * 1024 / std::max<uint64_t>(gets, 1),
        (after.get_bytes - before.get_bytes) / (read_gib * kGiB), (cpu(ru1) - cpu(ru0)) / read_gib,
        secs);
  } else {
    std::printf("catch-up of a topic: a read failed\n");
  }
  (*e)->shutdown();
}

}  // namespace

int main(int argc, char** argv) {
  log::init("warn");
  std::string dir = "build/bench-data";
  bool quick = false;
  std::string only;  // run only the benchmarks whose name contains this (wal, streams, ...)
  bool wal_only = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--dir" && i + 1 < argc) dir = argv[++i];
    if (a == "--only" && i + 1 < argc) only = argv[++i];
    if (a == "--quick") quick = true;
    if (a == "--wal") wal_only = true;  // only the FileWal figures, in more detail
  }
  auto want = [&](const char* name) {
    return only.empty() || std::string(name).find(only) != std::string::npos;
  };
  std::filesystem::create_directories(dir);
  dir = std::filesystem::absolute(dir).string();  // the POSIX store wants an absolute root
  double secs = quick ? 1.5 : 5;
  if (wal_only) {
    for (uint32_t n : {1u, 2u, 4u, 8u}) bench_wal_inflight(dir, n, secs);
    for (double rate : {50.0, 100.0}) {
      for (uint32_t n : {1u, 4u}) bench_wal_latency(dir, rate, n, secs * 2);
    }
    std::filesystem::remove(dir + "/wal-warm");
    return 0;
  }
  if (want("wal")) bench_wal(dir, false, secs);
  if (want("wal")) bench_wal(dir, true, secs);
  if (want("wal-inflight")) {
    for (uint32_t n : {1u, 4u}) bench_wal_inflight(dir, n, secs);
  }
  if (want("wal-latency")) {
    for (uint32_t n : {1u, 4u}) bench_wal_latency(dir, 100, n, secs * 2);
  }
  std::filesystem::remove(dir + "/wal-warm");
  if (want("streams16")) bench_engine_streams(dir, 16, secs);
  if (want("streams1280")) bench_engine_streams(dir, 1280, secs);
  if (want("latency")) bench_latency(dir, 50, secs);
  if (want("latency")) bench_latency(dir, 100, secs);
  if (want("catchup")) bench_catchup(dir, quick ? 64 * kMiB : 256 * kMiB, 0);
  if (want("catchup")) bench_catchup(dir, quick ? 64 * kMiB : 256 * kMiB, 10);
  if (want("catchup-posix")) bench_catchup_posix(dir, quick ? 256 * kMiB : 1 * kGiB);
  if (want("catchup-topic")) {
    // 32 MiB: bench/vs-kafka's override; 384 MiB: the default on its 24 GiB machine.
    for (uint64_t bc : {32 * kMiB, 128 * kMiB, 384 * kMiB}) {
      bench_catchup_topic(dir, quick ? 320 * kMiB : 640 * kMiB, bc);
    }
  }
  if (want("staggered"))
    bench_staggered(dir, quick ? 128 * kMiB : 512 * kMiB, 3, (quick ? 128 * kMiB : 512 * kMiB) / 8);
  return 0;
}
