// librdkafka C++ API client program for the compatibility matrix (see ../../README.md).
//
//   compat_rdkafka_client create  --bootstrap H:P --topic T [--partitions N]
//   compat_rdkafka_client produce --bootstrap H:P --topic T --first I --count N [--codecs a,b]
//   compat_rdkafka_client consume --bootstrap H:P --topic T --group G --member M
//
// Prints one JSON object per line on stdout. Single-threaded apart from librdkafka's own threads:
// delivery reports and rebalance callbacks run inside poll()/consume() on the main thread, so no
// locking is needed; SIGTERM only flips an atomic flag.
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafkacpp.h>
#include <openssl/evp.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace {

std::atomic<bool> g_running{true};

void on_signal(int) { g_running = false; }

struct Args {
  std::string command, bootstrap, topic, group, member;
  std::string codecs = "none,gzip,snappy,lz4,zstd";
  int partitions = 6;
  long first = 0, count = 0;
};

// JSON string escaping for the ASCII payloads of the scenario (and anything else, byte-safe).
std::string json_str(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

void emit(const std::string& line) {
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

std::string sha256_hex(const void* data, size_t len) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(data, len, md, &n, EVP_sha256(), nullptr);
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < n; ++i) {
    out += hex[md[i] >> 4];
    out += hex[md[i] & 15];
  }
  return out;
}

std::string key_of(long i) { return "key-" + std::to_string(i % 1000); }

std::string value_of(long i) {
  return "value-" + std::to_string(i) + "-" + std::string(i % 500, static_cast<char>('a' + i % 26));
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t pos = s.find(sep, start);
    out.push_back(s.substr(start, pos - start));
    if (pos == std::string::npos) return out;
    start = pos + 1;
  }
}

std::unique_ptr<RdKafka::Conf> make_conf(const std::map<std::string, std::string>& kv) {
  std::unique_ptr<RdKafka::Conf> conf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
  std::string err;
  for (const auto& [k, v] : kv) {
    if (conf->set(k, v, err) != RdKafka::Conf::CONF_OK) {
      std::fprintf(stderr, "config %s=%s: %s\n", k.c_str(), v.c_str(), err.c_str());
      std::exit(2);
    }
  }
  return conf;
}

// The C++ API has no admin client: use the C API on the C++ handle (the documented way).
int create(const Args& a) {
  auto conf = make_conf({{"bootstrap.servers", a.bootstrap}});
  std::string err;
  std::unique_ptr<RdKafka::Producer> p(RdKafka::Producer::create(conf.get(), err));
  if (!p) {
    std::fprintf(stderr, "producer: %s\n", err.c_str());
    return 1;
  }
  rd_kafka_t* rk = p->c_ptr();
  char errstr[512];
  rd_kafka_NewTopic_t* nt =
      rd_kafka_NewTopic_new(a.topic.c_str(), a.partitions, 1, errstr, sizeof errstr);
  rd_kafka_queue_t* q = rd_kafka_queue_new(rk);
  rd_kafka_AdminOptions_t* opts = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
  rd_kafka_AdminOptions_set_operation_timeout(opts, 30000, errstr, sizeof errstr);
  rd_kafka_CreateTopics(rk, &nt, 1, opts, q);
  rd_kafka_event_t* ev = rd_kafka_queue_poll(q, 60000);
  int rc = 1;
  if (ev == nullptr) {
    std::fprintf(stderr, "CreateTopics: no result within 60 s\n");
  } else if (rd_kafka_event_error(ev)) {
    std::fprintf(stderr, "CreateTopics: %s\n", rd_kafka_event_error_string(ev));
  } else {
    size_t n = 0;
    const rd_kafka_topic_result_t** res =
        rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &n);
    rc = 0;
    for (size_t i = 0; i < n; ++i) {
      if (rd_kafka_topic_result_error(res[i])) {
        std::fprintf(stderr, "CreateTopics %s: %s\n", rd_kafka_topic_result_name(res[i]),
                     rd_kafka_topic_result_error_string(res[i]));
        rc = 1;
      }
    }
  }
  if (ev) rd_kafka_event_destroy(ev);
  rd_kafka_AdminOptions_destroy(opts);
  rd_kafka_NewTopic_destroy(nt);
  rd_kafka_queue_destroy(q);
  if (rc == 0) emit("{\"ev\":\"created\",\"topic\":" + json_str(a.topic) + "}");
  return rc;
}

// Delivery reports: the record index travels as the per-message opaque.
class DeliveryReport : public RdKafka::DeliveryReportCb {
 public:
  int failures = 0;
  void dr_cb(RdKafka::Message& m) override {
    long i = static_cast<long>(reinterpret_cast<intptr_t>(m.msg_opaque()));
    if (m.err() != RdKafka::ERR_NO_ERROR) {
      ++failures;
      emit("{\"ev\":\"error\",\"i\":" + std::to_string(i) + ",\"error\":" + json_str(m.errstr()) +
           "}");
    } else {
      emit("{\"ev\":\"ack\",\"i\":" + std::to_string(i) + ",\"p\":" +
           std::to_string(m.partition()) + ",\"o\":" + std::to_string(m.offset()) + "}");
    }
  }
};

int produce(const Args& a) {
  auto codecs = split(a.codecs, ',');
  const long nc = static_cast<long>(codecs.size());
  DeliveryReport dr;
  for (long ci = 0; ci < nc; ++ci) {
    const std::string& codec = codecs[ci];
    long lo = a.first + (ci * a.count + nc - 1) / nc;
    long hi = a.first + ((ci + 1) * a.count + nc - 1) / nc;
    auto conf = make_conf({{"bootstrap.servers", a.bootstrap},
                           {"enable.idempotence", "true"},
                           {"acks", "all"},
                           {"compression.type", codec},
                           {"linger.ms", "5"}});
    std::string err;
    if (conf->set("dr_cb", &dr, err) != RdKafka::Conf::CONF_OK) {
      std::fprintf(stderr, "dr_cb: %s\n", err.c_str());
      return 2;
    }
    std::unique_ptr<RdKafka::Producer> p(RdKafka::Producer::create(conf.get(), err));
    if (!p) {
      std::fprintf(stderr, "producer: %s\n", err.c_str());
      return 1;
    }
    for (long i = lo; i < hi; ++i) {
      std::string k = key_of(i), v = value_of(i);
      for (;;) {
        RdKafka::Headers* h = RdKafka::Headers::create();
        h->add("idx", std::to_string(i));
        h->add("codec", codec);
        RdKafka::ErrorCode e = p->produce(
            a.topic, RdKafka::Topic::PARTITION_UA, RdKafka::Producer::RK_MSG_COPY, v.data(),
            v.size(), k.data(), k.size(), 0, h, reinterpret_cast<void*>(static_cast<intptr_t>(i)));
        if (e == RdKafka::ERR_NO_ERROR) break;  // librdkafka now owns the headers
        delete h;
        if (e != RdKafka::ERR__QUEUE_FULL) {
          std::fprintf(stderr, "produce %ld: %s\n", i, RdKafka::err2str(e).c_str());
          return 1;
        }
        p->poll(100);
      }
      p->poll(0);
    }
    if (p->flush(60000) != RdKafka::ERR_NO_ERROR) {
      std::fprintf(stderr, "flush: %d records still queued\n", p->outq_len());
      return 1;
    }
  }
  emit("{\"ev\":\"done\"}");
  return dr.failures ? 1 : 0;
}

std::string parts_json(const std::vector<RdKafka::TopicPartition*>& parts) {
  std::string s = "[";
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(parts[i]->partition());
  }
  return s + "]";
}

class Member : public RdKafka::RebalanceCb {
 public:
  RdKafka::KafkaConsumer* consumer = nullptr;
  std::string topic;
  std::map<int32_t, int64_t> pending;  // partition -> next offset, consumed, not yet committed

  void commit_pending() {
    if (pending.empty()) return;
    std::vector<RdKafka::TopicPartition*> offs;
    std::string body;
    for (const auto& [p, o] : pending) {
      offs.push_back(RdKafka::TopicPartition::create(topic, p, o));
      body += (body.empty() ? "\"" : ",\"") + std::to_string(p) + "\":" + std::to_string(o);
    }
    RdKafka::ErrorCode e = consumer->commitSync(offs);
    RdKafka::TopicPartition::destroy(offs);
    if (e != RdKafka::ERR_NO_ERROR) {
      emit("{\"ev\":\"commit_failed\",\"error\":" + json_str(RdKafka::err2str(e)) + "}");
      return;
    }
    emit("{\"ev\":\"commit\",\"offs\":{" + body + "}}");
    pending.clear();
  }

  void rebalance_cb(RdKafka::KafkaConsumer* c, RdKafka::ErrorCode err,
                    std::vector<RdKafka::TopicPartition*>& parts) override {
    const bool cooperative = c->rebalance_protocol() == "COOPERATIVE";
    if (err == RdKafka::ERR__ASSIGN_PARTITIONS) {
      emit("{\"ev\":\"assigned\",\"parts\":" + parts_json(parts) + "}");
      if (cooperative) {
        delete c->incremental_assign(parts);
      } else {
        c->assign(parts);
      }
    } else {
      // Commit what was consumed before another member takes the partitions over.
      commit_pending();
      emit("{\"ev\":\"revoked\",\"parts\":" + parts_json(parts) + "}");
      if (cooperative) {
        delete c->incremental_unassign(parts);
      } else {
        c->unassign();
      }
    }
  }
};

int consume(const Args& a) {
  std::signal(SIGTERM, on_signal);
  std::signal(SIGINT, on_signal);
  emit("{\"ev\":\"started\"}");  // from here on SIGTERM means a clean close
  Member member;
  member.topic = a.topic;
  auto conf = make_conf({{"bootstrap.servers", a.bootstrap},
                         {"group.id", a.group},
                         {"client.id", a.member},
                         {"enable.auto.commit", "false"},
                         {"auto.offset.reset", "earliest"},
                         {"session.timeout.ms", "10000"}});
  std::string err;
  if (conf->set("rebalance_cb", static_cast<RdKafka::RebalanceCb*>(&member), err) !=
      RdKafka::Conf::CONF_OK) {
    std::fprintf(stderr, "rebalance_cb: %s\n", err.c_str());
    return 2;
  }
  std::unique_ptr<RdKafka::KafkaConsumer> c(RdKafka::KafkaConsumer::create(conf.get(), err));
  if (!c) {
    std::fprintf(stderr, "consumer: %s\n", err.c_str());
    return 1;
  }
  member.consumer = c.get();
  if (RdKafka::ErrorCode e = c->subscribe({a.topic}); e != RdKafka::ERR_NO_ERROR) {
    std::fprintf(stderr, "subscribe: %s\n", RdKafka::err2str(e).c_str());
    return 1;
  }
  int since_commit = 0;
  while (g_running) {
    std::unique_ptr<RdKafka::Message> m(c->consume(200));
    if (m->err() == RdKafka::ERR__TIMED_OUT) {
      since_commit = 0;
      member.commit_pending();
      continue;
    }
    if (m->err() != RdKafka::ERR_NO_ERROR) {
      emit("{\"ev\":\"error\",\"error\":" + json_str(m->errstr()) + "}");
      continue;
    }
    std::string hdrs = "[";
    if (RdKafka::Headers* h = m->headers()) {
      bool firsth = true;
      for (const auto& hd : h->get_all()) {
        if (!firsth) hdrs += ",";
        firsth = false;
        std::string v = hd.value()
                            ? std::string(static_cast<const char*>(hd.value()), hd.value_size())
                            : std::string();
        // Appended piecewise: GCC 12 misreports `"[" + std::string&&` under -Wrestrict.
        hdrs += '[';
        hdrs += json_str(hd.key());
        hdrs += ',';
        hdrs += hd.value() ? json_str(v) : std::string("null");
        hdrs += ']';
      }
    }
    hdrs += "]";
    const std::string* key = m->key();
    emit("{\"ev\":\"rec\",\"p\":" + std::to_string(m->partition()) +
         ",\"o\":" + std::to_string(m->offset()) + ",\"k\":" + (key ? json_str(*key) : "null") +
         ",\"vh\":\"" + sha256_hex(m->payload(), m->len()) + "\",\"h\":" + hdrs + "}");
    member.pending[m->partition()] = m->offset() + 1;
    // Commit in batches of what poll handed over: once the local queue runs dry (timeout above)
    // or every 500 records.
    if (++since_commit >= 500) {
      since_commit = 0;
      member.commit_pending();
    }
  }
  member.commit_pending();
  c->close();
  emit("{\"ev\":\"closed\"}");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s create|produce|consume --bootstrap H:P --topic T ...\n",
                 argv[0]);
    return 2;
  }
  a.command = argv[1];
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--bootstrap") {
      a.bootstrap = v;
    } else if (k == "--topic") {
      a.topic = v;
    } else if (k == "--partitions") {
      a.partitions = std::stoi(v);
    } else if (k == "--first") {
      a.first = std::stol(v);
    } else if (k == "--count") {
      a.count = std::stol(v);
    } else if (k == "--codecs") {
      a.codecs = v;
    } else if (k == "--group") {
      a.group = v;
    } else if (k == "--member") {
      a.member = v;
    } else {
      std::fprintf(stderr, "unknown option %s\n", k.c_str());
      return 2;
    }
  }
  if (a.command == "create") return create(a);
  if (a.command == "produce") return produce(a);
  if (a.command == "consume") return consume(a);
  std::fprintf(stderr, "unknown command %s\n", a.command.c_str());
  return 2;
}
