// Configuration: properties syntax, the key table's types, ranges and validators, listeners,
// defaults, automatic memory sizing, the generated docs, and the persisted cluster id.
#include "app/config.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

namespace shale::app {
namespace {

Properties props(std::initializer_list<std::pair<std::string, std::string>> kv) {
  Properties p;
  for (const auto& [k, v] : kv) {
    p.values[k] = v;
    p.origin[k] = "test";
  }
  return p;
}

std::string load_error(const Properties& p) {
  auto r = Config::load(p);
  EXPECT_FALSE(r.ok());
  return r.ok() ? "" : r.error().message;
}

TEST(Properties, ParsesJavaPropertiesSyntax) {
  auto r = parse_properties(
      "# comment\n"
      "! another comment\n"
      "\n"
      "a=1\n"
      "  b : two words  \n"
      "c three\n"
      "d=\n"
      "long=first,\\\n"
      "     second\n"
      "esc\\=key=tab\\there\\u00e9\n"
      "dup=old\n"
      "dup=new\r\n",
      "server.properties");
  ASSERT_TRUE(r.ok()) << r.error().message;
  auto& v = r->values;
  EXPECT_EQ(v.at("a"), "1");
  EXPECT_EQ(v.at("b"), "two words  ");
  EXPECT_EQ(v.at("c"), "three");
  EXPECT_EQ(v.at("d"), "");
  EXPECT_EQ(v.at("long"), "first,second");
  EXPECT_EQ(v.at("esc=key"), "tab\there\xc3\xa9");
  EXPECT_EQ(v.at("dup"), "new");
  EXPECT_EQ(r->origin.at("a"), "server.properties:4");
  EXPECT_EQ(r->origin.at("long"), "server.properties:8");
  EXPECT_EQ(v.size(), 7u);
}

TEST(Properties, RejectsMalformedUnicodeEscape) {
  auto r = parse_properties("a=\\u12\n", "f");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("f:1"), std::string::npos);
}

TEST(Properties, OverridesWinOverTheFile) {
  auto r = parse_properties("num.partitions=3\n", "f");
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(add_override(*r, "num.partitions=5").ok());
  ASSERT_TRUE(add_override(*r, "cluster.id=a=b").ok());
  EXPECT_EQ(r->values.at("cluster.id"), "a=b");  // only the first '=' separates
  EXPECT_EQ(r->values.at("num.partitions"), "5");
  EXPECT_EQ(r->origin.at("num.partitions"), "--override");
  EXPECT_FALSE(add_override(*r, "no-equals-sign").ok());
  EXPECT_FALSE(add_override(*r, "=value").ok());
}

TEST(Properties, ReadsAFile) {
  auto path = std::filesystem::temp_directory_path() /
              ("shale-config-test-" + std::to_string(::getpid()) + ".properties");
  {
    std::ofstream out(path);
    out << "node.id=7\nlisteners=PLAINTEXT://127.0.0.1:19092\n";
  }
  auto p = read_properties_file(path);
  ASSERT_TRUE(p.ok());
  auto c = Config::load(*p);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->get_int("node.id"), 7);
  EXPECT_EQ(c->listeners().at(0).port, 19092);
  std::filesystem::remove(path);
  EXPECT_FALSE(read_properties_file(path).ok());
}

TEST(Config, DefaultsMatchKafkaAndAutoMQ) {
  Config c = Config::defaults();
  EXPECT_EQ(c.get_string("listeners"), "PLAINTEXT://127.0.0.1:9092");
  EXPECT_EQ(c.get_int("node.id"), 1);
  EXPECT_EQ(c.get_string("data.dir"), "./data");
  EXPECT_EQ(c.get_int("socket.request.max.bytes"), 104857600);
  EXPECT_EQ(c.get_long("connections.max.idle.ms"), 600000);
  EXPECT_EQ(c.get_int("num.partitions"), 1);
  EXPECT_EQ(c.get_int("default.replication.factor"), 1);
  EXPECT_TRUE(c.get_bool("auto.create.topics.enable"));
  EXPECT_EQ(c.get_long("log.retention.ms"), 604800000);
  EXPECT_EQ(c.get_long("log.retention.bytes"), -1);
  EXPECT_EQ(c.get_int("message.max.bytes"), 1048588);
  // The embedded default data.dir is relative; the storage URIs derived from it are absolute
  // (file:///...), which the object store requires (`make run` failed without this).
  const std::string cwd = std::filesystem::current_path().string();
  EXPECT_EQ(c.get_list("s3.data.buckets"),
            std::vector<std::string>{"0@file://" + cwd + "/data/objects"});
  EXPECT_EQ(c.get_string("s3.wal.path"), "file://" + cwd + "/data/wal");
  EXPECT_EQ(c.get_long("s3.wal.capacity"), 2147483648);
  EXPECT_EQ(c.get_long("s3.wal.upload.interval.ms"), 60000);
  EXPECT_FALSE(c.is_set("node.id"));
}

TEST(Config, DataDirFlowsIntoStorageDefaults) {
  auto c = Config::load(props({{"data.dir", "/var/lib/shale"}}));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->get_string("s3.data.buckets"), "0@file:///var/lib/shale/objects");
  EXPECT_EQ(c->get_string("s3.wal.path"), "file:///var/lib/shale/wal");
  EXPECT_TRUE(c->is_set("data.dir"));
}

TEST(Config, UnknownKeyIsAnErrorNamingItWhenStrict) {
  Properties p = props({{"num.partitions", "2"}});
  p.values["num.partitons"] = "3";
  p.origin["num.partitons"] = "server.properties:9";
  auto r = Config::load(p, LoadOptions{true});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(
      r.error().message.find("unknown configuration key 'num.partitons' (server.properties:9)"),
      std::string::npos)
      << r.error().message;
}

// Kafka's and AutoMQ's own keys load: the ones Shale does not use are listed, not fatal.
TEST(Config, UnknownKeysAreListedNotFatal) {
  Properties p = props({{"num.partitions", "2"}, {"log.segment.bytes", "1073741824"}});
  p.values["num.io.threads"] = "8";
  p.origin["num.io.threads"] = "server.properties:4";
  auto r = Config::load(p);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->ignored_keys(), (std::vector<std::string>{"log.segment.bytes (test)",
                                                         "num.io.threads (server.properties:4)"}));
  EXPECT_EQ(r->get_int("num.partitions"), 2);
}

TEST(Config, KafkaKeysKeepTheirMeaning) {
  auto r =
      Config::load(props({{"log.dirs", "/var/lib/kafka/a,/var/lib/kafka/b"},
                          {"log.retention.hours", "24"},
                          {"controller.listener.names", "CONTROLLER"},
                          {"listeners", "PLAINTEXT://:9092,CONTROLLER://:9093"},
                          {"advertised.listeners", "PLAINTEXT://h:9092,CONTROLLER://h:9093"}}));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->get_string("data.dir"), "/var/lib/kafka/a");
  EXPECT_EQ(r->get_string("s3.wal.path"), "file:///var/lib/kafka/a/wal");
  EXPECT_EQ(r->get_long("log.retention.ms"), 24 * 3600000LL);
  ASSERT_EQ(r->listeners().size(), 1u);
  EXPECT_EQ(r->listeners()[0].name, "PLAINTEXT");
  ASSERT_EQ(r->advertised_listeners().size(), 1u);
  EXPECT_TRUE(r->ignored_keys().empty());
  // Kafka's precedence: ms over minutes over hours; Shale's own key over Kafka's.
  auto m = Config::load(props({{"log.retention.minutes", "5"}, {"log.retention.hours", "1"}}));
  EXPECT_EQ(m->get_long("log.retention.ms"), 300000);
  auto ms = Config::load(props({{"log.retention.ms", "7"}, {"log.retention.hours", "1"}}));
  EXPECT_EQ(ms->get_long("log.retention.ms"), 7);
  auto dd = Config::load(props({{"data.dir", "/d"}, {"log.dirs", "/k"}}));
  EXPECT_EQ(dd->get_string("data.dir"), "/d");
  EXPECT_NE(load_error(props({{"log.retention.hours", "many"}})).find("log.retention.hours"),
            std::string::npos);
}

TEST(Config, MalformedValuesNameKeyAndReason) {
  EXPECT_NE(load_error(props({{"num.partitions", "abc"}})).find("'num.partitions'"),
            std::string::npos);
  EXPECT_NE(load_error(props({{"num.partitions", "abc"}})).find("not an integer"),
            std::string::npos);
  EXPECT_NE(load_error(props({{"num.partitions", "0"}})).find("below the minimum 1"),
            std::string::npos);
  EXPECT_NE(load_error(props({{"node.id", "3000000000"}})).find("above the maximum"),
            std::string::npos);
  EXPECT_NE(load_error(props({{"auto.create.topics.enable", "yes"}})).find("not a boolean"),
            std::string::npos);
  EXPECT_NE(load_error(props({{"socket.request.max.bytes", "12x"}})).find("not an integer"),
            std::string::npos);
  EXPECT_NE(load_error(props({{"data.dir", "  "}})).find("must not be empty"), std::string::npos);
  EXPECT_NE(load_error(props({{"s3.data.buckets", "file:///x"}})).find("<id>@"), std::string::npos);
  EXPECT_NE(load_error(props({{"s3.data.buckets", "0@ftp://x"}})).find("unknown scheme"),
            std::string::npos);
  EXPECT_NE(load_error(props({{"s3.wal.path", "0@ftp://x"}})).find("'s3.wal.path'"),
            std::string::npos);
  EXPECT_NE(load_error(props({{"s3.wal.path", "mem://"}})).find("cannot hold a WAL"),
            std::string::npos);
  EXPECT_NE(load_error(props({{"s3.wal.path", "0@file:///w?capacity=big"}})).find("capacity"),
            std::string::npos);
  EXPECT_NE(load_error(props({{"cluster.id", "has space"}})).find("'cluster.id'"),
            std::string::npos);
}

TEST(Config, ReportsEveryProblemAtOnce) {
  auto r = Config::load(props({{"num.partitions", "x"}, {"node.id", "-1"}, {"bogus", "1"}}),
                        LoadOptions{true});
  ASSERT_FALSE(r.ok());
  std::string e = r.error().message;
  EXPECT_NE(e.find("num.partitions"), std::string::npos);
  EXPECT_NE(e.find("node.id"), std::string::npos);
  EXPECT_NE(e.find("bogus"), std::string::npos);
}

TEST(Config, AcceptsWhitespaceAndCaseInValues) {
  auto c =
      Config::load(props({{"num.partitions", " 12 "}, {"auto.create.topics.enable", "FALSE"}}));
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->get_int("num.partitions"), 12);
  EXPECT_FALSE(c->get_bool("auto.create.topics.enable"));
}

TEST(Config, CacheSizesMustBeSetTogether) {
  EXPECT_NE(load_error(props({{"s3.wal.cache.size", "1000000"}})).find("set together"),
            std::string::npos);
  auto c = Config::load(props({{"s3.wal.cache.size", "300000000"}, {"s3.block.cache.size", "1"}}));
  ASSERT_TRUE(c.ok());
  c->resolve_memory_defaults(8 * (1ull << 30));
  EXPECT_EQ(c->get_long("s3.wal.cache.size"), 300000000);
  EXPECT_EQ(c->get_long("s3.block.cache.size"), 1);
  EXPECT_EQ(c->get_long("s3.wal.upload.threshold"), 100000000);
}

TEST(Config, AutomaticMemorySizingFitsTheMachine) {
  const uint64_t GiB = 1ull << 30;
  const int64_t MiB = 1 << 20;
  // 24 GiB of RAM: RAM/32 and RAM/64.
  Config c = Config::defaults();
  c.resolve_memory_defaults(24 * GiB);
  EXPECT_EQ(c.get_long("s3.wal.cache.size"), 768 * MiB);
  EXPECT_EQ(c.get_long("s3.block.cache.size"), 384 * MiB);
  EXPECT_EQ(c.get_long("s3.wal.upload.threshold"), 256 * MiB);
  // Small machine: the floors.
  Config small = Config::defaults();
  small.resolve_memory_defaults(2 * GiB);
  EXPECT_EQ(small.get_long("s3.wal.cache.size"), 256 * MiB);
  EXPECT_EQ(small.get_long("s3.block.cache.size"), 128 * MiB);
  // Large machine: the ceilings; the upload threshold's own cap.
  Config big = Config::defaults();
  big.resolve_memory_defaults(256 * GiB);
  EXPECT_EQ(big.get_long("s3.wal.cache.size"), int64_t(2 * GiB));
  EXPECT_EQ(big.get_long("s3.block.cache.size"), int64_t(GiB));
  EXPECT_EQ(big.get_long("s3.wal.upload.threshold"), 500 * MiB);
}

TEST(Config, WrongAccessorIsAProgrammerError) {
  Config c = Config::defaults();
  EXPECT_THROW(c.get_bool("num.partitions"), std::logic_error);
  EXPECT_THROW(c.get_int("no.such.key"), std::logic_error);
  EXPECT_EQ(c.get_long("num.partitions"), 1);  // an int widens to long
}

TEST(Listeners, ParsesKafkaSyntax) {
  auto r = parse_listeners("PLAINTEXT://127.0.0.1:9092, INTERNAL://:9093,V6://[::1]:9094");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[0].name, "PLAINTEXT");
  EXPECT_EQ((*r)[0].host, "127.0.0.1");
  EXPECT_EQ((*r)[0].port, 9092);
  EXPECT_EQ((*r)[1].host, "");
  EXPECT_EQ((*r)[1].port, 9093);
  EXPECT_EQ((*r)[2].host, "::1");
  EXPECT_EQ((*r)[2].to_string(), "V6://[::1]:9094");
}

TEST(Listeners, SecurityProtocolsComeFromTheMap) {
  auto c = Config::load(props(
      {{"listeners", "SSL://:1,EXTERNAL://:2,SASL_SSL://:3,OTHER://:4"},
       {"listener.security.protocol.map", "SSL:SSL,EXTERNAL:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"},
       {"listener.name.external.plain.sasl.jaas.config", "x"},
       {"listener.name.ssl.ssl.client.auth", "required"}}));
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->security_protocol("SSL"), "SSL");
  EXPECT_EQ(c->security_protocol("EXTERNAL"), "SASL_PLAINTEXT");
  EXPECT_EQ(c->security_protocol("OTHER"), "PLAINTEXT");
  EXPECT_EQ(c->listener_value("EXTERNAL", "plain.sasl.jaas.config"), "x");
  EXPECT_EQ(c->listener_value("SSL", "ssl.client.auth"), "required");
  EXPECT_EQ(c->listener_value("SASL_SSL", "ssl.client.auth"), "none");
  EXPECT_TRUE(c->ignored_keys().empty());
  EXPECT_NE(load_error(props({{"listener.security.protocol.map", "A:TLS"}})).find("protocol"),
            std::string::npos);
}

TEST(Listeners, RejectsMalformedEntries) {
  for (const char* bad : {"127.0.0.1:9092", "PLAINTEXT://127.0.0.1", "PLAINTEXT://127.0.0.1:99999",
                          "PLAINTEXT://127.0.0.1:port", "plaintext://h:1", "PLAINTEXT://::1:9092",
                          "PLAINTEXT://[::1]9092", "PLAINTEXT://a:1,PLAINTEXT://b:2", "://h:1"}) {
    EXPECT_FALSE(parse_listeners(bad).ok()) << bad;
  }
  std::string e = load_error(props({{"listeners", "PLAINTEXT://127.0.0.1:http"}}));
  EXPECT_NE(e.find("'listeners'"), std::string::npos) << e;
  EXPECT_NE(load_error(props({{"listeners", ""}})).find("at least one"), std::string::npos);
}

TEST(Listeners, AdvertisedDefaultsToListenersWithARealHost) {
  auto c = Config::load(props({{"listeners", "PLAINTEXT://0.0.0.0:9092,B://127.0.0.1:9093"}}));
  ASSERT_TRUE(c.ok());
  auto adv = c->advertised_listeners();
  ASSERT_EQ(adv.size(), 2u);
  EXPECT_NE(adv[0].host, "0.0.0.0");
  EXPECT_FALSE(adv[0].host.empty());
  EXPECT_EQ(adv[1].host, "127.0.0.1");

  auto d = Config::load(props({{"listeners", "PLAINTEXT://0.0.0.0:9092"},
                               {"advertised.listeners", "PLAINTEXT://broker1.example:9092"}}));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->advertised_listeners().at(0).host, "broker1.example");

  EXPECT_NE(load_error(props({{"advertised.listeners", "OTHER://h:1"}})).find("not in 'listeners'"),
            std::string::npos);
  EXPECT_NE(
      load_error(props({{"advertised.listeners", "PLAINTEXT://0.0.0.0:1"}})).find("non-routable"),
      std::string::npos);
}

TEST(ConfigDocs, DocumentationFileIsCurrent) {
  std::ifstream in(std::string(SHALE_SOURCE_DIR) + "/docs/configuration.md");
  ASSERT_TRUE(in) << "docs/configuration.md missing";
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), config_docs_markdown())
      << "regenerate: build/release/bin/shale serve --print-config-docs > docs/configuration.md";
}

TEST(ConfigDocs, HelpAndDocsMentionEveryKey) {
  std::string help = config_help_text();
  std::string docs = config_docs_markdown();
  for (const ConfigKey& k : config_keys()) {
    EXPECT_NE(help.find(k.name), std::string::npos) << k.name;
    EXPECT_NE(docs.find(std::string("`") + k.name + "`"), std::string::npos) << k.name;
    // Every default must pass its own validation.
    EXPECT_NE(find_config_key(k.name), nullptr);
  }
  EXPECT_TRUE(Config::load(Properties{}).ok());
}

class ClusterIdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("shale-cluster-id-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(ClusterIdTest, GeneratesAndKeepsTheId) {
  auto first = ensure_cluster_id(dir_, "", 1);
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_EQ(first->size(), 22u);
  auto again = ensure_cluster_id(dir_, "", 1);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *first);
  auto props = read_properties_file(dir_ / "meta.properties");
  ASSERT_TRUE(props.ok());
  EXPECT_EQ(props->values.at("cluster.id"), *first);
  EXPECT_EQ(props->values.at("node.id"), "1");
}

TEST_F(ClusterIdTest, ConfiguredIdIsUsedAndThenEnforced) {
  auto r = ensure_cluster_id(dir_, "my-cluster", 3);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "my-cluster");
  EXPECT_TRUE(ensure_cluster_id(dir_, "my-cluster", 3).ok());
  auto clash = ensure_cluster_id(dir_, "other", 3);
  ASSERT_FALSE(clash.ok());
  EXPECT_NE(clash.error().message.find("cluster.id"), std::string::npos);
  auto node_clash = ensure_cluster_id(dir_, "", 4);
  ASSERT_FALSE(node_clash.ok());
  EXPECT_NE(node_clash.error().message.find("node.id"), std::string::npos);
}

TEST(ClusterId, GeneratedIdsAreUrlSafeAndDistinct) {
  std::string a = generate_cluster_id(), b = generate_cluster_id();
  EXPECT_NE(a, b);
  for (char c : a) EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_');
}

}  // namespace
}  // namespace shale::app
