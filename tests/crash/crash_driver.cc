// storage_crash: kill -9 crash test of the storage engine (after RocksDB's db_crashtest).
//
//   storage_crash run [--dir D] [--cycles N] [--seconds S] [--seed X] [--wal file|object]
//   storage_crash child --dir D --seed X --wal W    (started by `run`)
//
// The child opens the engine on a file WAL + a POSIX object directory + a SQLite MetaStore,
// and appends to 8 streams under load (16 appends in flight per stream, uploads, compaction
// and GC running, periodic trims). Each batch's count and bytes are a pure function of
// (stream, base offset), so any record can be checked without a copy of what was written.
// After each acknowledgement the child appends "A <stream> <end>" to an ack log (kill -9 keeps
// the page cache, so the log survives). The parent kills the child at a random moment, then
// opens the engine itself (running WAL recovery) and checks, for every stream, that
//   - the durable end is >= every acknowledged end (no acknowledged append lost), and
//   - every record from the start offset to the end has the expected offset, count and bytes;
// then, with the engine shut down, that no object is lost (every committed object's file is in
// the store) or leaked (every object file in the store has a MetaStore record, in any state,
// so garbage collection will reach it). The store is objstore's PosixStore, as in production.
// Exit status 0 = all cycles passed.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "base/clock.h"
#include "base/log.h"
#include "meta/sqlite_meta_store.h"
#include "objstore/posix_store.h"
#include "storage/engine.h"
#include "storage/meta_schema.h"

using namespace shale;

namespace {

constexpr int kStreams = 8;
constexpr int kInflightPerStream = 16;

uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}
uint32_t count_for(int64_t stream, int64_t base) {
  return 1 + static_cast<uint32_t>(mix(static_cast<uint64_t>(stream * 7919 + base)) % 4);
}
size_t size_for(int64_t stream, int64_t base) {
  uint64_t h = mix(static_cast<uint64_t>(stream * 104729 + base * 31));
  return h % 10 == 0 ? 64 * 1024 + h % 4096 : 100 + h % 8000;  // mostly small, some 64 KiB
}
std::string payload_for(int64_t stream, int64_t base) {
  size_t n = size_for(stream, base);
  std::string s(n, '\0');
  uint64_t x = mix(static_cast<uint64_t>(stream) << 40 ^ static_cast<uint64_t>(base));
  for (size_t i = 0; i < n; i += 8) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    std::memcpy(&s[i], &x, std::min<size_t>(8, n - i));
  }
  return s;
}

bool g_object_wal = false;  // --wal object: the WAL lives in the object directory

storage::EngineOptions engine_options(const std::string& dir) {
  storage::EngineOptions o;
  o.node_id = 0;
  o.wal_path = g_object_wal ? "object://wal" : "file://" + dir + "/wal";
  o.object_wal_batch_interval_ms = 20;
  o.object_wal_batch_bytes = 1 * storage::kMiB;
  o.wal_capacity = 64 * storage::kMiB;
  o.wal_max_write = 1 * storage::kMiB;
  o.log_cache_size = 32 * storage::kMiB;
  o.block_cache_size = 8 * storage::kMiB;
  o.upload_threshold = 2 * storage::kMiB;
  o.upload_interval_ms = 500;
  o.stream_split_size = 1 * storage::kMiB;
  o.object_block_size = 64 * storage::kKiB;
  o.object_part_size = 4 * storage::kMiB;
  o.compaction_interval_ms = 1000;
  o.object_delete_delay_ms = 500;
  o.prepared_object_ttl_ms = 5000;
  return o;
}

struct Env {
  std::unique_ptr<meta::SqliteMetaStore> meta;
  std::unique_ptr<objstore::PosixStore> store;
  std::unique_ptr<storage::Engine> engine;
};

Result<Env> open_env(const std::string& dir) {
  Env env;
  auto m = meta::SqliteMetaStore::open({dir + "/meta.db"});
  if (!m.ok()) return std::move(m).error();
  env.meta = std::move(m).value();
  auto st = objstore::PosixStore::open(dir + "/objects");
  if (!st.ok()) return std::move(st).error();
  env.store = std::move(st).value();
  auto e = storage::Engine::open(engine_options(dir), env.store.get(), env.meta.get());
  if (!e.ok()) return std::move(e).error();
  env.engine = std::move(e).value();
  return env;
}

int child_main(const std::string& dir, uint64_t seed) {
  auto env = open_env(dir);
  if (!env.ok()) {
    std::fprintf(stderr, "child: open failed: %s\n", env.error().to_string().c_str());
    return 2;
  }
  auto& engine = *env->engine;
  auto streams = engine.list_streams();
  for (size_t i = streams->size(); i < kStreams; ++i) (void)engine.create_stream({});
  streams = engine.list_streams();
  std::vector<std::pair<int64_t, storage::Stream*>> ss;
  for (auto& [id, tags] : *streams) ss.emplace_back(id, *engine.open_stream(id));
  int ack_fd = ::open((dir + "/acks").c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  std::vector<std::atomic<int>> inflight(ss.size());
  std::mt19937_64 rng(seed);
  uint64_t appends = 0;
  while (true) {
    bool issued = false;
    for (size_t i = 0; i < ss.size(); ++i) {
      auto [id, s] = ss[i];
      if (inflight[i].load() >= kInflightPerStream) continue;
      int64_t base = s->next_offset();
      ++inflight[i];
      s->append(
          base, count_for(id, base), Buffer::copy(payload_for(id, base)),
          [&, i, id = id](Result<storage::AppendResult> r) {
            if (r.ok()) {
              char line[64];
              int n = std::snprintf(line, sizeof line, "A %lld %lld\n", static_cast<long long>(id),
                                    static_cast<long long>(r->end_offset));
              if (::write(ack_fd, line, static_cast<size_t>(n)) != n) std::abort();
            } else if (!r.error().retryable) {
              std::fprintf(stderr, "child: append failed: %s\n", r.error().to_string().c_str());
              std::_Exit(3);
            }
            --inflight[i];
          });
      issued = true;
      if (++appends % 400 == 0) {
        // Retention: keep roughly the last 3000 offsets of a random stream.
        auto [tid, ts] = ss[rng() % ss.size()];
        int64_t to = std::max<int64_t>(ts->start_offset(), ts->end_offset() - 3000);
        if (ts->trim(to).ok()) {
          char line[64];
          int n = std::snprintf(line, sizeof line, "T %lld %lld\n", static_cast<long long>(tid),
                                static_cast<long long>(to));
          if (::write(ack_fd, line, static_cast<size_t>(n)) != n) std::abort();
        }
      }
    }
    if (!issued) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

struct VerifyStats {
  uint64_t records = 0;
  uint64_t bytes = 0;
  uint64_t objects = 0;     // object files checked
  uint64_t temp_files = 0;  // unfinished writes a kill left in the store's temp directory
};

// Lost and leaked objects, checked while no engine runs. Object WAL files ("wal/...") belong to
// the WAL's own bookkeeping and are left out.
bool check_objects(Env& env, const std::string& dir, const storage::EngineOptions& o,
                   VerifyStats* vs) {
  storage::Keys keys(o.ns);
  auto metas = env.meta->prefix(keys.objects());
  auto files = objstore::list_sync(*env.store, "");
  if (!metas.ok() || !files.ok()) {
    std::fprintf(stderr, "verify: listing failed: %s\n",
                 (!metas.ok() ? metas.error() : files.error()).to_string().c_str());
    return false;
  }
  // PosixStore's listing hides its temp directory: count what kills left there from the disk.
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(dir + "/objects/.shale-tmp", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    vs->temp_files++;
  }
  std::set<std::string> present;
  for (auto& f : *files) {
    if (f.key.rfind("wal/", 0) == 0) continue;
    present.insert(f.key);
  }
  std::set<std::string> known;
  for (auto& kv : *metas) {
    int64_t id = storage::Keys::parse_id(kv.key);
    auto om = storage::decode_object(kv.value);
    if (!om.ok()) {
      std::fprintf(stderr, "verify: object %lld: %s\n", static_cast<long long>(id),
                   om.error().to_string().c_str());
      return false;
    }
    std::string name = keys.object_name(id);
    known.insert(name);
    if (om->state == storage::ObjectState::kCommitted && !present.count(name)) {
      std::fprintf(stderr, "LOST OBJECT: %lld is committed but %s is not in the store\n",
                   static_cast<long long>(id), name.c_str());
      return false;
    }
  }
  for (auto& name : present) {
    if (!known.count(name)) {
      std::fprintf(stderr, "LEAKED OBJECT: %s has no MetaStore record\n", name.c_str());
      return false;
    }
  }
  vs->objects += present.size();
  return true;
}

bool verify(const std::string& dir, VerifyStats* vs) {
  std::map<int64_t, int64_t> acked;
  {
    std::ifstream in(dir + "/acks");
    std::string kind;
    long long s, v;
    while (in >> kind >> s >> v) {
      if (kind == "A") acked[s] = std::max<int64_t>(acked[s], v);
    }
  }
  auto env = open_env(dir);  // runs WAL recovery
  if (!env.ok()) {
    std::fprintf(stderr, "verify: open failed: %s\n", env.error().to_string().c_str());
    return false;
  }
  auto streams = env->engine->list_streams();
  for (auto& [id, tags] : *streams) {
    auto s = env->engine->open_stream(id);
    if (!s.ok()) {
      std::fprintf(stderr, "verify: open stream %lld: %s\n", static_cast<long long>(id),
                   s.error().to_string().c_str());
      return false;
    }
    storage::Stream* st = *s;
    if (st->end_offset() < acked[id]) {
      std::fprintf(stderr, "LOST DATA: stream %lld durable end %lld < acknowledged end %lld\n",
                   static_cast<long long>(id), static_cast<long long>(st->end_offset()),
                   static_cast<long long>(acked[id]));
      return false;
    }
    int64_t pos = st->start_offset();
    int64_t end = st->end_offset();
    bool first = true;
    while (pos < end) {
      auto p = std::make_shared<std::promise<Result<std::vector<storage::StreamRecord>>>>();
      auto f = p->get_future();
      st->read(pos, end, 4 << 20, [p](auto r) { p->set_value(std::move(r)); });
      auto r = f.get();
      if (!r.ok() || r->empty()) {
        std::fprintf(stderr, "verify: stream %lld read at %lld failed: %s\n",
                     static_cast<long long>(id), static_cast<long long>(pos),
                     r.ok() ? "empty" : r.error().to_string().c_str());
        return false;
      }
      for (auto& rec : *r) {
        bool base_ok = first ? rec.base_offset <= pos : rec.base_offset == pos;
        if (!base_ok || rec.end_offset() <= pos || rec.count != count_for(id, rec.base_offset) ||
            rec.payload.view() != payload_for(id, rec.base_offset)) {
          std::fprintf(stderr, "CORRUPT: stream %lld record at %lld (expected position %lld)\n",
                       static_cast<long long>(id), static_cast<long long>(rec.base_offset),
                       static_cast<long long>(pos));
          return false;
        }
        first = false;
        pos = rec.end_offset();
        vs->records++;
        vs->bytes += rec.payload.size();
      }
    }
  }
  // Children rarely live long enough for the compaction timer: run a round here so that
  // compaction and garbage collection are crash-tested too and the directory stays bounded
  // (objects marked in one cycle are deleted in a later one, after the grace delay).
  if (Status st = env->engine->compact_now(); !st.ok()) {
    std::fprintf(stderr, "verify: compaction failed: %s\n", st.error().to_string().c_str());
    return false;
  }
  env->engine->shutdown();
  env->engine.reset();
  return check_objects(*env, dir, engine_options(dir), vs);
}

int run_main(std::string dir, int cycles, int seconds, uint64_t seed, const char* self) {
  bool own_dir = dir.empty();
  if (own_dir) {
    char tmpl[] = "/tmp/shale_crash_XXXXXX";
    dir = ::mkdtemp(tmpl);
  }
  std::filesystem::create_directories(dir);
  std::mt19937_64 rng(seed);
  int64_t deadline = clock::mono_ms() + static_cast<int64_t>(seconds) * 1000;
  int done = 0;
  VerifyStats total;
  while ((cycles <= 0 || done < cycles) && (seconds <= 0 || clock::mono_ms() < deadline)) {
    pid_t pid = ::fork();
    if (pid == 0) {
      std::string s = std::to_string(rng());
      ::execl(self, self, "child", "--dir", dir.c_str(), "--seed", s.c_str(), "--wal",
              g_object_wal ? "object" : "file", static_cast<char*>(nullptr));
      std::_Exit(127);
    }
    auto kill_after = std::chrono::milliseconds(150 + rng() % 900);
    std::this_thread::sleep_for(kill_after);
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      std::fprintf(stderr, "cycle %d: child exited early (status %d)\n", done, status);
      return 1;
    }
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    VerifyStats vs;
    if (!verify(dir, &vs)) {
      std::fprintf(stderr, "cycle %d FAILED (data kept in %s)\n", done, dir.c_str());
      return 1;
    }
    total.records += vs.records;
    total.bytes += vs.bytes;
    total.objects += vs.objects;
    total.temp_files = vs.temp_files;
    ++done;
    if (done % 10 == 0) {
      std::printf("cycle %d ok (last verify: %llu records, %.1f MiB)\n", done,
                  static_cast<unsigned long long>(vs.records), vs.bytes / 1048576.0);
      std::fflush(stdout);
    }
  }
  std::printf(
      "storage_crash: %d kill -9 cycles, all acknowledged appends verified (%llu record "
      "checks, %.1f MiB), no object lost or leaked (%llu object checks; %llu temp files of "
      "interrupted writes in the store's temp directory)\n",
      done, static_cast<unsigned long long>(total.records), total.bytes / 1048576.0,
      static_cast<unsigned long long>(total.objects),
      static_cast<unsigned long long>(total.temp_files));
  if (own_dir) std::filesystem::remove_all(dir);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  log::init("warn");
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s run [--dir D] [--cycles N] [--seconds S] [--seed X]\n",
                 argv[0]);
    return 2;
  }
  std::string mode = argv[1], dir;
  int cycles = 0, seconds = 0;
  uint64_t seed = 1;
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--dir")
      dir = v;
    else if (k == "--cycles")
      cycles = std::stoi(v);
    else if (k == "--seconds")
      seconds = std::stoi(v);
    else if (k == "--seed")
      seed = std::stoull(v);
    else if (k == "--wal")
      g_object_wal = v == "object";
  }
  if (mode == "child") return child_main(dir, seed);
  if (cycles <= 0 && seconds <= 0) cycles = 20;
  return run_main(dir, cycles, seconds, seed, "/proc/self/exe");
}
