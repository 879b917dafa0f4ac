#include "perf/client_config.h"

#include <gtest/gtest.h>

#include "perf/kafka_clients.h"

namespace shale::perf {
namespace {

std::string value_of(const ClientSettings& s, const std::string& key) {
  std::string v;
  bool found = false;
  for (const auto& [k, val] : s.rdkafka) {
    if (k == key) {
      v = val;  // the last one wins, as when applied in order
      found = true;
    }
  }
  return found ? v : "<unset>";
}

TEST(PerfClientConfig, JavaDefaultsForProducers) {
  ClientSettings s;
  ASSERT_EQ(translate_client_config(ClientRole::kProducer, "b:1", {}, {}, &s), "");
  EXPECT_EQ(value_of(s, "acks"), "all");
  EXPECT_EQ(value_of(s, "enable.idempotence"), "true");
  EXPECT_EQ(value_of(s, "linger.ms"), "0");
  EXPECT_EQ(value_of(s, "batch.size"), "16384");
  EXPECT_EQ(value_of(s, "compression.type"), "none");
  EXPECT_EQ(value_of(s, "message.timeout.ms"), "120000");
  EXPECT_EQ(value_of(s, "queue.buffering.max.kbytes"), "32768");
  EXPECT_EQ(value_of(s, "bootstrap.servers"), "b:1");
  EXPECT_EQ(s.batch_size, 16384);
  EXPECT_EQ(s.max_block_ms, 60000);
}

TEST(PerfClientConfig, JavaNamesAreTranslated) {
  ClientSettings s;
  ConfigMap common{{"sasl.mechanism", "PLAIN"},
                   {"security.protocol", "SASL_PLAINTEXT"},
                   {"sasl.jaas.config",
                    "org.apache.kafka.common.security.plain.PlainLoginModule required "
                    "username=\"u\" password=\"p w\";"}};
  ConfigMap producer{{"batch.size", "0"},
                     {"buffer.memory", "67108864"},
                     {"max.request.size", "2097152"},
                     {"delivery.timeout.ms", "5000"},
                     {"max.block.ms", "100"},
                     {"key.serializer", "x"},
                     {"send.buffer.bytes", "1"}};
  ASSERT_EQ(translate_client_config(ClientRole::kProducer, "b", common, producer, &s), "");
  EXPECT_EQ(value_of(s, "sasl.mechanisms"), "PLAIN");
  EXPECT_EQ(value_of(s, "sasl.username"), "u");
  EXPECT_EQ(value_of(s, "sasl.password"), "p w");
  EXPECT_EQ(value_of(s, "security.protocol"), "SASL_PLAINTEXT");
  EXPECT_EQ(value_of(s, "batch.num.messages"), "1");  // batch.size=0: no batching
  EXPECT_EQ(s.batch_size, 0);
  EXPECT_EQ(value_of(s, "queue.buffering.max.kbytes"), "65536");
  EXPECT_EQ(value_of(s, "message.max.bytes"), "2097152");
  EXPECT_EQ(value_of(s, "message.timeout.ms"), "5000");
  EXPECT_EQ(value_of(s, "socket.send.buffer.bytes"), "1");
  EXPECT_EQ(value_of(s, "key.serializer"), "<unset>");
  EXPECT_EQ(s.max_block_ms, 100);
}

TEST(PerfClientConfig, ConsumerDefaultsAndForcedKeys) {
  ClientSettings s;
  ConfigMap consumer{
      {"fetch.max.wait.ms", "1000"},
      {"auto.offset.reset", "earliest"},
      {"max.poll.records", "100"},
      {"partition.assignment.strategy", "org.apache.kafka.clients.consumer.RoundRobinAssignor"}};
  ASSERT_EQ(translate_client_config(ClientRole::kConsumer, "b", {}, consumer, &s), "");
  EXPECT_EQ(value_of(s, "fetch.wait.max.ms"), "1000");
  EXPECT_EQ(value_of(s, "auto.offset.reset"), "latest");  // forced, always wins
  EXPECT_EQ(value_of(s, "enable.auto.commit"), "true");
  EXPECT_EQ(value_of(s, "partition.assignment.strategy"), "roundrobin");
  EXPECT_EQ(s.max_poll_records, 100);
}

TEST(PerfClientConfig, AdminGetsOnlyCommonConfigs) {
  ClientSettings s;
  ASSERT_EQ(
      translate_client_config(ClientRole::kAdmin, "b", {{"client.id", "c"}}, {{"acks", "1"}}, &s),
      "");
  EXPECT_EQ(value_of(s, "client.id"), "c");
  EXPECT_EQ(value_of(s, "acks"), "<unset>");
}

TEST(PerfClientConfig, UntranslatableValuesAreClearErrors) {
  ClientSettings s;
  EXPECT_NE(
      translate_client_config(ClientRole::kConsumer, "b", {}, {{"group.protocol", "consumer"}}, &s),
      "");
  EXPECT_NE(translate_client_config(ClientRole::kProducer, "b",
                                    {{"ssl.truststore.location", "x.jks"}}, {}, &s),
            "");
  EXPECT_NE(
      translate_client_config(ClientRole::kProducer, "b", {}, {{"partitioner.class", "x"}}, &s),
      "");
  EXPECT_NE(translate_client_config(ClientRole::kConsumer, "b", {},
                                    {{"partition.assignment.strategy", "com.acme.Mine"}}, &s),
            "");
}

TEST(PerfClientConfig, UnknownPropertyNamedByMakeConf) {
  ClientSettings s;
  ASSERT_EQ(
      translate_client_config(ClientRole::kProducer, "b", {}, {{"no.such.property", "1"}}, &s), "");
  try {
    make_conf(s, "producer");
    FAIL() << "expected an error";
  } catch (const PerfError& e) {
    EXPECT_NE(std::string(e.what()).find("Unknown producer property 'no.such.property'"),
              std::string::npos)
        << e.what();
  }
  ClientSettings bad;
  ASSERT_EQ(translate_client_config(ClientRole::kProducer, "b", {}, {{"acks", "sometimes"}}, &bad),
            "");
  EXPECT_THROW(make_conf(bad, "producer"), PerfError);
  ClientSettings ok;
  ASSERT_EQ(translate_client_config(ClientRole::kConsumer, "b", {}, {}, &ok), "");
  EXPECT_NO_THROW(make_conf(ok, "consumer"));
}

}  // namespace
}  // namespace shale::perf
