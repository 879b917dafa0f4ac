// The storage engine on the real S3-compatible server (signature-checking moto): appends are
// uploaded as objects through SigV4-signed requests and read back after a restart; and while
// the store refuses every request (a wrong secret), appends stay durable in the WAL and are
// served from the LogCache, and a restart with the right credentials uploads them — a failing
// object store costs no acknowledged record.
#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <future>
#include <string>

#include "meta/sqlite_meta_store.h"
#include "objstore/object_store.h"
#include "s3_server.h"
#include "storage/engine.h"

namespace shale::objstore {
namespace {

using storage::AppendResult;
using storage::Engine;
using storage::EngineOptions;
using storage::Stream;
using storage::StreamRecord;

class Scratch {
 public:
  Scratch() {
    std::string tmpl = std::filesystem::temp_directory_path().string() + "/shale-s3eng-XXXXXX";
    path_ = ::mkdtemp(tmpl.data());
  }
  ~Scratch() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

std::string payload_for(int64_t offset, size_t n) {
  std::string s(n, '\0');
  uint64_t x = static_cast<uint64_t>(offset) * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    s[i] = static_cast<char>(x);
  }
  return s;
}

Result<AppendResult> append_sync(Stream* s, const std::string& p) {
  std::promise<Result<AppendResult>> pr;
  auto f = pr.get_future();
  s->append(s->next_offset(), 1, Buffer::copy(p),
            [&pr](Result<AppendResult> r) { pr.set_value(std::move(r)); });
  return f.get();
}

Result<std::vector<StreamRecord>> read_sync(Stream* s, int64_t start, int64_t end) {
  std::promise<Result<std::vector<StreamRecord>>> pr;
  auto f = pr.get_future();
  s->read(start, end, 1 << 20,
          [&pr](Result<std::vector<StreamRecord>> r) { pr.set_value(std::move(r)); });
  return f.get();
}

// Reads [0, end) and checks every record's bytes.
void expect_all_readable(Stream* s, int64_t end, size_t size) {
  int64_t pos = 0;
  while (pos < end) {
    auto r = read_sync(s, pos, end);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    ASSERT_FALSE(r->empty()) << "nothing at " << pos;
    for (auto& rec : *r) {
      ASSERT_EQ(rec.base_offset, pos);
      ASSERT_EQ(rec.payload.view(), payload_for(pos, size)) << "at " << pos;
      pos = rec.end_offset();
    }
  }
}

EngineOptions options(const Scratch& dir, const std::string& ns) {
  EngineOptions o;
  o.ns = ns;
  o.wal_path = "file://" + dir.file("wal");
  o.wal_capacity = 64 << 20;
  o.log_cache_size = 32 << 20;
  o.block_cache_size = 8 << 20;
  o.upload_threshold = 4 << 20;
  o.stream_split_size = 1 << 20;
  o.object_block_size = 64 << 10;
  o.object_part_size = 5 << 20;  // S3's smallest part size
  o.upload_interval_ms = -1;
  o.compaction_interval_ms = 0;
  return o;
}

// A namespace per run, so reruns against a long-lived server never see each other's objects.
std::string unique_ns(const char* what) {
  return std::string("s3eng-") + what + "-" + std::to_string(::getpid());
}

// Object keys are <hash prefix>/<ns>/<object id> (the hash spreads keys over S3 partitions).
size_t count_objects(ObjectStore& store, const std::string& ns) {
  auto l = list_sync(store, "");
  EXPECT_TRUE(l.ok()) << l.error().to_string();
  if (!l.ok()) return 0;
  size_t n = 0;
  for (const auto& o : *l) n += o.key.find("/" + ns + "/") != std::string::npos;
  return n;
}

TEST(S3Engine, UploadsThenReadsBackAfterRestart) {
  Scratch dir;
  auto meta = std::move(meta::SqliteMetaStore::open({dir.file("meta.db")})).value();
  auto store = open_store(g_info.secret_key, g_info.bucket);
  const std::string ns = unique_ns("roundtrip");
  constexpr size_t kSize = 48 << 10;
  constexpr int kRecords = 600;  // ~28 MiB: several uploads, stream objects, multipart
  int64_t id = 0;
  {
    auto e = Engine::open(options(dir, ns), store.get(), meta.get());
    ASSERT_TRUE(e.ok()) << e.error().to_string();
    auto created = (*e)->create_stream({});
    ASSERT_TRUE(created.ok()) << created.error().to_string();
    id = *created;
    auto s = (*e)->open_stream(id);
    ASSERT_TRUE(s.ok()) << s.error().to_string();
    for (int i = 0; i < kRecords; ++i) {
      auto r = append_sync(*s, payload_for(i, kSize));
      ASSERT_TRUE(r.ok()) << r.error().to_string();
      ASSERT_EQ(r->base_offset, i);
    }
    ASSERT_TRUE((*e)->flush().ok());
    auto st = (*e)->stats();
    EXPECT_GT(st.objects_uploaded, 0u);
    EXPECT_GE(st.bytes_uploaded, kRecords * kSize);
    (*e)->shutdown();
  }
  EXPECT_GT(count_objects(*store, ns), 0u) << "no object under " << ns << " in the bucket";

  // A fresh engine (its WAL empty after the graceful shutdown) reads everything from S3.
  std::filesystem::remove(dir.file("wal"));
  auto e = Engine::open(options(dir, ns), store.get(), meta.get());
  ASSERT_TRUE(e.ok()) << e.error().to_string();
  auto s = (*e)->open_stream(id);
  ASSERT_TRUE(s.ok()) << s.error().to_string();
  ASSERT_EQ((*s)->end_offset(), kRecords);
  expect_all_readable(*s, kRecords, kSize);
  EXPECT_GT((*e)->stats().object_gets, 0u);
  (*e)->shutdown();
}

TEST(S3Engine, RefusingStoreCostsNoAcknowledgedRecord) {
  Scratch dir;
  auto meta = std::move(meta::SqliteMetaStore::open({dir.file("meta.db")})).value();
  auto bad = open_store(g_info.secret_key + "x", g_info.bucket);  // every request refused (403)
  const std::string ns = unique_ns("refused");
  constexpr size_t kSize = 32 << 10;
  constexpr int kRecords = 64;  // 2 MiB: below the upload threshold of 4 MiB
  int64_t id = 0;
  {
    auto e = Engine::open(options(dir, ns), bad.get(), meta.get());
    ASSERT_TRUE(e.ok()) << e.error().to_string();
    auto created = (*e)->create_stream({});
    ASSERT_TRUE(created.ok()) << created.error().to_string();
    id = *created;
    auto s = (*e)->open_stream(id);
    ASSERT_TRUE(s.ok()) << s.error().to_string();
    for (int i = 0; i < kRecords; ++i) {
      auto r = append_sync(*s, payload_for(i, kSize));
      ASSERT_TRUE(r.ok()) << r.error().to_string();  // durable in the WAL: S3 is not involved
    }
    // Tail reads come from the LogCache while the store refuses everything.
    expect_all_readable(*s, kRecords, kSize);
    // An upload now fails with the store's error (nothing is committed, nothing dropped).
    Status f = (*e)->flush();
    EXPECT_FALSE(f.ok());
    expect_all_readable(*s, kRecords, kSize);
    EXPECT_EQ((*e)->stats().objects_uploaded, 0u);
    // The engine is dropped without a successful upload, as a broker killed at this point.
  }
  // Restart with the right credentials: WAL recovery replays the records and uploads them.
  auto good = open_store(g_info.secret_key, g_info.bucket);
  auto e = Engine::open(options(dir, ns), good.get(), meta.get());
  ASSERT_TRUE(e.ok()) << e.error().to_string();
  auto s = (*e)->open_stream(id);
  ASSERT_TRUE(s.ok()) << s.error().to_string();
  ASSERT_EQ((*s)->end_offset(), kRecords);
  expect_all_readable(*s, kRecords, kSize);
  ASSERT_TRUE((*e)->flush().ok());
  EXPECT_GT(count_objects(*good, ns), 0u);
  (*e)->shutdown();
}

}  // namespace
}  // namespace shale::objstore
