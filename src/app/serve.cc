// `shale serve`: load the configuration, prepare data.dir, start the shards and the Kafka
// listeners, print one banner line on stdout, and run until SIGTERM or SIGINT.
//
// Threads: main() blocks SIGINT/SIGTERM before any thread starts, so only its sigwait() sees
// them; the shards (net::ShardPool) run everything else. With --metrics-file, one more thread
// (MetricsWriter) rewrites that file every interval from thread-safe getters only.
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <CLI/CLI.hpp>

#include "app/broker_settings.h"
#include "app/command.h"
#include "app/config.h"
#include "app/security_setup.h"
#include "app/wal_uri.h"
#include "base/log.h"
#include "base/metrics.h"
#include "broker/api_versions.h"
#include "broker/broker.h"
#include "broker/broker_handlers.h"
#include "broker/dispatcher.h"
#include "broker/group_service.h"
#include "broker/ownership.h"
#include "broker/txn_handlers.h"
#include "cluster/identity.h"
#include "cluster/member.h"
#include "http/server.h"
#include "meta/lease_keeper.h"
#include "meta/open_store.h"
#include "meta/sqlite_meta_store.h"
#include "net/server.h"
#include "objstore/factory.h"
#include "storage/engine.h"

namespace shale::app {
namespace {

// Storage options for node `node` whose WAL is `wal_uri` (s3.wal.path syntax, AutoMQ's
// spellings accepted); the rest from the configuration. An object WAL in another bucket gets
// its store in *wal_store, which must outlive the engine.
Result<storage::EngineOptions> engine_options_for(const Config& cfg, int32_t node,
                                                  const std::string& wal_uri,
                                                  std::unique_ptr<objstore::ObjectStore>* wal_store,
                                                  bool warn) {
  storage::EngineOptions eo;
  eo.node_id = node;
  eo.wal_capacity = static_cast<uint64_t>(cfg.get_long("s3.wal.capacity"));
  auto wal = parse_wal_uri(wal_uri);
  if (!wal.ok())
    return Error::make(Errc::kInvalidArgument, "configuration key " + wal.error().message);
  if (warn && !wal->ignored.empty()) {
    spdlog::warn("s3.wal.path: AutoMQ parameter(s) {} accepted but not used by Shale",
                 fmt::join(wal->ignored, ", "));
  }
  if (wal->kind == WalUri::Kind::kFile) {
    eo.wal_path = "file://" + wal->path;
    if (wal->capacity) eo.wal_capacity = *wal->capacity;
  } else {
    eo.wal_path = "object://" + (wal->prefix.empty() ? eo.ns + "/wal" : wal->prefix);
    if (wal->bucket) {
      auto ws = objstore::open_object_store(*wal->bucket);
      if (!ws.ok())
        return Error::make(Errc::kInvalidArgument,
                           "configuration key 's3.wal.path': " + ws.error().message);
      *wal_store = std::move(ws).value();
      eo.wal_store = wal_store->get();
    }
    if (wal->batch_interval_ms) eo.object_wal_batch_interval_ms = *wal->batch_interval_ms;
    if (wal->batch_bytes) eo.object_wal_batch_bytes = *wal->batch_bytes;
    if (wal->max_unflushed) eo.object_wal_max_unflushed = *wal->max_unflushed;
  }
  eo.log_cache_size = static_cast<uint64_t>(cfg.get_long("s3.wal.cache.size"));
  eo.block_cache_size = static_cast<uint64_t>(cfg.get_long("s3.block.cache.size"));
  eo.upload_threshold = static_cast<uint64_t>(cfg.get_long("s3.wal.upload.threshold"));
  eo.upload_interval_ms = cfg.get_long("s3.wal.upload.interval.ms");
  return eo;
}

std::string host_port(const asio::ip::tcp::endpoint& ep) {
  std::string a = ep.address().to_string();
  if (ep.address().is_v6()) a = "[" + a + "]";
  return a + ":" + std::to_string(ep.port());
}

uint64_t physical_memory() {
  long pages = ::sysconf(_SC_PHYS_PAGES);
  long page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return uint64_t{8} << 30;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
}

// Scrape-time figures for /metrics: the storage engine's counters (AutoMQ's kafka_stream_*
// names where it has one), connections, and the process's CPU and memory (Prometheus's
// standard process_* names).
void collect(metrics::Sink& s, const storage::Engine& engine, const net::Server& server) {
  const storage::EngineStats e = engine.stats();
  auto d = [](uint64_t v) { return static_cast<double>(v); };
  s.counter("kafka_stream_wal_write_bytes_total", "Bytes written to the WAL", {},
            d(e.wal_bytes_written));
  s.counter("kafka_stream_wal_writes_total", "WAL group-commit writes (each made durable)", {},
            d(e.wal_writes));
  s.gauge("kafka_stream_wal_used_bytes", "Bytes of the WAL not yet trimmed", {},
          d(e.wal_used_bytes));
  s.gauge("kafka_stream_log_cache_size_bytes", "Bytes in the LogCache (recent data)", {},
          d(e.log_cache_bytes));
  s.gauge("kafka_stream_upload_pending_bytes",
          "LogCache bytes not yet uploaded to objects (the upload backlog)", {},
          d(e.log_cache_unuploaded_bytes));
  s.gauge("kafka_stream_block_cache_size_bytes", "Bytes in the BlockCache (catch-up reads)", {},
          d(e.block_cache_bytes));
  s.counter("kafka_stream_object_requests_total", "Object store requests, by operation",
            {{"operation", "put"}}, d(e.object_puts));
  s.counter("kafka_stream_object_requests_total", "Object store requests, by operation",
            {{"operation", "get"}}, d(e.object_gets));
  s.counter("kafka_stream_object_get_bytes_total", "Bytes returned by object GETs", {},
            d(e.object_get_bytes));
  s.counter("kafka_stream_object_read_bytes_total",
            "Record bytes served to readers from objects (GETs per byte read: catch-up cost)", {},
            d(e.object_read_bytes));
  s.gauge("kafka_stream_block_cache_loading_bytes",
          "BlockCache bytes claimed by object GETs in flight", {}, d(e.block_cache_loading_bytes));
  s.gauge("kafka_stream_object_index_cache_bytes", "Bytes of parsed object indexes cached", {},
          d(e.object_index_cache_bytes));
  s.gauge("kafka_stream_upload_buffer_bytes",
          "Bytes of objects being built or written by uploads and compactions", {},
          d(e.upload_buffer_bytes));
  s.counter("kafka_stream_upload_objects_total", "Objects uploaded from the WAL", {},
            d(e.objects_uploaded));
  s.counter("kafka_stream_upload_size_bytes_total", "Bytes uploaded from the WAL", {},
            d(e.bytes_uploaded));
  s.counter("kafka_stream_append_refused_total", "Appends refused by back-pressure", {},
            d(e.appends_refused));
  s.counter("kafka_stream_compactions_total", "Object compaction rounds that rewrote objects", {},
            d(e.compactions));
  s.counter("kafka_stream_objects_deleted_total", "Objects deleted (compaction, retention)", {},
            d(e.objects_deleted));
  s.gauge("kafka_server_connections", "Open client connections", {}, d(server.open_connections()));
  s.counter("kafka_server_connections_accepted_total", "Client connections accepted", {},
            d(server.accepted_connections()));
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  auto secs = [](const timeval& tv) {
    return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6;
  };
  s.counter("process_cpu_seconds_total", "User and system CPU time spent in seconds", {},
            secs(ru.ru_utime) + secs(ru.ru_stime));
  s.gauge("process_max_resident_memory_bytes", "Peak resident set size in bytes", {},
          d(static_cast<uint64_t>(ru.ru_maxrss) * 1024));
  long pages = 0, resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  s.gauge("process_resident_memory_bytes", "Resident memory size in bytes", {},
          d(static_cast<uint64_t>(resident) * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE))));
}

// Writes the storage engine's counters, the listener's connection counts and this process's
// CPU and peak RSS as one JSON object to `path`, atomically (temp file + rename) so that a
// reader (bench/vs-kafka, a monitoring agent) never sees a partial file. Every `interval_ms`
// on its own thread, and once more from write_final() after shutdown.
class MetricsWriter {
 public:
  MetricsWriter(std::string path, int64_t interval_ms, const storage::Engine* engine,
                const net::Server* server)
      : path_(std::move(path)), interval_ms_(interval_ms), engine_(engine), server_(server) {}
  ~MetricsWriter() { stop(); }

  // Writes once synchronously, so a bad path is a start-up error rather than a silent gap.
  Status start() {
    SHALE_TRY(write_once());
    thread_ = std::thread([this] { run(); });
    return ok_status();
  }
  void stop() {
    {
      std::lock_guard lk(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  void write_final() {
    stop();
    if (auto st = write_once(); !st.ok()) spdlog::warn("metrics file: {}", st.error().message);
  }

 private:
  void run() {
    std::unique_lock lk(mu_);
    while (!stopping_) {
      cv_.wait_for(lk, std::chrono::milliseconds(interval_ms_), [this] { return stopping_; });
      if (stopping_) break;
      lk.unlock();
      if (auto st = write_once(); !st.ok() && limiter_.allow()) {
        spdlog::warn("metrics file: {}", st.error().message);
      }
      lk.lock();
    }
  }

  Status write_once() {
    const storage::EngineStats e = engine_->stats();
    rusage ru{};
    ::getrusage(RUSAGE_SELF, &ru);
    auto secs = [](const timeval& tv) {
      return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6;
    };
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    std::string j = "{\n";
    j += "  \"time_ms\": " +
         std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(now).count()) + ",\n";
    j += "  \"process\": {\"cpu_user_seconds\": " + std::to_string(secs(ru.ru_utime)) +
         ", \"cpu_system_seconds\": " + std::to_string(secs(ru.ru_stime)) +
         ", \"max_rss_bytes\": " + std::to_string(static_cast<uint64_t>(ru.ru_maxrss) * 1024) +
         "},\n";
    j += "  \"net\": {\"open_connections\": " + std::to_string(server_->open_connections()) +
         ", \"accepted_connections\": " + std::to_string(server_->accepted_connections()) + "},\n";
    const std::pair<const char*, uint64_t> fields[] = {
        {"wal_bytes_written", e.wal_bytes_written},
        {"wal_writes", e.wal_writes},
        {"wal_used_bytes", e.wal_used_bytes},
        {"log_cache_bytes", e.log_cache_bytes},
        {"log_cache_unuploaded_bytes", e.log_cache_unuploaded_bytes},
        {"block_cache_bytes", e.block_cache_bytes},
        {"object_puts", e.object_puts},
        {"object_gets", e.object_gets},
        {"object_get_bytes", e.object_get_bytes},
        {"object_read_bytes", e.object_read_bytes},
        {"block_cache_loading_bytes", e.block_cache_loading_bytes},
        {"object_index_cache_bytes", e.object_index_cache_bytes},
        {"upload_buffer_bytes", e.upload_buffer_bytes},
        {"objects_uploaded", e.objects_uploaded},
        {"bytes_uploaded", e.bytes_uploaded},
        {"appends_refused", e.appends_refused},
        {"compactions", e.compactions},
        {"objects_deleted", e.objects_deleted},
    };
    j += "  \"storage\": {";
    for (size_t i = 0; i < std::size(fields); ++i) {
      j += std::string(i ? ", " : "") + "\"" + fields[i].first +
           "\": " + std::to_string(fields[i].second);
    }
    // Degraded state (docs/operations.md): 0/1, the cause, since when, failed attempts.
    const storage::EngineHealth h = engine_->health();
    j += "},\n  \"health\": {\"degraded\": " + std::to_string(h.degraded ? 1 : 0) +
         ", \"degraded_cause\": \"" + storage::degraded_cause_name(h.cause) +
         "\", \"degraded_since_ms\": " + std::to_string(h.since_ms) +
         ", \"upload_failures\": " + std::to_string(h.upload_failures) +
         ", \"upload_bytes_needed\": " + std::to_string(h.bytes_needed) +
         ", \"refusing_appends\": " + std::to_string(h.wal_full ? 1 : 0) + "}\n}\n";
    const std::string tmp = path_ + ".tmp";
    {
      std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
      f << j;
      f.flush();
      if (!f) return Error{Errc::kIoError, "cannot write " + tmp, false};
    }
    std::error_code ec;
    std::filesystem::rename(tmp, path_, ec);
    if (ec) return Error{Errc::kIoError, "cannot rename " + tmp + ": " + ec.message(), false};
    return ok_status();
  }

  const std::string path_;
  const int64_t interval_ms_;
  const storage::Engine* engine_;
  const net::Server* server_;
  log::RateLimiter limiter_{10000};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

int fail(const std::string& msg, int code = 1) {
  std::fprintf(stderr, "shale serve: %s\n", msg.c_str());
  return code;
}

int serve_main(int argc, char** argv) {
  CLI::App cli("Run a Shale broker: Kafka protocol on the configured listeners.", "shale serve");
  std::string config_file;
  std::vector<std::string> overrides;
  std::string log_level = "info";
  bool print_docs = false;
  std::string metrics_file;
  int64_t metrics_interval_ms = 1000;
  cli.add_option("--config", config_file, "server.properties file to read");
  cli.add_option("--override", overrides, "key=value, applied after the file (repeatable)")
      ->take_all()
      ->allow_extra_args(false);
  cli.add_option("--log-level", log_level, "trace, debug, info, warn, error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));
  bool strict_config = false;
  cli.add_flag("--strict-config", strict_config,
               "refuse keys Shale does not use (by default they are accepted with one warning "
               "listing them, so a Kafka or AutoMQ server.properties loads as it is)");
  cli.add_flag("--print-config-docs", print_docs,
               "print docs/configuration.md (generated from the key table) and exit");
  cli.add_option("--metrics-file", metrics_file,
                 "rewrite this JSON file (atomically) with storage, connection and process "
                 "counters every --metrics-interval-ms (docs/operations.md)");
  cli.add_option("--metrics-interval-ms", metrics_interval_ms, "period of --metrics-file")
      ->check(CLI::Range(int64_t{100}, int64_t{3600000}));
  cli.footer("\n" + config_help_text());
  try {
    cli.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return cli.exit(e);
  }
  if (print_docs) {
    std::fputs(config_docs_markdown().c_str(), stdout);
    return 0;
  }

  // Logs go to stderr so that stdout carries only the banner.
  spdlog::set_default_logger(spdlog::stderr_color_mt("shale"));
  log::init(log_level);

  Properties props;
  if (!config_file.empty()) {
    auto r = read_properties_file(config_file);
    if (!r.ok()) return fail(r.error().message, 2);
    props = std::move(r).value();
  }
  for (const auto& o : overrides) {
    auto st = add_override(props, o);
    if (!st.ok()) return fail(st.error().message, 2);
  }
  auto loaded = Config::load(props, LoadOptions{strict_config});
  if (!loaded.ok()) return fail(loaded.error().message, 2);
  Config cfg = std::move(loaded).value();
  if (!cfg.ignored_keys().empty()) {
    spdlog::warn(
        "{} configuration key(s) not used by Shale, ignored (--strict-config refuses "
        "them): {}",
        cfg.ignored_keys().size(), fmt::join(cfg.ignored_keys(), ", "));
  }
  cfg.resolve_memory_defaults(physical_memory());

  const std::filesystem::path data_dir = cfg.get_string("data.dir");
  std::error_code ec;
  std::filesystem::create_directories(data_dir, ec);
  if (ec) {
    return fail("configuration key 'data.dir': cannot create " + data_dir.string() + ": " +
                ec.message());
  }
  auto cluster_id =
      ensure_cluster_id(data_dir, cfg.get_string("cluster.id"), cfg.get_int("node.id"));
  if (!cluster_id.ok()) return fail(cluster_id.error().message);

  // Before any thread exists, so that every thread inherits the mask and only sigwait() below
  // receives the signals.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  net::ServerOptions opts;
  auto specs = listener_specs(cfg);  // TLS contexts and SASL (docs/security.md)
  if (!specs.ok()) return fail(specs.error().message, 2);
  opts.listeners = std::move(specs).value();
  opts.max_request_bytes = cfg.get_int("socket.request.max.bytes");
  opts.idle_timeout_ms = cfg.get_long("connections.max.idle.ms");
  opts.max_inflight_per_connection =
      static_cast<size_t>(cfg.get_int("connection.max.inflight.requests"));
  opts.shutdown_drain_ms = cfg.get_long("shutdown.drain.ms");
  opts.max_connections_per_ip = cfg.get_int("max.connections.per.ip");
  opts.max_connections_per_ip_overrides =
      *parse_ip_overrides(cfg.get_string("max.connections.per.ip.overrides"));  // validated

  // Storage and the broker context, before any listener opens. Their blocking start-up (WAL
  // recovery, topic loading) happens here, on the main thread.
  meta::StoreConfig msc;
  msc.uri = cfg.get_string("metadata.store");
  msc.data_dir = data_dir.string();
  msc.etcd_timeout_ms = cfg.get_long("metadata.etcd.request.timeout.ms");
  msc.etcd_max_txn_ops = cfg.get_int("metadata.etcd.max.txn.ops");
  msc.etcd_max_request_bytes = cfg.get_long("metadata.etcd.max.request.bytes");
  auto meta = meta::open_store(msc);
  if (!meta.ok()) {
    return fail("configuration key 'metadata.store' (" + msc.uri +
                "): " + meta.error().to_string());
  }
  auto buckets = cfg.get_list("s3.data.buckets");
  if (buckets.empty()) return fail("configuration key 's3.data.buckets' is empty");
  // Cluster mode: brokers share the metadata store (etcd), so they must agree on the cluster id
  // and the object store before any of them writes; the first broker records both.
  const bool cluster_mode = msc.uri != "sqlite";
  const cluster::Keys cluster_keys(broker::BrokerConfig{}.ns);
  if (cluster_mode) {
    auto st = cluster::check_identity(meta->get(), cluster_keys, *cluster_id, buckets.front(),
                                      cfg.get_int("offsets.topic.num.partitions"));
    if (!st.ok()) return fail("cluster identity: " + st.error().message);
  }
  // On etcd the broker holds a lease (a lost lease is granted again once etcd answers). In
  // cluster mode it registers under it before the storage engine opens: the engine bumps the
  // node's storage epoch and opens streams, which would fence a live broker with the same id, so
  // a duplicate id must be refused first. A restarted broker waits out its previous lease.
  std::unique_ptr<meta::LeaseKeeper> lease;
  std::unique_ptr<cluster::Member> member;
  if (cluster_mode) {
    auto k = meta::LeaseKeeper::start(
        meta->get(), cfg.get_long("broker.session.timeout.ms"),
        [] {
          spdlog::warn("metadata lease lapsed: produce requests are refused until etcd answers");
        },
        true);
    if (!k.ok()) return fail("metadata store: granting the broker lease: " + k.error().to_string());
    lease = std::move(k).value();
    cluster::MemberOptions mo;
    mo.ns = cluster_keys.ns();
    mo.self.id = cfg.get_int("node.id");
    for (const auto& l : cfg.advertised_listeners())
      mo.self.listeners[l.name] = l.host + ":" + std::to_string(l.port);
    mo.self.wal_uri = cfg.get_string("s3.wal.path");
    mo.register_wait_ms = lease->ttl_ms() + 1000;
    if (mo.self.wal_uri.rfind("file://", 0) == 0) {
      spdlog::warn(
          "cluster mode with a file WAL ({}): if it is on a local disk, no other broker can "
          "replay it when this host dies; put it on storage every broker mounts",
          mo.self.wal_uri);
    }
    auto m = cluster::Member::start(meta->get(), lease.get(), std::move(mo));
    if (!m.ok()) return fail("cluster membership: " + m.error().to_string());
    member = std::move(m).value();
    // Where this broker's WAL is, for another broker to replay it if this one dies.
    if (auto r = (*meta)->put(cluster_keys.wal(member->id()), cfg.get_string("s3.wal.path"));
        !r.ok())
      return fail("cluster membership: recording the WAL location: " + r.error().to_string());
    // A failover of this broker's WAL (it was gone long enough) must finish before the engine
    // opens the same WAL.
    for (int waited = 0;; waited += 200) {
      auto f = (*meta)->get(cluster_keys.failover(member->id()));
      if (f.ok() && !f->has_value()) break;
      if (waited == 0) spdlog::info("waiting for another broker to finish replaying our WAL");
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
  auto store = objstore::open_object_store(buckets.front());
  if (!store.ok()) return fail("configuration key 's3.data.buckets': " + store.error().message);
  std::unique_ptr<objstore::ObjectStore> wal_store;  // outlives the engine (declared before it)
  auto engine_options = engine_options_for(cfg, cfg.get_int("node.id"),
                                           cfg.get_string("s3.wal.path"), &wal_store, true);
  if (!engine_options.ok()) return fail(engine_options.error().message);
  storage::EngineOptions eo = *engine_options;
  auto engine = storage::Engine::open(eo, store->get(), meta->get());
  if (!engine.ok()) return fail("storage engine: " + engine.error().to_string());

  broker::BrokerConfig bc;
  bc.node_id = cfg.get_int("node.id");
  bc.cluster_id = *cluster_id;
  bc.endpoints.clear();
  for (const auto& l : cfg.advertised_listeners()) {
    bc.endpoints.push_back({l.name, l.host, l.port});
  }
  bc.num_partitions = cfg.get_int("num.partitions");
  bc.default_replication_factor = static_cast<int16_t>(cfg.get_int("default.replication.factor"));
  bc.auto_create_topics = cfg.get_bool("auto.create.topics.enable");
  bc.topic_defaults.retention_ms = cfg.get_long("log.retention.ms");
  bc.topic_defaults.retention_bytes = cfg.get_long("log.retention.bytes");
  bc.topic_defaults.max_message_bytes = cfg.get_int("message.max.bytes");
  for (const char* k : {"log.retention.ms", "log.retention.bytes", "message.max.bytes"}) {
    if (cfg.is_set(k)) {
      bc.topic_defaults.static_overrides[k] = k == std::string("message.max.bytes")
                                                  ? std::to_string(cfg.get_int(k))
                                                  : std::to_string(cfg.get_long(k));
    }
  }
  apply_broker_settings(cfg, bc);
  auto sasl = sasl_settings(cfg);
  if (!sasl.ok()) return fail(sasl.error().message, 2);
  bc.sasl = std::move(sasl).value();
  broker::Broker broker(bc, engine->get(), meta->get());
  // On etcd the broker acknowledges only while its lease is surely valid, and only appends made
  // under that same lease (broker.h, produce.cc).
  if (lease)
    broker.set_ack_token([l = lease.get()]() -> int64_t { return l->valid() ? l->lease() : 0; });
  // Cluster mode: partitions open here only when this broker owns them (broker/ownership.h).
  std::unique_ptr<broker::Ownership> ownership;
  if (member) {
    broker::Ownership::Options oo;
    oo.failover_grace_ms = lease->ttl_ms() + 1000;
    oo.group_shards = cfg.get_int("offsets.topic.num.partitions");
    oo.recover_wal = [&cfg, objects = store->get(), m = meta->get()](
                         int32_t node, const std::string& uri) -> Status {
      // Replays the dead broker's WAL as its own restart would: open an engine as that node
      // (bumping its node epoch fences its WAL), which recovers and uploads, then shut it down.
      std::unique_ptr<objstore::ObjectStore> ws;
      auto o = engine_options_for(cfg, node, uri, &ws, false);
      if (!o.ok()) return Error::make(Errc::kInvalidArgument, o.error().message);
      o->log_cache_size = std::min<uint64_t>(o->log_cache_size, 64 * storage::kMiB);
      o->block_cache_size = std::min<uint64_t>(o->block_cache_size, 16 * storage::kMiB);
      auto e = storage::Engine::open(*o, objects, m);
      if (!e.ok()) return std::move(e).error();
      (*e)->shutdown();
      return ok_status();
    };
    auto o = broker::Ownership::start(&broker, member.get(), std::move(oo));
    if (!o.ok()) return fail("cluster ownership: " + o.error().to_string());
    ownership = std::move(o).value();
    broker.set_ownership(ownership.get());
  }
  if (auto st = broker.start(); !st.ok()) return fail("loading topics: " + st.error().to_string());

  // The dispatcher and what it refers to outlive the pool (see net/frame_handler.h).
  broker::Dispatcher dispatcher;
  broker::register_api_versions(dispatcher);
  broker::register_broker_handlers(dispatcher, broker);
  net::ShardPool pool(static_cast<size_t>(cfg.get_int("num.network.threads")));
  net::Server server(opts, pool, dispatcher);
  if (auto st = server.bind(); !st.ok()) {
    return fail("configuration key 'listeners': " + st.error().message);
  }
  auto eps = server.local_endpoints();
  {
    // Listeners configured with port 0 (tests) advertise the port they were given.
    auto adv = bc.endpoints;
    const auto listeners = cfg.listeners();
    for (auto& a : adv) {
      for (size_t i = 0; i < listeners.size() && i < eps.size(); ++i) {
        if (listeners[i].name == a.listener && a.port == 0) a.port = eps[i].port();
      }
    }
    broker.set_endpoints(std::move(adv));
  }
  if (member) {
    // Publish the bound ports (a configured port 0 is known only now).
    std::map<std::string, std::string> ls;
    for (const auto& e : broker.config().endpoints)
      ls[e.listener] = e.host + ":" + std::to_string(e.port);
    if (ls != member->self().listeners) {
      if (auto st = member->set_listeners(std::move(ls)); !st.ok())
        return fail("cluster membership: publishing listeners: " + st.error().to_string());
    }
  }
  // Consumer groups: the coordinator answers for this node at its first advertised endpoint.
  broker::GroupServiceConfig gcfg;
  gcfg.coordinator.node_id = cfg.get_int("node.id");
  gcfg.meta_root = bc.ns + "/groups/";
  apply_group_settings(cfg, gcfg.coordinator);
  // Cluster mode: groups are sharded; this broker serves the shards it owns (ownership).
  if (ownership) gcfg.coordinator.shards = cfg.get_int("offsets.topic.num.partitions");
  {
    const auto& eps0 = broker.config().endpoints;
    if (!eps0.empty()) {
      gcfg.coordinator.host = eps0.front().host;
      gcfg.coordinator.port = eps0.front().port;
    }
  }
  broker::GroupService groups(
      gcfg, &broker.meta(), broker.workers(),
      [bp = &broker](std::string_view t, int32_t p) { return bp->partition_exists(t, p); });
  if (auto st = groups.start(); !st.ok()) {
    return fail("loading consumer groups: " + st.error().to_string());
  }
  broker::register_group_handlers(dispatcher, groups.handlers());
  if (ownership) {
    // Cluster mode: each group shard is coordinated by the broker that owns its record;
    // FindCoordinator names that broker (at its address on this broker's first listener name).
    groups.handlers().set_locator(
        [o = ownership.get(),
         name = bc.endpoints.empty() ? std::string() : bc.endpoints.front().listener](
            const std::string& group) -> std::optional<broker::GroupHandlers::RemoteCoordinator> {
          const int32_t c = o->group_coordinator(group).id;
          if (c < 0) return std::nullopt;
          auto e = o->endpoint(c, name);
          if (!e) return std::nullopt;
          return broker::GroupHandlers::RemoteCoordinator{c, e->host, e->port};
        });
    ownership->set_group_shard_hooks(
        [g = &groups](int32_t shard) { return g->coordinator().load_shard(shard); },
        [g = &groups](int32_t shard) { g->coordinator().unload_shard(shard); });
    ownership->kick();
  }
  // Transactions: committed transactions make their offsets visible in the group coordinator;
  // start() finishes any transaction a crash interrupted after its Prepare record.
  broker.txn().set_commit_offsets(
      [gc = &groups.coordinator()](const std::string& group, const auto& offsets) {
        return broker::commit_txn_offsets(*gc, group, offsets);
      });
  groups.handlers().set_pending_txn_offsets(
      [tc = &broker.txn()](const std::string& g, const std::string& t, int32_t p) {
        return tc->has_pending_offsets(g, t, p);
      });
  if (ownership) {
    // Not yet: markers for partitions on other brokers need WriteTxnMarkers between brokers.
    groups.handlers().set_transactions_unavailable(
        "transactions are not available in cluster mode yet (docs/transactions.md)");
    spdlog::warn("cluster mode: transactional producers are refused (not yet supported)");
  } else if (auto st = broker.txn().start(); !st.ok()) {
    return fail("loading transactions: " + st.error().to_string());
  }
  pool.start();
  server.start();
  std::unique_ptr<MetricsWriter> metrics;
  if (!metrics_file.empty()) {
    metrics =
        std::make_unique<MetricsWriter>(metrics_file, metrics_interval_ms, engine->get(), &server);
    if (auto st = metrics->start(); !st.ok()) {
      server.stop();
      pool.stop(0);
      groups.stop();
      broker.stop();
      return fail("--metrics-file: " + st.error().message);
    }
  }

  // Prometheus metrics on the HTTP listener (docs/operations.md, "Metrics").
  http::Server web;
  int collector = -1;
  auto http_eps = http::parse_http_listeners(cfg.get_string("http.listeners"));
  if (http_eps.ok() && !http_eps->empty()) {
    collector = metrics::global().add_collector(
        [eng = engine->get(), srv = &server](metrics::Sink& s) { collect(s, *eng, *srv); });
    web.route("/metrics", [](const std::string&, const std::string&) {
      return http::Reply{200, "text/plain; version=0.0.4; charset=utf-8",
                         metrics::global().expose()};
    });
    web.route("/healthz", [](const std::string&, const std::string&) {
      return http::Reply{200, "text/plain; charset=utf-8", "ok\n"};
    });
    if (auto st = web.start(*http_eps); !st.ok()) {
      metrics::global().remove_collector(collector);
      server.stop();
      pool.stop(0);
      groups.stop();
      broker.stop();
      return fail("configuration key 'http.listeners': " + st.error().message);
    }
    auto ports = web.ports();
    for (size_t i = 0; i < ports.size(); ++i) {
      const std::string host = (*http_eps)[i].host.empty() ? "0.0.0.0" : (*http_eps)[i].host;
      spdlog::info("HTTP listener on http://{}:{} (/metrics, /healthz)", host, ports[i]);
    }
  }

  std::string where = host_port(eps.at(0));
  std::string try_addr = where;
  if (eps[0].address().is_unspecified()) try_addr = "127.0.0.1:" + std::to_string(eps[0].port());
  for (size_t i = 1; i < eps.size(); ++i) where += ", " + host_port(eps[i]);
  spdlog::info("node {} of cluster {}, {} shards, data in {}", cfg.get_int("node.id"), *cluster_id,
               pool.size(), data_dir.string());
  std::printf("Shale %s serving Kafka on %s (data in %s) — try: kcat -b %s -L\n", SHALE_VERSION,
              where.c_str(), data_dir.string().c_str(), try_addr.c_str());
  std::fflush(stdout);

  int sig = 0;
  sigwait(&stop_signals, &sig);
  spdlog::info("received {}, shutting down", sig == SIGTERM ? "SIGTERM" : "SIGINT");
  web.stop();
  if (collector >= 0) metrics::global().remove_collector(collector);
  server.stop();
  pool.stop(opts.shutdown_drain_ms);
  if (ownership) ownership->stop();
  groups.stop();
  broker.stop();
  (*engine)->shutdown();  // uploads what the WAL holds so the next start recovers nothing
  if (metrics) metrics->write_final();  // includes the shutdown's uploads
  broker.set_ownership(nullptr);
  ownership.reset();
  member.reset();
  if (lease) {
    // A clean exit gives up the lease at once: the broker leaves the live set (and the
    // controller key, if it held it) now instead of a TTL later.
    if (auto st = lease->revoke(); !st.ok())
      spdlog::warn("revoking the metadata lease: {}", st.error().to_string());
  }
  spdlog::info("stopped");
  return 0;
}

Registrar reg({"serve", "run a broker (Kafka protocol on 127.0.0.1:9092 by default)", &serve_main});

}  // namespace
}  // namespace shale::app
