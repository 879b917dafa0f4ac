#include "app/config.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>

#include "app/wal_uri.h"
#include "http/server.h"
#include "meta/open_store.h"
#include "security/sasl.h"
#include "security/tls.h"

namespace shale::app {

namespace {

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * kKiB;
constexpr int64_t kGiB = 1024 * kMiB;

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

std::vector<std::string> split_list(std::string_view s) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t comma = s.find(',', pos);
    if (comma == std::string_view::npos) comma = s.size();
    std::string item = trim(s.substr(pos, comma - pos));
    if (!item.empty()) out.push_back(std::move(item));
    pos = comma + 1;
  }
  return out;
}

bool parse_int64(std::string_view s, int64_t* out) {
  std::string t = trim(s);
  const char* b = t.data();
  const char* e = t.data() + t.size();
  if (b != e && *b == '+') ++b;
  auto [p, ec] = std::from_chars(b, e, *out);
  return ec == std::errc() && p == e && b != e;
}

std::optional<bool> parse_bool(std::string_view s) {
  std::string t = trim(s);
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return std::tolower(c); });
  if (t == "true") return true;
  if (t == "false") return false;
  return std::nullopt;
}

// --- validators (return "" when fine) ---

std::string validate_listeners(std::string_view v) {
  auto r = parse_listeners(v);
  if (!r.ok()) return r.error().message;
  if (r->empty()) return "at least one listener is required";
  return "";
}

std::string validate_advertised(std::string_view v) {
  if (trim(v).empty()) return "";  // unset: derived from listeners
  auto r = parse_listeners(v);
  if (!r.ok()) return r.error().message;
  for (const auto& l : *r) {
    if (l.host == "0.0.0.0" || l.host == "::") {
      return "cannot advertise the non-routable address " + l.host + " (listener " + l.name + ")";
    }
  }
  return "";
}

std::string validate_protocol_map(std::string_view v) {
  auto r = parse_protocol_map(v);
  return r.ok() ? "" : r.error().message;
}

std::string validate_mechanisms(std::string_view v) {
  for (const auto& m : split_list(v)) {
    if (m != "PLAIN" && m != "SCRAM-SHA-256" && m != "SCRAM-SHA-512") {
      return "unsupported SASL mechanism '" + m + "' (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)";
    }
  }
  return "";
}

std::string validate_ip_overrides(std::string_view v) {
  auto r = parse_ip_overrides(v);
  return r.ok() ? "" : r.error().message;
}

std::string validate_mapping_rules(std::string_view v) {
  auto r = security::PrincipalMapper::parse(v);
  return r.ok() ? "" : r.error().message;
}

std::string validate_jaas(std::string_view v) {
  if (trim(v).empty()) return "";
  auto r = security::parse_plain_jaas(v);
  return r.ok() ? "" : r.error().message;
}

std::string validate_client_auth(std::string_view v) {
  std::string t = trim(v);
  return t == "none" || t == "requested" || t == "required" ? ""
                                                            : "must be none, requested or required";
}

std::string validate_cluster_id(std::string_view v) {
  for (char c : v) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_')) {
      return "cluster ids contain only letters, digits, '-' and '_'";
    }
  }
  return "";
}

std::string validate_not_empty(std::string_view v) {
  return trim(v).empty() ? "must not be empty" : "";
}

std::string validate_timestamp_type(std::string_view v) {
  return v == "CreateTime" || v == "LogAppendTime" ? "" : "must be CreateTime or LogAppendTime";
}

// `<id>@<scheme>://<rest>` with scheme file, s3 or mem (AutoMQ's bucket URI form).
std::string validate_bucket_uri(std::string_view entry, bool id_required) {
  std::string_view rest = entry;
  auto at = entry.find('@');
  auto scheme_end = entry.find("://");
  if (at != std::string_view::npos && (scheme_end == std::string_view::npos || at < scheme_end)) {
    int64_t id = 0;
    if (!parse_int64(entry.substr(0, at), &id) || id < 0 || id > 32767) {
      return "'" + std::string(entry) + "': bucket id before '@' must be 0..32767";
    }
    rest = entry.substr(at + 1);
  } else if (id_required) {
    return "'" + std::string(entry) + "': expected <id>@<scheme>://<location>";
  }
  auto se = rest.find("://");
  if (se == std::string_view::npos) {
    return "'" + std::string(entry) + "': expected <scheme>://<location>";
  }
  std::string_view scheme = rest.substr(0, se);
  if (scheme != "file" && scheme != "s3" && scheme != "mem") {
    return "'" + std::string(entry) + "': unknown scheme '" + std::string(scheme) +
           "' (use file, s3 or mem)";
  }
  if (rest.size() == se + 3) return "'" + std::string(entry) + "': empty location";
  return "";
}

std::string validate_buckets(std::string_view v) {
  auto items = split_list(v);
  if (items.empty()) return "at least one bucket is required";
  for (const auto& it : items) {
    std::string e = validate_bucket_uri(it, true);
    if (!e.empty()) return e;
  }
  return "";
}

std::string validate_http_listeners(std::string_view v) {
  auto r = http::parse_http_listeners(std::string(v));
  return r.ok() ? "" : r.error().message;
}

std::string validate_metadata_store(std::string_view v) {
  return meta::validate_store_uri(trim(v));
}

std::string validate_wal_path(std::string_view v) {
  std::string t = trim(v);
  if (t.empty()) return "must not be empty";
  // ${data.dir} is substituted later; any path stands in for it here.
  std::string probe = t;
  for (size_t at; (at = probe.find("${data.dir}")) != std::string::npos;) {
    probe.replace(at, 11, "/data.dir");
  }
  auto w = parse_wal_uri(probe);
  if (!w.ok()) {
    std::string m = w.error().message;
    auto colon = m.find("': ");
    return colon == std::string::npos ? m : "'" + t + m.substr(colon);
  }
  return "";
}

// The table. Keys that Kafka or AutoMQ have keep their name, meaning and default.
const std::vector<ConfigKey> kKeys = {
    // --- Server ---
    {"node.id", ConfigType::kInt, "1", "Server",
     "Id of this broker. Default 1, the convention of Kafka's single-node KRaft quick start "
     "(config/kraft/server.properties and the apache/kafka image use node.id=1). Shown to "
     "clients in Metadata responses.",
     0, INT32_MAX},
    {"cluster.id", ConfigType::kString, "", "Server",
     "Cluster id. Empty: generated on first start and kept in <data.dir>/meta.properties (as "
     "Kafka does); later starts use the stored id, and a different configured id is an error.",
     INT64_MIN, INT64_MAX, validate_cluster_id},
    {"data.dir", ConfigType::kString, "./data", "Server",
     "Directory for the WAL, the local object directory and the metadata file. Created if "
     "missing.",
     INT64_MIN, INT64_MAX, validate_not_empty},
    // --- Metadata ---
    {"metadata.store", ConfigType::kString, "sqlite", "Metadata",
     "Where topics, streams, objects and groups are recorded. `sqlite`: an embedded SQLite file, "
     "<data.dir>/meta.db (one broker). `etcd://host:port[,host:port...][/prefix]`: an etcd v3 "
     "cluster (etcd 3.4 or later, plain HTTP), reached through its JSON gateway; on a "
     "connection error the next endpoint is tried. Every key lives under `prefix` (e.g. "
     "etcd://10.0.0.1:2379,10.0.0.2:2379/shale/prod), so several clusters can share one etcd. "
     "See docs/cluster.md.",
     INT64_MIN, INT64_MAX, validate_metadata_store},
    {"metadata.etcd.request.timeout.ms", ConfigType::kLong, "5000", "Metadata",
     "Deadline of one etcd call, fail-over to other endpoints included. A call that runs out "
     "fails with a retryable error.",
     100, INT64_MAX},
    {"metadata.etcd.max.txn.ops", ConfigType::kInt, "128", "Metadata",
     "Most compares or operations in one etcd transaction: etcd's --max-txn-ops (default 128). "
     "Checked against the server at start-up (a start fails naming --max-txn-ops if etcd "
     "refuses it). Uploads, compaction rounds and large offset commits are split or sized to "
     "stay within it; a transaction that still exceeds it fails with an error naming the etcd "
     "flag.",
     8, INT32_MAX},
    {"metadata.etcd.max.request.bytes", ConfigType::kLong, "1572864", "Metadata",
     "Largest etcd request: etcd's --max-request-bytes (default 1.5 MiB). A larger transaction "
     "fails with an error naming the etcd flag.",
     1024, INT64_MAX},
    {"broker.session.timeout.ms", ConfigType::kLong, "9000", "Metadata",
     "With etcd: the TTL of this broker's metadata lease (Kafka's KRaft key and default), "
     "renewed every third of it. While etcd cannot be reached the broker keeps acknowledging "
     "produce requests until the lease may have expired (time of the last renewal sent + TTL), "
     "then answers NOT_LEADER_OR_FOLLOWER (retriable) until a renewal succeeds again. Unused "
     "with sqlite.",
     1000, INT32_MAX},
    // --- Network ---
    {"listeners", ConfigType::kList, "PLAINTEXT://127.0.0.1:9092", "Network",
     "Comma-separated NAME://host:port addresses to listen on. An empty host or 0.0.0.0 means "
     "every IPv4 interface; IPv6 hosts go in brackets ([::1]:9092). Port 0 picks a free port. "
     "A listener's security protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL) comes from "
     "listener.security.protocol.map; see docs/security.md.",
     INT64_MIN, INT64_MAX, validate_listeners},
    {"advertised.listeners", ConfigType::kList, "", "Network",
     "Addresses given to clients in Metadata responses, NAME://host:port, one per listener "
     "name. Empty: the listeners, with a wildcard host replaced by this machine's host name.",
     INT64_MIN, INT64_MAX, validate_advertised},
    {"num.network.threads", ConfigType::kInt, "0", "Network",
     "Number of shards: event-loop threads that run connections and request handling (one "
     "io_context each; a connection stays on one shard). 0 = one per hardware thread. Unlike "
     "Kafka's key of the same name these threads also do the request work.",
     0, 1024},
    {"socket.request.max.bytes", ConfigType::kInt, "104857600", "Network",
     "Largest request frame accepted. A larger or negative size prefix closes the connection.", 1,
     INT32_MAX},
    {"connections.max.idle.ms", ConfigType::kLong, "600000", "Network",
     "Close connections that have read and written nothing for this long (and have no request "
     "in flight). -1 or 0 = never.",
     -1, INT64_MAX},
    {"connection.max.inflight.requests", ConfigType::kInt, "32", "Network",
     "Requests of one connection read ahead and not yet answered (pipelining); the connection "
     "stops reading until responses have been written. As in Kafka, a connection's requests "
     "take effect one at a time in the order sent (a produce lets the next request start once "
     "its appends are queued for the WAL), and responses leave in request order.",
     1, 65536},
    {"http.listeners", ConfigType::kList, "", "Network",
     "HTTP listeners for Prometheus scrapes (GET /metrics) and health checks (GET /healthz), "
     "off the Kafka port: comma-separated http://host:port (port 0 picks a free one). Empty = "
     "off; `make run` serves http://127.0.0.1:8080.",
     INT64_MIN, INT64_MAX, validate_http_listeners},
    {"shutdown.drain.ms", ConfigType::kLong, "5000", "Network",
     "On shutdown, how long in-flight requests may run before their shards are stopped.", 0,
     INT64_MAX},
    // --- Security (docs/security.md) ---
    {"listener.security.protocol.map", ConfigType::kList,
     "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL", "Security",
     "Comma-separated NAME:PROTOCOL pairs giving each listener name its security protocol "
     "(PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL). A listener name not in the map is "
     "plaintext. Per-listener keys use Kafka's prefix: listener.name.<name lower-case>.<key> "
     "(e.g. listener.name.external.ssl.keystore.location) overrides <key> for that listener.",
     INT64_MIN, INT64_MAX, validate_protocol_map},
    {"ssl.keystore.type", ConfigType::kString, "JKS", "Security",
     "Format of the keystore. Shale reads PEM only: TLS listeners need ssl.keystore.type=PEM "
     "(as Kafka does for PEM files).",
     INT64_MIN, INT64_MAX},
    {"ssl.keystore.location", ConfigType::kString, "", "Security",
     "PEM file holding the listener's private key and its certificate chain."},
    {"ssl.keystore.certificate.chain", ConfigType::kString, "", "Security",
     "The certificate chain as PEM text (instead of ssl.keystore.location, with "
     "ssl.keystore.key)."},
    {"ssl.keystore.key", ConfigType::kString, "", "Security",
     "The private key as PEM text (instead of ssl.keystore.location)."},
    {"ssl.key.password", ConfigType::kString, "", "Security",
     "Password of an encrypted private key. Never logged."},
    {"ssl.truststore.type", ConfigType::kString, "JKS", "Security",
     "Format of the truststore; PEM only (set ssl.truststore.type=PEM when a truststore is "
     "given)."},
    {"ssl.truststore.location", ConfigType::kString, "", "Security",
     "PEM file of the CA certificates that client certificates are verified against "
     "(ssl.client.auth)."},
    {"ssl.truststore.certificates", ConfigType::kString, "", "Security",
     "The trusted CA certificates as PEM text (instead of ssl.truststore.location)."},
    {"ssl.client.auth", ConfigType::kString, "none", "Security",
     "none: no client certificate asked. requested: asked, not required. required: a client "
     "without a certificate the truststore verifies fails the handshake. The principal of a "
     "verified certificate is User:<subject DN in RFC 2253 form>.",
     INT64_MIN, INT64_MAX, validate_client_auth},
    {"max.connections.per.ip", ConfigType::kInt, "2147483647", "Security",
     "Most open connections from one client address (Kafka's key); further ones are closed "
     "as soon as they are accepted (logged, rate-limited).",
     0, INT32_MAX},
    {"max.connections.per.ip.overrides", ConfigType::kString, "", "Security",
     "Per-address exceptions to max.connections.per.ip: comma-separated <ip>:<count> "
     "(e.g. 127.0.0.1:200,10.0.0.7:1000). Addresses are IPs as the broker sees them, not host "
     "names.",
     INT64_MIN, INT64_MAX, validate_ip_overrides},
    {"ssl.principal.mapping.rules", ConfigType::kString, "DEFAULT", "Security",
     "How a client certificate's subject (RFC 2253) becomes the principal name: Kafka's "
     "comma-separated RULE:<regex>/<replacement>/[L|U] entries and DEFAULT (the subject as "
     "is), tried in order; the first whose regex matches the whole subject wins. A certificate "
     "no rule matches fails its connection.",
     INT64_MIN, INT64_MAX, validate_mapping_rules},
    {"ssl.enabled.protocols", ConfigType::kList, "TLSv1.2,TLSv1.3", "Security",
     "TLS versions accepted (TLSv1.2, TLSv1.3).", INT64_MIN, INT64_MAX},
    {"sasl.enabled.mechanisms", ConfigType::kList, "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512", "Security",
     "SASL mechanisms offered on SASL_PLAINTEXT and SASL_SSL listeners: PLAIN, SCRAM-SHA-256, "
     "SCRAM-SHA-512 (Kafka's default, GSSAPI, is not supported). Per listener: "
     "listener.name.<name>.sasl.enabled.mechanisms.",
     INT64_MIN, INT64_MAX, validate_mechanisms},
    {"sasl.jaas.config", ConfigType::kString, "", "Security",
     "PLAIN users of every SASL listener that has no listener.name.<name>.plain.sasl.jaas.config, "
     "in Kafka's JAAS form: org.apache.kafka.common.security.plain.PlainLoginModule required "
     "user_alice=\"alice-secret\" user_bob=\"bob-secret\"; (each user_<name> option is a user "
     "and its password). SCRAM users live in the metadata store (kafka-configs "
     "--entity-type users).",
     INT64_MIN, INT64_MAX, validate_jaas},
    {"connection.failed.authentication.delay.ms", ConfigType::kInt, "100", "Security",
     "A failed SASL authentication is answered, and its connection closed, only after this "
     "delay (slows password guessing).",
     0, INT32_MAX},
    {"ssl.cipher.suites", ConfigType::kList, "", "Security",
     "Cipher suites by their IANA names (as Kafka lists them, e.g. "
     "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384, TLS_AES_256_GCM_SHA384). Empty: OpenSSL's "
     "defaults."},
    // --- Topics and logs ---
    {"num.partitions", ConfigType::kInt, "1", "Topics",
     "Partitions of an automatically created topic.", 1, INT32_MAX},
    {"default.replication.factor", ConfigType::kInt, "1", "Topics",
     "Replication factor reported for automatically created topics. Durability comes from the "
     "WAL and object storage, so Shale keeps one copy per partition whatever this says.",
     1, INT16_MAX},
    {"auto.create.topics.enable", ConfigType::kBool, "true", "Topics",
     "Create a topic when a client asks for metadata of, or produces to, a topic that does not "
     "exist."},
    {"log.retention.ms", ConfigType::kLong, "604800000", "Topics",
     "Delete data older than this (default 7 days). -1 = no time limit.", -1, INT64_MAX},
    {"log.retention.bytes", ConfigType::kLong, "-1", "Topics",
     "Delete the oldest data of a partition above this size. -1 = no size limit.", -1, INT64_MAX},
    {"message.max.bytes", ConfigType::kInt, "1048588", "Topics",
     "Largest record batch accepted (after compression), as Kafka's default.", 0, INT32_MAX},
    {"log.retention.check.interval.ms", ConfigType::kLong, "300000", "Topics",
     "How often retention.ms and retention.bytes are applied to every partition (Kafka's "
     "default, 5 minutes).",
     1, INT64_MAX},
    {"log.message.timestamp.type", ConfigType::kString, "CreateTime", "Topics",
     "Default message.timestamp.type of topics: CreateTime (keep the producer's timestamps) or "
     "LogAppendTime (stamp batches with the broker's clock).",
     INT64_MIN, INT64_MAX, validate_timestamp_type},
    {"log.message.timestamp.before.max.ms", ConfigType::kLong, "9223372036854775807", "Topics",
     "Default message.timestamp.before.max.ms: a CreateTime record more than this far behind "
     "the broker's clock is refused with INVALID_TIMESTAMP.",
     0, INT64_MAX},
    {"log.message.timestamp.after.max.ms", ConfigType::kLong, "3600000", "Topics",
     "Default message.timestamp.after.max.ms: a CreateTime record more than this far ahead of "
     "the broker's clock is refused with INVALID_TIMESTAMP (Kafka 4's default, 1 hour).",
     0, INT64_MAX},
    {"shale.partition.snapshot.interval.batches", ConfigType::kLong, "10000", "Topics",
     "Snapshot a partition's producer state and indexes after this many new batches, so a "
     "restart replays only the log after the snapshot. 0 = no batch-count trigger.",
     0, INT64_MAX},
    {"shale.partition.snapshot.interval.ms", ConfigType::kLong, "60000", "Topics",
     "Snapshot a partition with new batches at least this often (and always at shutdown). 0 = no "
     "time trigger.",
     0, INT64_MAX},
    // --- Consumer groups (Kafka's names and defaults) ---
    {"offsets.topic.num.partitions", ConfigType::kInt, "50", "Groups",
     "Cluster mode: how many shards the consumer groups are split into (a group's shard is "
     "Kafka's abs(hashCode) modulo this, as for __consumer_offsets). Each shard is coordinated "
     "by one broker and moves like a partition. Every broker of a cluster must use the same "
     "value (checked at start-up against the cluster's identity record).",
     1, 1000},
    {"group.initial.rebalance.delay.ms", ConfigType::kInt, "3000", "Groups",
     "How long the first rebalance of an empty classic group waits for more members to join.", 0,
     INT32_MAX},
    {"group.min.session.timeout.ms", ConfigType::kInt, "6000", "Groups",
     "Smallest session timeout a consumer may ask for (INVALID_SESSION_TIMEOUT below).", 1,
     INT32_MAX},
    {"group.max.session.timeout.ms", ConfigType::kInt, "1800000", "Groups",
     "Largest session timeout a consumer may ask for (INVALID_SESSION_TIMEOUT above).", 1,
     INT32_MAX},
    {"group.max.size", ConfigType::kInt, "2147483647", "Groups",
     "Most members a classic group may have (GROUP_MAX_SIZE_REACHED beyond).", 1, INT32_MAX},
    {"offsets.retention.minutes", ConfigType::kInt, "10080", "Groups",
     "Committed offsets of a group that has been empty this long are deleted (7 days).", 1,
     INT32_MAX},
    {"offsets.retention.check.interval.ms", ConfigType::kLong, "600000", "Groups",
     "How often expired committed offsets are looked for.", 1, INT64_MAX},
    {"offset.metadata.max.bytes", ConfigType::kInt, "4096", "Groups",
     "Longest metadata string accepted with a committed offset (OFFSET_METADATA_TOO_LARGE).", 0,
     INT32_MAX},
    // --- Transactions (Kafka's names and defaults) ---
    {"transaction.max.timeout.ms", ConfigType::kInt, "900000", "Transactions",
     "Longest transaction.timeout.ms a producer may ask for (INVALID_TRANSACTION_TIMEOUT above).",
     1, INT32_MAX},
    {"transaction.abort.timed.out.transaction.cleanup.interval.ms", ConfigType::kLong, "10000",
     "Transactions",
     "How often the transaction coordinator looks for transactions older than their timeout "
     "and aborts them (bumping the producer's epoch).",
     1, INT64_MAX},
    // --- Storage (AutoMQ's names) ---
    {"s3.data.buckets", ConfigType::kList, "0@file://${data.dir}/objects", "Storage",
     "Where objects go: comma-separated <id>@<scheme>://<location>, scheme file (a POSIX "
     "directory, e.g. on NFS), s3 (s3://bucket?region=..&endpoint=..) or mem (tests).",
     INT64_MIN, INT64_MAX, validate_buckets},
    {"s3.wal.path", ConfigType::kString, "file://${data.dir}/wal", "Storage",
     "The write-ahead log: file://<path> (a local file or block device; AutoMQ's "
     "0@file:///path?capacity=..&iodepth=.. and a bare /path work too, capacity overriding "
     "s3.wal.capacity), 0@s3://<bucket>?region=..&endpoint=..&batchInterval=..&"
     "maxBytesInBatch=.. (AutoMQ's S3 WAL: the WAL as objects in that bucket, which may differ "
     "from the data bucket) or object://<prefix> (the WAL as objects in the data bucket).",
     INT64_MIN, INT64_MAX, validate_wal_path},
    {"s3.wal.capacity", ConfigType::kLong, "2147483648", "Storage",
     "Size of a file WAL's ring in bytes (AutoMQ's default, 2 GiB); rounded down to 4 KiB.",
     16 * kMiB, INT64_MAX},
    {"s3.wal.cache.size", ConfigType::kLong, "-1", "Storage",
     "LogCache size in bytes: the tail-read window and upload staging. -1 = automatic: RAM/32 "
     "within [256 MiB, 2 GiB] (768 MiB with 24 GiB of RAM; docs/performance.md). Set together "
     "with s3.block.cache.size.",
     -1, INT64_MAX},
    {"s3.block.cache.size", ConfigType::kLong, "-1", "Storage",
     "BlockCache size in bytes for catch-up reads from objects. -1 = automatic: RAM/64 within "
     "[128 MiB, 1 GiB] (384 MiB with 24 GiB of RAM). Set together with s3.wal.cache.size.",
     -1, INT64_MAX},
    {"s3.wal.upload.threshold", ConfigType::kLong, "-1", "Storage",
     "Upload the WAL's recent data to an object once this many bytes are waiting. -1 = "
     "automatic: min(s3.wal.cache.size / 3, 500 MiB).",
     -1, INT64_MAX},
    {"s3.wal.upload.interval.ms", ConfigType::kLong, "60000", "Storage",
     "Upload waiting WAL data at least this often (AutoMQ's current default). -1 = by size "
     "only.",
     -1, INT64_MAX},
};

const char* type_name(ConfigType t) {
  switch (t) {
    case ConfigType::kString:
      return "string";
    case ConfigType::kInt:
      return "int";
    case ConfigType::kLong:
      return "long";
    case ConfigType::kBool:
      return "boolean";
    case ConfigType::kList:
      return "list";
  }
  return "?";
}

std::string range_text(const ConfigKey& k) {
  if (k.type != ConfigType::kInt && k.type != ConfigType::kLong) return "";
  int64_t type_min = k.type == ConfigType::kInt ? INT32_MIN : INT64_MIN;
  int64_t type_max = k.type == ConfigType::kInt ? INT32_MAX : INT64_MAX;
  bool has_min = k.min > type_min, has_max = k.max < type_max;
  if (has_min && has_max) return "[" + std::to_string(k.min) + ", " + std::to_string(k.max) + "]";
  if (has_min) return ">= " + std::to_string(k.min);
  if (has_max) return "<= " + std::to_string(k.max);
  return "";
}

// Checks a value against its key's type, range and validator; "" when fine.
std::string check_value(const ConfigKey& k, const std::string& v) {
  switch (k.type) {
    case ConfigType::kInt:
    case ConfigType::kLong: {
      int64_t n = 0;
      if (!parse_int64(v, &n)) return "'" + v + "' is not an integer";
      int64_t lo = std::max(k.min, k.type == ConfigType::kInt ? int64_t{INT32_MIN} : INT64_MIN);
      int64_t hi = std::min(k.max, k.type == ConfigType::kInt ? int64_t{INT32_MAX} : INT64_MAX);
      if (n < lo) return "'" + v + "' is below the minimum " + std::to_string(lo);
      if (n > hi) return "'" + v + "' is above the maximum " + std::to_string(hi);
      break;
    }
    case ConfigType::kBool:
      if (!parse_bool(v)) return "'" + v + "' is not a boolean (true or false)";
      break;
    case ConfigType::kString:
    case ConfigType::kList:
      break;
  }
  if (k.validate != nullptr) {
    std::string why = k.validate(v);
    if (!why.empty()) return why;
  }
  return "";
}

std::string substitute(std::string s, const std::string& data_dir) {
  const std::string var = "${data.dir}";
  for (size_t p = s.find(var); p != std::string::npos; p = s.find(var, p + data_dir.size())) {
    s.replace(p, var.size(), data_dir);
  }
  return s;
}

std::string absolute_dir(const std::string& dir) {
  std::error_code ec;
  auto abs = std::filesystem::absolute(dir, ec);
  if (ec) return dir;
  std::string out = abs.lexically_normal().string();
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// Unescapes a key or value (Java Properties rules).
Result<std::string> unescape(std::string_view s, const std::string& where) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c != '\\' || i + 1 == s.size()) {
      out += c;
      continue;
    }
    char n = s[++i];
    switch (n) {
      case 't':
        out += '\t';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 'f':
        out += '\f';
        break;
      case 'u': {
        uint32_t cp = 0;
        for (int k = 0; k < 4; ++k) {
          int d = i + 1 < s.size() ? hex_digit(s[i + 1]) : -1;
          if (d < 0) {
            return Error::make(Errc::kInvalidArgument, where + ": malformed \\uXXXX escape");
          }
          cp = cp * 16 + static_cast<uint32_t>(d);
          ++i;
        }
        append_utf8(out, cp);
        break;
      }
      default:
        out += n;
    }
  }
  return out;
}

bool ends_with_odd_backslashes(std::string_view line) {
  size_t n = 0;
  while (n < line.size() && line[line.size() - 1 - n] == '\\') ++n;
  return n % 2 == 1;
}

}  // namespace

const std::vector<ConfigKey>& config_keys() { return kKeys; }

const ConfigKey* find_config_key(std::string_view name) {
  for (const auto& k : kKeys) {
    if (name == k.name) return &k;
  }
  return nullptr;
}

std::string Listener::to_string() const {
  bool v6 = host.find(':') != std::string::npos;
  return name + "://" + (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Result<std::vector<Listener>> parse_listeners(std::string_view text) {
  std::vector<Listener> out;
  for (const std::string& item : split_list(text)) {
    auto bad = [&](const std::string& why) {
      return Error::make(Errc::kInvalidArgument, "listener '" + item + "': " + why);
    };
    auto sep = item.find("://");
    if (sep == std::string::npos) return bad("expected NAME://host:port");
    Listener l;
    l.name = item.substr(0, sep);
    if (l.name.empty()) return bad("missing listener name");
    for (char c : l.name) {
      if (!(std::isupper(static_cast<unsigned char>(c)) ||
            std::isdigit(static_cast<unsigned char>(c)) || c == '_')) {
        return bad("listener names use A-Z, 0-9 and '_'");
      }
    }
    std::string hostport = item.substr(sep + 3);
    std::string port_text;
    if (!hostport.empty() && hostport[0] == '[') {
      auto close = hostport.find(']');
      if (close == std::string::npos || close + 1 >= hostport.size() ||
          hostport[close + 1] != ':') {
        return bad("expected [ipv6-address]:port");
      }
      l.host = hostport.substr(1, close - 1);
      port_text = hostport.substr(close + 2);
    } else {
      auto colon = hostport.rfind(':');
      if (colon == std::string::npos) return bad("missing ':port'");
      l.host = hostport.substr(0, colon);
      if (l.host.find(':') != std::string::npos) return bad("put IPv6 addresses in brackets");
      port_text = hostport.substr(colon + 1);
    }
    int64_t port = 0;
    if (!parse_int64(port_text, &port) || port < 0 || port > 65535) {
      return bad("port '" + port_text + "' is not a number in 0..65535");
    }
    l.port = static_cast<uint16_t>(port);
    for (const auto& other : out) {
      if (other.name == l.name) return bad("listener name " + l.name + " is used twice");
    }
    out.push_back(std::move(l));
  }
  return out;
}

Result<std::map<std::string, int32_t>> parse_ip_overrides(std::string_view text) {
  std::map<std::string, int32_t> out;
  for (const std::string& item : split_list(text)) {
    auto colon = item.rfind(':');
    int64_t n = 0;
    if (colon == std::string::npos || colon == 0 || !parse_int64(item.substr(colon + 1), &n) ||
        n < 0 || n > INT32_MAX) {
      return Error::make(Errc::kInvalidArgument, "'" + item + "': expected <ip>:<count>");
    }
    out[trim(item.substr(0, colon))] = static_cast<int32_t>(n);
  }
  return out;
}

Result<std::map<std::string, std::string>> parse_protocol_map(std::string_view text) {
  std::map<std::string, std::string> out;
  for (const std::string& item : split_list(text)) {
    auto colon = item.find(':');
    if (colon == std::string::npos) {
      return Error::make(Errc::kInvalidArgument, "'" + item + "': expected NAME:PROTOCOL");
    }
    std::string name = trim(item.substr(0, colon));
    std::string proto = trim(item.substr(colon + 1));
    if (proto != "PLAINTEXT" && proto != "SSL" && proto != "SASL_PLAINTEXT" &&
        proto != "SASL_SSL") {
      return Error::make(Errc::kInvalidArgument,
                         "'" + item +
                             "': protocol must be PLAINTEXT, SSL, SASL_PLAINTEXT or "
                             "SASL_SSL");
    }
    out[name] = proto;
  }
  return out;
}

std::string Config::security_protocol(const std::string& listener) const {
  auto m = parse_protocol_map(get_string("listener.security.protocol.map"));  // validated
  auto it = m->find(listener);
  return it == m->end() ? "PLAINTEXT" : it->second;
}

std::string Config::listener_value(const std::string& listener, const std::string& key) const {
  std::string lower = listener;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  auto it = listener_keys_.find("listener.name." + lower + "." + key);
  if (it != listener_keys_.end()) return it->second;
  if (find_config_key(key) != nullptr) return get_string(key);
  return "";
}

Result<Properties> parse_properties(std::string_view text, std::string_view origin) {
  Properties props;
  size_t pos = 0;
  int line_no = 0;
  while (pos < text.size()) {
    // Gather one logical line (continuations joined, their leading blanks dropped).
    std::string logical;
    int first_line = line_no + 1;
    bool continued = false;
    do {
      size_t eol = text.find('\n', pos);
      if (eol == std::string_view::npos) eol = text.size();
      std::string_view line = text.substr(pos, eol - pos);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      pos = eol + 1;
      ++line_no;
      size_t b = 0;
      while (b < line.size() && (line[b] == ' ' || line[b] == '\t' || line[b] == '\f')) ++b;
      line.remove_prefix(b);
      if (!continued && (line.empty() || line[0] == '#' || line[0] == '!')) break;
      continued = ends_with_odd_backslashes(line);
      if (continued) line.remove_suffix(1);
      logical.append(line);
    } while (continued && pos < text.size());
    if (logical.empty()) continue;
    std::string where = std::string(origin) + ":" + std::to_string(first_line);
    // The key ends at the first unescaped '=', ':' or blank.
    size_t k = 0;
    while (k < logical.size()) {
      char c = logical[k];
      if (c == '\\') {
        k += 2;
        continue;
      }
      if (c == '=' || c == ':' || c == ' ' || c == '\t' || c == '\f') break;
      ++k;
    }
    k = std::min(k, logical.size());
    size_t v = k;
    while (v < logical.size() && (logical[v] == ' ' || logical[v] == '\t')) ++v;
    if (v < logical.size() && (logical[v] == '=' || logical[v] == ':')) ++v;
    while (v < logical.size() && (logical[v] == ' ' || logical[v] == '\t')) ++v;
    auto key = unescape(std::string_view(logical).substr(0, k), where);
    if (!key.ok()) return key.error();
    auto value = unescape(std::string_view(logical).substr(v), where);
    if (!value.ok()) return value.error();
    props.values[*key] = *value;
    props.origin[*key] = where;
  }
  return props;
}

Result<Properties> read_properties_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Error::make(Errc::kNotFound, "cannot read config file " + path.string());
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_properties(ss.str(), path.filename().string());
}

Status add_override(Properties& props, std::string_view kv) {
  auto eq = kv.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    return Error::make(Errc::kInvalidArgument,
                       "--override '" + std::string(kv) + "': expected key=value");
  }
  std::string key = trim(kv.substr(0, eq));
  props.values[key] = std::string(kv.substr(eq + 1));
  props.origin[key] = "--override";
  return ok_status();
}

namespace {

// Kafka keys that Shale reads through a translation (Config::load's comment) rather than
// under their own name; they are neither unknown nor ignored.
const std::set<std::string> kTranslatedKafkaKeys = {"log.dirs", "log.dir", "log.retention.minutes",
                                                    "log.retention.hours",
                                                    "controller.listener.names"};

// Applies the Kafka translations to a copy of the properties.
Result<Properties> translate_kafka_keys(const Properties& in) {
  Properties p = in;
  auto has = [&](const char* k) { return p.values.count(k) != 0; };
  auto from = [&](const char* k) {
    auto o = p.origin.find(k);
    return std::string(k) + (o != p.origin.end() ? " (" + o->second + ")" : "");
  };
  if (!has("data.dir")) {
    for (const char* k : {"log.dirs", "log.dir"}) {
      if (!has(k)) continue;
      auto dirs = split_list(p.values[k]);
      if (dirs.empty()) return Error::make(Errc::kInvalidArgument, from(k) + ": empty");
      p.values["data.dir"] = dirs.front();
      p.origin["data.dir"] = from(k);
      break;
    }
  }
  if (!has("log.retention.ms")) {
    for (auto [k, ms] : {std::pair<const char*, int64_t>{"log.retention.minutes", 60000},
                         std::pair<const char*, int64_t>{"log.retention.hours", 3600000}}) {
      if (!has(k)) continue;
      int64_t n = 0;
      if (!parse_int64(trim(p.values[k]), &n) || n < -1 || (n > 0 && n > INT64_MAX / ms)) {
        return Error::make(Errc::kInvalidArgument, from(k) + ": '" + p.values[k] +
                                                       "' is not a valid number of " +
                                                       (ms == 60000 ? "minutes" : "hours"));
      }
      p.values["log.retention.ms"] = std::to_string(n < 0 ? -1 : n * ms);
      p.origin["log.retention.ms"] = from(k);
      break;
    }
  }
  if (has("controller.listener.names")) {
    std::set<std::string> controller;
    for (const auto& n : split_list(p.values["controller.listener.names"])) controller.insert(n);
    for (const char* k : {"listeners", "advertised.listeners"}) {
      if (!has(k)) continue;
      std::string kept;
      for (const auto& entry : split_list(p.values[k])) {
        auto sep = entry.find("://");
        if (sep != std::string::npos && controller.count(entry.substr(0, sep))) continue;
        kept += (kept.empty() ? "" : ",") + entry;
      }
      p.values[k] = kept;
    }
  }
  return p;
}

}  // namespace

Result<Config> Config::load(const Properties& given_props, const LoadOptions& opts) {
  auto translated = translate_kafka_keys(given_props);
  if (!translated.ok()) return std::move(translated).error();
  const Properties& props = *translated;
  std::vector<std::string> errors;
  std::vector<std::string> ignored;
  std::map<std::string, std::string> listener_keys;
  for (const auto& [key, value] : props.values) {
    if (find_config_key(key) != nullptr || kTranslatedKafkaKeys.count(key)) continue;
    if (key.rfind("listener.name.", 0) == 0) {
      // Kafka's per-listener overrides (listener.name.<name>.<key>): read by listener_value().
      listener_keys[key] = value;
      continue;
    }
    auto o = props.origin.find(key);
    std::string where = o != props.origin.end() ? " (" + o->second + ")" : "";
    if (opts.strict) {
      errors.push_back("unknown configuration key '" + key + "'" + where);
    } else {
      ignored.push_back(key + where);
    }
  }
  Config c;
  c.ignored_ = std::move(ignored);
  c.listener_keys_ = std::move(listener_keys);
  auto given = [&](const char* name) -> const std::string* {
    auto it = props.values.find(name);
    return it == props.values.end() ? nullptr : &it->second;
  };
  const std::string* dd = given("data.dir");
  std::string data_dir = dd != nullptr ? trim(*dd) : "./data";
  for (const ConfigKey& k : kKeys) {
    const std::string* v = given(k.name);
    // Defaults derived from data.dir become absolute: object-store and WAL URIs
    // (file:///...) need an absolute path, and the embedded default data.dir is "./data".
    std::string value = v != nullptr ? *v : substitute(k.default_value, absolute_dir(data_dir));
    if (k.type != ConfigType::kString) value = trim(value);
    std::string why = check_value(k, value);
    if (!why.empty()) {
      auto o = props.origin.find(k.name);
      std::string from = o != props.origin.end() ? " (" + o->second + ")" : " (default)";
      errors.push_back("configuration key '" + std::string(k.name) + "'" + from + ": " + why);
      continue;
    }
    c.values_[k.name] = value;
    c.set_[k.name] = v != nullptr;
  }
  if (errors.empty()) {
    // Cross-key rules.
    if (c.is_set("s3.wal.cache.size") != c.is_set("s3.block.cache.size")) {
      errors.push_back(
          "configuration keys 's3.wal.cache.size' and 's3.block.cache.size' must be set "
          "together (or neither, for automatic sizing)");
    }
    auto adv = c.get_string("advertised.listeners");
    if (!trim(adv).empty()) {
      auto names = c.listeners();
      auto advertised = parse_listeners(adv);  // validated above
      for (const auto& a : *advertised) {
        bool known = std::any_of(names.begin(), names.end(),
                                 [&](const Listener& l) { return l.name == a.name; });
        if (!known) {
          errors.push_back("configuration key 'advertised.listeners': listener name " + a.name +
                           " is not in 'listeners'");
        }
      }
    }
  }
  if (!errors.empty()) {
    std::string msg;
    for (const auto& e : errors) msg += (msg.empty() ? "" : "\n") + e;
    return Error::make(Errc::kInvalidArgument, msg);
  }
  return c;
}

Config Config::defaults() {
  auto r = load(Properties{});
  if (!r.ok()) throw std::logic_error("built-in defaults are invalid: " + r.error().message);
  return std::move(r).value();
}

const std::string& Config::raw(std::string_view key, ConfigType type) const {
  const ConfigKey* k = find_config_key(key);
  if (k == nullptr) throw std::logic_error("no configuration key " + std::string(key));
  bool compatible = k->type == type || (type == ConfigType::kLong && k->type == ConfigType::kInt);
  if (!compatible) {
    throw std::logic_error("configuration key " + std::string(key) + " is a " + type_name(k->type) +
                           ", not a " + type_name(type));
  }
  return values_.find(key)->second;
}

const std::string& Config::get_string(std::string_view key) const {
  const ConfigKey* k = find_config_key(key);
  // Lists are strings too (raw text), for callers that parse them themselves.
  return raw(
      key, k != nullptr && k->type == ConfigType::kList ? ConfigType::kList : ConfigType::kString);
}

int64_t Config::get_long(std::string_view key) const {
  int64_t n = 0;
  parse_int64(raw(key, ConfigType::kLong), &n);
  return n;
}

int32_t Config::get_int(std::string_view key) const {
  int64_t n = 0;
  parse_int64(raw(key, ConfigType::kInt), &n);
  return static_cast<int32_t>(n);
}

bool Config::get_bool(std::string_view key) const {
  return *parse_bool(raw(key, ConfigType::kBool));
}

std::vector<std::string> Config::get_list(std::string_view key) const {
  return split_list(raw(key, ConfigType::kList));
}

bool Config::is_set(std::string_view key) const {
  auto it = set_.find(key);
  return it != set_.end() && it->second;
}

std::vector<Listener> Config::listeners() const {
  auto r = parse_listeners(get_string("listeners"));  // validated by load()
  return std::move(r).value();
}

std::vector<Listener> Config::advertised_listeners() const {
  std::string adv = trim(get_string("advertised.listeners"));
  std::vector<Listener> out;
  if (adv.empty()) {
    out = listeners();
  } else {
    auto r = parse_listeners(adv);  // validated by load()
    out = std::move(r).value();
  }
  for (auto& l : out) {
    if (l.host.empty() || l.host == "0.0.0.0" || l.host == "::") {
      char name[256] = {};
      if (::gethostname(name, sizeof name - 1) == 0 && name[0] != '\0') {
        l.host = name;
      } else {
        l.host = "127.0.0.1";
      }
    }
  }
  return out;
}

std::string Config::dump() const {
  std::string out;
  for (const ConfigKey& k : kKeys) out += std::string(k.name) + "=" + values_.at(k.name) + "\n";
  return out;
}

void Config::resolve_memory_defaults(uint64_t ram) {
  const int64_t r = static_cast<int64_t>(std::min<uint64_t>(ram, uint64_t{1} << 50));
  int64_t wal = get_long("s3.wal.cache.size");
  int64_t block = get_long("s3.block.cache.size");
  if (wal < 0) wal = std::clamp<int64_t>(r / 32, 256 * kMiB, 2 * kGiB);
  if (block < 0) block = std::clamp<int64_t>(r / 64, 128 * kMiB, 1 * kGiB);
  int64_t threshold = get_long("s3.wal.upload.threshold");
  if (threshold < 0) threshold = std::min(wal / 3, 500 * kMiB);
  values_["s3.wal.cache.size"] = std::to_string(wal);
  values_["s3.block.cache.size"] = std::to_string(block);
  values_["s3.wal.upload.threshold"] = std::to_string(threshold);
}

std::string config_help_text() {
  std::string out = "Configuration keys (server.properties or --override key=value):\n";
  for (const ConfigKey& k : kKeys) {
    std::string def = k.default_value;
    out += "  " + std::string(k.name) + " (" + type_name(k.type) + ", default '" + def + "'";
    std::string range = range_text(k);
    if (!range.empty()) out += ", " + range;
    out += ")\n";
    // Wrap the documentation at ~96 columns, indented.
    std::istringstream words(k.doc);
    std::string word, line = "      ";
    while (words >> word) {
      if (line.size() + word.size() + 1 > 96 && line.size() > 6) {
        out += line + "\n";
        line = "      ";
      }
      line += (line.size() > 6 ? " " : "") + word;
    }
    out += line + "\n";
  }
  return out;
}

// Markdown table cells: keep <placeholders> visible and pipes from splitting the cell.
std::string md_cell(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '<') {
      out += "&lt;";
    } else if (c == '>') {
      out += "&gt;";
    } else if (c == '|') {
      out += "\\|";
    } else {
      out += c;
    }
  }
  return out;
}

std::string config_docs_markdown() {
  std::string out =
      "# Configuration\n\n"
      "<!-- Generated by `shale serve --print-config-docs` from the table in "
      "src/app/config.cc; do not edit by hand (a unit test checks it is current). -->\n\n"
      "`shale serve` reads a Kafka-style `server.properties` file (`--config FILE`) and then "
      "any number of `--override key=value` options (later ones win). Every key has a "
      "default, so no file is needed for a single local broker. A value of the wrong type "
      "or out of range, or a listener that cannot be bound stops the start with an error "
      "naming the key, and a non-zero exit code.\n\n"
      "Keys that Kafka or AutoMQ have keep their names and meaning. `${data.dir}` in a "
      "default stands for the value of `data.dir`. A stock Kafka or AutoMQ "
      "`server.properties` loads as it is: keys Shale does not use are accepted and listed "
      "in one warning at start-up (`--strict-config` makes them an error instead), and these "
      "Kafka keys are translated when the Shale key is not set: `log.dirs` (its first "
      "directory; else `log.dir`) is `data.dir`; `log.retention.minutes`, else "
      "`log.retention.hours`, gives `log.retention.ms` (Kafka's precedence); the listeners "
      "named in `controller.listener.names` are not opened (a Shale broker has no KRaft "
      "controller).\n";
  std::string group;
  for (const ConfigKey& k : kKeys) {
    if (group != k.group) {
      group = k.group;
      out += "\n## " + group + "\n\n| key | type | default | valid | description |\n";
      out += "| --- | --- | --- | --- | --- |\n";
    }
    std::string def = k.default_value;
    out += "| `" + std::string(k.name) + "` | " + type_name(k.type) + " | " +
           (def.empty() ? "(empty)" : "`" + def + "`") + " | " + md_cell(range_text(k)) + " | " +
           md_cell(k.doc) + " |\n";
  }
  return out;
}

std::string generate_cluster_id() {
  static const char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::random_device rd;
  uint8_t bytes[16];
  for (auto& b : bytes) b = static_cast<uint8_t>(rd());
  bytes[6] = static_cast<uint8_t>((bytes[6] & 0x0F) | 0x40);  // a version-4 UUID, as Kafka's
  bytes[8] = static_cast<uint8_t>((bytes[8] & 0x3F) | 0x80);
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (uint8_t b : bytes) {
    acc = (acc << 8) | b;
    bits += 8;
    while (bits >= 6) {
      out += kAlphabet[(acc >> (bits - 6)) & 0x3F];
      bits -= 6;
    }
  }
  if (bits > 0) out += kAlphabet[(acc << (6 - bits)) & 0x3F];
  return out;  // 22 characters
}

Result<std::string> ensure_cluster_id(const std::filesystem::path& data_dir,
                                      const std::string& configured, int32_t node_id) {
  const auto path = data_dir / "meta.properties";
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) {
    auto props = read_properties_file(path);
    if (!props.ok()) return props.error();
    auto id = props->values.find("cluster.id");
    if (id == props->values.end() || id->second.empty()) {
      return Error::make(Errc::kCorruption, path.string() + " has no cluster.id");
    }
    if (!configured.empty() && configured != id->second) {
      return Error::make(Errc::kInvalidArgument, "configuration key 'cluster.id': '" + configured +
                                                     "' does not match '" + id->second +
                                                     "' stored in " + path.string());
    }
    auto stored_node = props->values.find("node.id");
    if (stored_node != props->values.end() && stored_node->second != std::to_string(node_id)) {
      return Error::make(Errc::kInvalidArgument,
                         "configuration key 'node.id': " + std::to_string(node_id) +
                             " does not match " + stored_node->second + " stored in " +
                             path.string());
    }
    return id->second;
  }
  std::string id = configured.empty() ? generate_cluster_id() : configured;
  // Write then rename, so a crash never leaves a half-written file.
  const auto tmp = data_dir / "meta.properties.tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << "#Written by shale serve on first start\nversion=1\ncluster.id=" << id
        << "\nnode.id=" << node_id << "\n";
    out.flush();
    if (!out) return Error::make(Errc::kIoError, "cannot write " + tmp.string());
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec)
    return Error::make(Errc::kIoError, "cannot create " + path.string() + ": " + ec.message());
  return id;
}

}  // namespace shale::app
