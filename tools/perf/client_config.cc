#include "perf/client_config.h"

#include <cstdlib>
#include <map>
#include <regex>

namespace shale::perf {
namespace {

// Java name -> librdkafka name, where only the name differs.
const std::map<std::string, std::string>& renames() {
  static const std::map<std::string, std::string> m = {
      {"fetch.max.wait.ms", "fetch.wait.max.ms"},
      {"max.request.size", "message.max.bytes"},
      {"send.buffer.bytes", "socket.send.buffer.bytes"},
      {"receive.buffer.bytes", "socket.receive.buffer.bytes"},
      {"sasl.mechanism", "sasl.mechanisms"},
      {"delivery.timeout.ms", "message.timeout.ms"},
      {"ssl.endpoint.identification.algorithm", "ssl.endpoint.identification.algorithm"},
  };
  return m;
}

// Keys the tool forces (serializers, partitioner) or that have no meaning for librdkafka.
bool ignored(const std::string& k) {
  return k == "key.serializer" || k == "value.serializer" || k == "key.deserializer" ||
         k == "value.deserializer" || k == "partitioner.ignore.keys" ||
         k == "partitioner.adaptive.partitioning.enable" ||
         k == "partitioner.availability.timeout.ms" || k == "default.api.timeout.ms" ||
         // KafkaAvroSerializer settings, used by the tool itself in Avro mode (--value-schema).
         k == "schema.registry.url" || k == "basic.auth.credentials.source" ||
         k == "basic.auth.user.info";
}

std::string translate_assignors(const std::string& v, std::string* err) {
  std::string out;
  size_t pos = 0;
  while (pos <= v.size()) {
    size_t comma = v.find(',', pos);
    std::string item = v.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    while (!item.empty() && item.front() == ' ') item.erase(0, 1);
    while (!item.empty() && item.back() == ' ') item.pop_back();
    std::string mapped;
    if (item.find("CooperativeStickyAssignor") != std::string::npos ||
        item == "cooperative-sticky") {
      mapped = "cooperative-sticky";
    } else if (item.find("RoundRobinAssignor") != std::string::npos || item == "roundrobin") {
      mapped = "roundrobin";
    } else if (item.find("RangeAssignor") != std::string::npos || item == "range") {
      mapped = "range";
    } else if (!item.empty()) {
      *err = "partition.assignment.strategy: no librdkafka equivalent for '" + item + "'";
      return "";
    }
    if (!mapped.empty()) out += (out.empty() ? "" : ",") + mapped;
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

std::string apply(ClientRole role, const ConfigMap& m, ClientSettings* out) {
  for (const auto& [k, v] : m) {
    if (ignored(k)) continue;
    if (k == "batch.size") {
      long long b = std::atoll(v.c_str());
      if (role == ClientRole::kProducer) {
        out->batch_size = b;
        // Java batch.size=0 disables batching; librdkafka needs >= 1, so cap the count instead.
        if (b <= 0) {
          out->rdkafka.emplace_back("batch.num.messages", "1");
        } else {
          out->rdkafka.emplace_back("batch.size", v);
        }
      }
      continue;
    }
    if (k == "buffer.memory") {
      long long kb = std::max(1LL, std::atoll(v.c_str()) / 1024);
      out->rdkafka.emplace_back("queue.buffering.max.kbytes", std::to_string(kb));
      continue;
    }
    if (k == "max.block.ms") {
      out->max_block_ms = std::atoll(v.c_str());
      continue;
    }
    if (k == "max.poll.records") {
      out->max_poll_records = std::max(1, std::atoi(v.c_str()));
      continue;
    }
    if (k == "group.protocol") {
      if (v == "classic" || v == "CLASSIC") continue;
      return "group.protocol=" + v + " is not supported by librdkafka 2.0 (only classic)";
    }
    if (k == "partition.assignment.strategy") {
      std::string err;
      std::string a = translate_assignors(v, &err);
      if (!err.empty()) return err;
      out->rdkafka.emplace_back(k, a);
      continue;
    }
    if (k == "sasl.jaas.config") {
      std::smatch u, p;
      static const std::regex ure("username\\s*=\\s*\"([^\"]*)\"");
      static const std::regex pre("password\\s*=\\s*\"([^\"]*)\"");
      if (!std::regex_search(v, u, ure) || !std::regex_search(v, p, pre)) {
        return "sasl.jaas.config: only login modules with username=\"...\" password=\"...\" can "
               "be translated (use sasl.username / sasl.password)";
      }
      out->rdkafka.emplace_back("sasl.username", u[1].str());
      out->rdkafka.emplace_back("sasl.password", p[1].str());
      continue;
    }
    if (k == "ssl.truststore.location" || k == "ssl.keystore.location" ||
        k == "ssl.truststore.password" || k == "ssl.keystore.password" ||
        k == "ssl.truststore.type" || k == "ssl.keystore.type") {
      return k +
             ": Java key stores cannot be used by librdkafka; give PEM files with "
             "ssl.ca.location / ssl.certificate.location / ssl.key.location";
    }
    if (k == "partitioner.class") {
      return "partitioner.class: shale perf chooses partitions itself (sticky, keys ignored)";
    }
    auto r = renames().find(k);
    out->rdkafka.emplace_back(r == renames().end() ? k : r->second, v);
  }
  return "";
}

}  // namespace

std::string translate_client_config(ClientRole role, const std::string& bootstrap,
                                    const ConfigMap& common, const ConfigMap& role_configs,
                                    ClientSettings* out) {
  *out = ClientSettings{};
  auto& rk = out->rdkafka;
  // Java 3.9 client defaults the original tool runs with (librdkafka's differ).
  if (role == ClientRole::kProducer) {
    rk = {{"acks", "all"},
          {"enable.idempotence", "true"},
          {"linger.ms", "0"},
          {"batch.size", "16384"},
          {"compression.type", "none"},
          {"message.timeout.ms", "120000"},
          {"queue.buffering.max.kbytes", "32768"},
          {"max.in.flight.requests.per.connection", "5"},
          {"request.timeout.ms", "30000"},
          {"message.max.bytes", "1048576"},
          {"metadata.max.age.ms", "300000"}};
  } else if (role == ClientRole::kConsumer) {
    rk = {{"fetch.wait.max.ms", "500"},
          {"fetch.min.bytes", "1"},
          {"fetch.max.bytes", "52428800"},
          {"max.partition.fetch.bytes", "1048576"},
          {"max.poll.interval.ms", "300000"},
          {"session.timeout.ms", "45000"},
          {"heartbeat.interval.ms", "3000"},
          {"enable.auto.commit", "true"},
          {"auto.commit.interval.ms", "5000"},
          {"partition.assignment.strategy", "range"},
          {"isolation.level", "read_uncommitted"},
          {"check.crcs", "true"}};
  }
  std::string err = apply(role, common, out);
  if (err.empty() && role != ClientRole::kAdmin) err = apply(role, role_configs, out);
  if (!err.empty()) return err;
  rk.emplace_back("bootstrap.servers", bootstrap);
  if (role == ClientRole::kConsumer) rk.emplace_back("auto.offset.reset", "latest");
  return "";
}

}  // namespace shale::perf
