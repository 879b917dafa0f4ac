// DescribeTopicPartitions (KIP-966): name order, paging by response_partition_limit with a
// cursor, unknown topics, no auto-creation.
#include "broker_test_util.h"

namespace shale::broker::testing {
namespace {

using protocol::DescribeTopicPartitionsRequest;
using protocol::DescribeTopicPartitionsResponse;
using protocol::ErrorCode;

// "topic:partition" for every partition in a response, in order.
std::vector<std::string> listed(const DescribeTopicPartitionsResponse& r) {
  std::vector<std::string> out;
  for (const auto& t : r.topics) {
    for (const auto& p : t.partitions) {
      out.push_back(*t.name + ":" + std::to_string(p.partition_index));
    }
  }
  return out;
}

TEST_F(BrokerTest, DescribeTopicPartitionsPagesWithACursor) {
  create_topic("b", 2);
  create_topic("a", 3);
  create_topic("c", 1);
  DescribeTopicPartitionsRequest req;  // no names: every topic
  req.response_partition_limit = 4;
  auto first = run(handle_describe_topic_partitions(*broker_, 0, req));
  EXPECT_EQ(listed(first), (std::vector<std::string>{"a:0", "a:1", "a:2", "b:0"}));
  ASSERT_TRUE(first.next_cursor.has_value());
  EXPECT_EQ(first.next_cursor->topic_name, "b");
  EXPECT_EQ(first.next_cursor->partition_index, 1);
  const auto& p0 = first.topics[0].partitions[0];
  EXPECT_EQ(p0.leader_id, broker_->node_id());
  EXPECT_EQ(p0.replica_nodes, std::vector<int32_t>{broker_->node_id()});
  EXPECT_FALSE(first.topics[0].topic_id.is_zero());

  req.cursor = DescribeTopicPartitionsRequest::Cursor{"b", 1};
  auto second = run(handle_describe_topic_partitions(*broker_, 0, req));
  EXPECT_EQ(listed(second), (std::vector<std::string>{"b:1", "c:0"}));
  EXPECT_FALSE(second.next_cursor.has_value());

  // A limit that ends exactly at a topic's end points the cursor at the next topic.
  req.cursor = std::nullopt;
  req.response_partition_limit = 3;
  auto exact = run(handle_describe_topic_partitions(*broker_, 0, req));
  EXPECT_EQ(listed(exact), (std::vector<std::string>{"a:0", "a:1", "a:2"}));
  ASSERT_TRUE(exact.next_cursor.has_value());
  EXPECT_EQ(exact.next_cursor->topic_name, "b");
  EXPECT_EQ(exact.next_cursor->partition_index, 0);
}

TEST_F(BrokerTest, DescribeTopicPartitionsNamesUnknownTopicsAndCreatesNothing) {
  create_topic("known", 2);
  DescribeTopicPartitionsRequest req;
  req.topics.push_back({"zz-missing"});
  req.topics.push_back({"known"});
  auto r = run(handle_describe_topic_partitions(*broker_, 0, req));
  ASSERT_EQ(r.topics.size(), 2u);
  EXPECT_EQ(*r.topics[0].name, "known");
  EXPECT_EQ(r.topics[0].partitions.size(), 2u);
  EXPECT_EQ(*r.topics[1].name, "zz-missing");
  EXPECT_EQ(r.topics[1].error_code, static_cast<int16_t>(ErrorCode::kUnknownTopicOrPartition));
  EXPECT_FALSE(broker_->topics().find("zz-missing"));
}

}  // namespace
}  // namespace shale::broker::testing
