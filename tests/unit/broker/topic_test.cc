// CreateTopics / DeleteTopics / CreatePartitions / Metadata and topic persistence.
#include "broker/topic_manager.h"
#include "broker_test_util.h"

namespace shale::broker::testing {
namespace {

using protocol::ErrorCode;

int16_t code(ErrorCode c) { return static_cast<int16_t>(c); }

TEST(TopicName, FollowsKafkaRules) {
  EXPECT_TRUE(validate_topic_name("orders.v1_A-b").ok());
  EXPECT_FALSE(validate_topic_name("").ok());
  EXPECT_FALSE(validate_topic_name(".").ok());
  EXPECT_FALSE(validate_topic_name("..").ok());
  EXPECT_FALSE(validate_topic_name("a b").ok());
  EXPECT_FALSE(validate_topic_name("a/b").ok());
  EXPECT_TRUE(validate_topic_name(std::string(249, 'x')).ok());
  EXPECT_FALSE(validate_topic_name(std::string(250, 'x')).ok());
}

TEST(TopicId, IsRandomVersion4) {
  auto a = random_topic_id();
  auto b = random_topic_id();
  EXPECT_NE(a, b);
  EXPECT_EQ(a.bytes[6] >> 4, 4);
  EXPECT_EQ(a.bytes[8] & 0xc0, 0x80);
  EXPECT_NE(a.to_base64()[0], '-');
}

TEST_P(BothEngines, CreateTopicReportsIdPartitionsAndConfigs) {
  auto r = create_topic("orders", 3, {{"retention.ms", "1000"}});
  ASSERT_EQ(r.topics.size(), 1u);
  const auto& t = r.topics[0];
  EXPECT_EQ(t.error_code, 0);
  EXPECT_FALSE(t.topic_id.is_zero());
  EXPECT_EQ(t.num_partitions, 3);
  EXPECT_EQ(t.replication_factor, 1);
  ASSERT_TRUE(t.configs.has_value());
  bool found = false;
  for (const auto& c : *t.configs) {
    if (c.name == "retention.ms") {
      EXPECT_EQ(c.value, "1000");
      EXPECT_EQ(c.config_source, 1);  // TOPIC_CONFIG
      found = true;
    }
    if (c.name == "cleanup.policy") {
      EXPECT_EQ(c.value, "delete");
    }
  }
  EXPECT_TRUE(found);
  EXPECT_TRUE(broker_->partition_exists("orders", 2));
  EXPECT_FALSE(broker_->partition_exists("orders", 3));
}

TEST_P(BothEngines, CreateTopicErrorsAreKafkas) {
  EXPECT_EQ(create_topic("t", 1).topics[0].error_code, 0);
  EXPECT_EQ(create_topic("t", 1).topics[0].error_code, code(ErrorCode::kTopicAlreadyExists));
  EXPECT_EQ(create_topic("bad name", 1).topics[0].error_code,
            code(ErrorCode::kInvalidTopicException));
  EXPECT_EQ(create_topic("zero", 0).topics[0].error_code, code(ErrorCode::kInvalidPartitions));
  auto compact = create_topic("c", 1, {{"cleanup.policy", "compact"}});
  EXPECT_EQ(compact.topics[0].error_code, code(ErrorCode::kInvalidConfig));
  EXPECT_EQ(compact.topics[0].error_message, "compacted topics are not supported yet");
  EXPECT_EQ(create_topic("u", 1, {{"no.such.config", "1"}}).topics[0].error_code,
            code(ErrorCode::kInvalidConfig));
  EXPECT_EQ(create_topic("v", 1, {{"retention.ms", "abc"}}).topics[0].error_code,
            code(ErrorCode::kInvalidConfig));
  EXPECT_EQ(create_topic("a.b", 1).topics[0].error_code, 0);
  EXPECT_EQ(create_topic("a_b", 1).topics[0].error_code, code(ErrorCode::kInvalidTopicException));
  EXPECT_FALSE(broker_->topics().find("c"));
  EXPECT_FALSE(broker_->topics().find("zero"));
}

TEST_P(BothEngines, CreateTopicsReplicationFactorAndValidateOnly) {
  protocol::CreateTopicsRequest req;
  req.validate_only = true;
  req.topics.push_back({"rf0", 1, 0, {}, {}});
  req.topics.push_back({"rf3", 1, 3, {}, {}});
  req.topics.push_back({"ok", 2, 1, {}, {}});
  req.topics.push_back({"dup", 1, 1, {}, {}});
  req.topics.push_back({"dup", 1, 1, {}, {}});
  auto r = run(handle_create_topics(*broker_, 7, std::move(req)));
  ASSERT_EQ(r.topics.size(), 5u);
  EXPECT_EQ(r.topics[0].error_code, code(ErrorCode::kInvalidReplicationFactor));
  EXPECT_EQ(r.topics[1].error_code, code(ErrorCode::kInvalidReplicationFactor));
  EXPECT_EQ(r.topics[2].error_code, 0);
  EXPECT_EQ(r.topics[2].num_partitions, 2);
  EXPECT_EQ(r.topics[3].error_code, code(ErrorCode::kInvalidRequest));
  EXPECT_FALSE(broker_->topics().find("ok"));  // validate_only created nothing
}

TEST_P(BothEngines, TopicsSurviveRestartWithTheirIdsAndConfigs) {
  auto r = create_topic("keep", 2, {{"max.message.bytes", "5000"}});
  auto id = r.topics[0].topic_id;
  restart();
  auto t = broker_->topics().find("keep");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->id, id);
  EXPECT_EQ(t->partitions.size(), 2u);
  EXPECT_EQ(t->settings.max_message_bytes, 5000);
  EXPECT_EQ(broker_->topics().find(id), t);
}

TEST_P(BothEngines, DeleteTopicsByNameAndId) {
  create_topic("d1", 1);
  auto id = create_topic("d2", 1).topics[0].topic_id;
  protocol::DeleteTopicsRequest req;
  req.topics.push_back({std::string("d1"), {}});
  req.topics.push_back({std::nullopt, id});
  req.topics.push_back({std::string("missing"), {}});
  auto r = run(handle_delete_topics(*broker_, 6, std::move(req)));
  ASSERT_EQ(r.responses.size(), 3u);
  EXPECT_EQ(r.responses[0].error_code, 0);
  EXPECT_EQ(r.responses[1].error_code, 0);
  EXPECT_EQ(r.responses[1].name, "d2");
  EXPECT_EQ(r.responses[2].error_code, code(ErrorCode::kUnknownTopicOrPartition));
  EXPECT_FALSE(broker_->topics().find("d1"));
  EXPECT_FALSE(broker_->topics().find("d2"));
  auto streams = engine_->list_streams();
  ASSERT_TRUE(streams.ok());
  EXPECT_TRUE(streams->empty());  // the partitions' streams were deleted
  restart();
  EXPECT_FALSE(broker_->topics().find("d1"));
  // The name can be used again, with a new id.
  EXPECT_EQ(create_topic("d2", 1).topics[0].error_code, 0);
  EXPECT_NE(broker_->topics().find("d2")->id, id);
}

TEST_P(BothEngines, CreatePartitionsGrowsOnly) {
  create_topic("g", 1);
  protocol::CreatePartitionsRequest req;
  req.topics.push_back({"g", 3, std::nullopt});
  req.topics.push_back({"nope", 3, std::nullopt});
  auto r = run(handle_create_partitions(*broker_, 3, std::move(req)));
  EXPECT_EQ(r.results[0].error_code, 0);
  EXPECT_EQ(r.results[1].error_code, code(ErrorCode::kUnknownTopicOrPartition));
  EXPECT_EQ(broker_->topics().find("g")->partitions.size(), 3u);
  protocol::CreatePartitionsRequest shrink;
  shrink.topics.push_back({"g", 2, std::nullopt});
  auto s = run(handle_create_partitions(*broker_, 3, std::move(shrink)));
  EXPECT_EQ(s.results[0].error_code, code(ErrorCode::kInvalidPartitions));
  restart();
  EXPECT_EQ(broker_->topics().find("g")->partitions.size(), 3u);
}

TEST_P(BothEngines, DescribeConfigsReportsSourcesAndSynonyms) {
  create_topic("dc", 1, {{"retention.ms", "1234"}});
  protocol::DescribeConfigsRequest req;
  req.include_synonyms = true;
  req.resources.push_back({2, "dc", std::vector<std::string>{"retention.ms", "segment.bytes"}});
  req.resources.push_back({2, "nope", std::nullopt});
  req.resources.push_back({4, "7", std::nullopt});
  auto r = run(handle_describe_configs(*broker_, 4, std::move(req)));
  ASSERT_EQ(r.results.size(), 3u);
  ASSERT_EQ(r.results[0].configs.size(), 2u);
  const auto& ret = r.results[0].configs[0];
  EXPECT_EQ(ret.name, "retention.ms");
  EXPECT_EQ(ret.value, "1234");
  EXPECT_EQ(ret.config_source, 1);  // TOPIC_CONFIG
  ASSERT_EQ(ret.synonyms.size(), 2u);
  EXPECT_EQ(ret.synonyms[1].name, "log.retention.ms");
  EXPECT_EQ(ret.synonyms[1].value, "604800000");
  EXPECT_EQ(ret.synonyms[1].source, 5);  // DEFAULT_CONFIG
  EXPECT_EQ(r.results[0].configs[1].config_source, 5);
  EXPECT_EQ(r.results[1].error_code, code(ErrorCode::kUnknownTopicOrPartition));
  EXPECT_EQ(r.results[2].error_code, code(ErrorCode::kInvalidRequest));  // not this node
}

TEST_P(BothEngines, MetadataListsTopicsAndAutoCreates) {
  create_topic("m", 2);
  protocol::MetadataRequest all;
  all.topics = std::nullopt;
  auto r = run(handle_metadata(*broker_, 12, std::move(all)));
  ASSERT_EQ(r.brokers.size(), 1u);
  EXPECT_EQ(r.brokers[0].node_id, 1);
  EXPECT_EQ(r.cluster_id, cfg_.cluster_id);
  ASSERT_EQ(r.topics.size(), 1u);
  EXPECT_EQ(r.topics[0].partitions.size(), 2u);
  EXPECT_EQ(r.topics[0].partitions[1].leader_id, 1);
  EXPECT_FALSE(r.topics[0].topic_id.is_zero());

  protocol::MetadataRequest some;
  some.topics = std::vector<protocol::MetadataRequest::MetadataRequestTopic>{};
  some.topics->push_back({{}, std::string("auto1")});
  some.topics->push_back({{}, std::string("bad/name")});
  auto r2 = run(handle_metadata(*broker_, 12, std::move(some)));
  ASSERT_EQ(r2.topics.size(), 2u);
  EXPECT_EQ(r2.topics[0].error_code, 0);
  EXPECT_EQ(r2.topics[0].partitions.size(), 1u);  // num.partitions
  EXPECT_EQ(r2.topics[1].error_code, code(ErrorCode::kInvalidTopicException));
  EXPECT_TRUE(broker_->topics().find("auto1"));

  protocol::MetadataRequest no_create;
  no_create.allow_auto_topic_creation = false;
  no_create.topics = std::vector<protocol::MetadataRequest::MetadataRequestTopic>{};
  no_create.topics->push_back({{}, std::string("auto2")});
  auto r3 = run(handle_metadata(*broker_, 12, std::move(no_create)));
  EXPECT_EQ(r3.topics[0].error_code, code(ErrorCode::kUnknownTopicOrPartition));
  EXPECT_FALSE(broker_->topics().find("auto2"));
}

INSTANTIATE_TEST_SUITE_P(Engines, BothEngines, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "real" : "fake"; });

}  // namespace
}  // namespace shale::broker::testing

namespace shale::broker::testing {
namespace {

protocol::IncrementalAlterConfigsRequest incremental(
    const std::string& topic, std::vector<std::tuple<std::string, int8_t, std::string>> ops,
    int8_t resource_type = 2) {
  protocol::IncrementalAlterConfigsRequest req;
  auto& res = req.resources.emplace_back();
  res.resource_type = resource_type;
  res.resource_name = topic;
  for (auto& [name, op, value] : ops) {
    auto& c = res.configs.emplace_back();
    c.name = name;
    c.config_operation = op;
    c.value = value;
  }
  return req;
}

TEST_P(BothEngines, IncrementalAlterConfigsSetsDeletesAndPersists) {
  create_topic("alt", 1);
  auto r = run(handle_incremental_alter_configs(
      *broker_, 1,
      incremental("alt", {{"retention.ms", 0, "86400000"}, {"max.message.bytes", 0, "2000000"}})));
  ASSERT_EQ(r.responses.size(), 1u);
  EXPECT_EQ(r.responses[0].error_code, 0);
  EXPECT_EQ(broker_->topics().find("alt")->configs.at("retention.ms"), "86400000");
  r = run(
      handle_incremental_alter_configs(*broker_, 1, incremental("alt", {{"retention.ms", 1, ""}})));
  EXPECT_EQ(r.responses[0].error_code, 0);
  restart();
  auto t = broker_->topics().find("alt");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->configs.count("retention.ms"), 0u);
  EXPECT_EQ(t->configs.at("max.message.bytes"), "2000000");
}

TEST_P(BothEngines, IncrementalAlterConfigsErrorsAreKafkas) {
  create_topic("alt", 1);
  auto code = [&](protocol::IncrementalAlterConfigsRequest req) {
    auto r = run(handle_incremental_alter_configs(*broker_, 1, std::move(req)));
    return r.responses.at(0).error_code;
  };
  EXPECT_EQ(code(incremental("nope", {{"retention.ms", 0, "1"}})),
            static_cast<int16_t>(protocol::ErrorCode::kUnknownTopicOrPartition));
  EXPECT_EQ(code(incremental("alt", {{"no.such.key", 0, "1"}})),
            static_cast<int16_t>(protocol::ErrorCode::kInvalidConfig));
  EXPECT_EQ(code(incremental("alt", {{"retention.ms", 0, "soon"}})),
            static_cast<int16_t>(protocol::ErrorCode::kInvalidConfig));
  EXPECT_EQ(code(incremental("alt", {{"retention.ms", 2, "5"}})),  // APPEND on a non-list
            static_cast<int16_t>(protocol::ErrorCode::kInvalidConfig));
  EXPECT_EQ(code(incremental("7", {{"log.retention.ms", 0, "1"}}, 4)),  // another broker
            static_cast<int16_t>(protocol::ErrorCode::kInvalidRequest));
  EXPECT_EQ(code(incremental("1", {{"retention.ms", 0, "1"}}, 4)),  // a topic key on a broker
            static_cast<int16_t>(protocol::ErrorCode::kInvalidConfig));
  EXPECT_EQ(broker_->topics().find("alt")->configs.count("retention.ms"), 0u);
}

// Dynamic broker configs: the cluster-wide default layer (resource "") and this broker's layer
// (resource "1") override the static topic defaults, are reported with Kafka's sources and
// synonyms, apply to existing topics at once, and persist.
TEST_P(BothEngines, DynamicBrokerConfigsLayerOverTheStaticDefaults) {
  create_topic("dyn", 1);
  create_topic("own", 1, {{"retention.ms", "5"}});
  auto code = [&](protocol::IncrementalAlterConfigsRequest req) {
    auto r = run(handle_incremental_alter_configs(*broker_, 1, std::move(req)));
    return r.responses.at(0).error_code;
  };
  auto describe_topic = [&](const std::string& topic) {
    protocol::DescribeConfigsRequest req;
    req.include_synonyms = true;
    req.resources.push_back({2, topic, std::vector<std::string>{"retention.ms"}});
    return run(handle_describe_configs(*broker_, 4, std::move(req))).results.at(0).configs.at(0);
  };
  EXPECT_EQ(code(incremental("", {{"log.retention.ms", 0, "1234"}}, 4)), 0);
  EXPECT_EQ(broker_->topics().find("dyn")->settings.retention_ms, 1234);
  EXPECT_EQ(broker_->topics().find("own")->settings.retention_ms, 5);  // topic override wins
  auto c = describe_topic("dyn");
  EXPECT_EQ(c.value, "1234");
  EXPECT_EQ(c.config_source, kSourceDynamicDefaultBroker);
  ASSERT_EQ(c.synonyms.size(), 2u);
  EXPECT_EQ(c.synonyms[0].source, kSourceDynamicDefaultBroker);
  EXPECT_EQ(c.synonyms[1].value, "604800000");

  EXPECT_EQ(code(incremental("1", {{"log.retention.ms", 0, "99"}}, 4)), 0);
  EXPECT_EQ(code(incremental("1", {{"log.retention.ms", 0, "-5"}}, 4)),
            static_cast<int16_t>(protocol::ErrorCode::kInvalidConfig));
  EXPECT_EQ(code(incremental("", {{"num.partitions", 0, "3"}}, 4)),
            static_cast<int16_t>(protocol::ErrorCode::kInvalidConfig));
  c = describe_topic("dyn");
  EXPECT_EQ(c.value, "99");
  EXPECT_EQ(c.config_source, kSourceDynamicBroker);
  ASSERT_EQ(c.synonyms.size(), 3u);

  // The broker resources: "" lists only the cluster-wide dynamic values; "1" everything.
  protocol::DescribeConfigsRequest req;
  req.include_synonyms = true;
  req.resources.push_back({4, "", std::nullopt});
  req.resources.push_back({4, "1", std::vector<std::string>{"log.retention.ms", "node.id"}});
  auto r = run(handle_describe_configs(*broker_, 4, std::move(req)));
  ASSERT_EQ(r.results.at(0).configs.size(), 1u);
  EXPECT_EQ(r.results[0].configs[0].name, "log.retention.ms");
  EXPECT_EQ(r.results[0].configs[0].value, "1234");
  EXPECT_EQ(r.results[0].configs[0].config_source, kSourceDynamicDefaultBroker);
  ASSERT_EQ(r.results.at(1).configs.size(), 2u);
  EXPECT_EQ(r.results[1].configs[0].name, "node.id");  // table order
  EXPECT_TRUE(r.results[1].configs[0].read_only);
  EXPECT_EQ(r.results[1].configs[1].value, "99");
  EXPECT_EQ(r.results[1].configs[1].config_source, kSourceDynamicBroker);
  EXPECT_FALSE(r.results[1].configs[1].read_only);

  restart();
  EXPECT_EQ(broker_->topics().find("dyn")->settings.retention_ms, 99);
  EXPECT_EQ(code(incremental("1", {{"log.retention.ms", 1, ""}}, 4)), 0);
  EXPECT_EQ(broker_->topics().find("dyn")->settings.retention_ms, 1234);
  // AlterConfigs replaces the whole layer: an empty set clears it.
  protocol::AlterConfigsRequest clear;
  auto& res = clear.resources.emplace_back();
  res.resource_type = 4;
  res.resource_name = "";
  EXPECT_EQ(run(handle_alter_configs(*broker_, 2, std::move(clear))).responses.at(0).error_code, 0);
  EXPECT_EQ(broker_->topics().find("dyn")->settings.retention_ms, 604800000);
  EXPECT_EQ(describe_topic("dyn").config_source, kSourceDefault);
}

TEST_P(BothEngines, AlterConfigsReplacesAllOverridesAndHonoursValidateOnly) {
  create_topic("alt", 1, {{"retention.ms", "1000"}});
  protocol::AlterConfigsRequest req;
  auto& res = req.resources.emplace_back();
  res.resource_type = 2;
  res.resource_name = "alt";
  auto& c = res.configs.emplace_back();
  c.name = "max.message.bytes";
  c.value = "3000";
  req.validate_only = true;
  auto r = run(handle_alter_configs(*broker_, 2, req));
  EXPECT_EQ(r.responses.at(0).error_code, 0);
  EXPECT_EQ(broker_->topics().find("alt")->configs.count("max.message.bytes"), 0u);
  req.validate_only = false;
  r = run(handle_alter_configs(*broker_, 2, req));
  EXPECT_EQ(r.responses.at(0).error_code, 0);
  auto t = broker_->topics().find("alt");
  EXPECT_EQ(t->configs.count("retention.ms"), 0u);
  EXPECT_EQ(t->configs.at("max.message.bytes"), "3000");
}

}  // namespace
}  // namespace shale::broker::testing
