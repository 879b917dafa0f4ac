// ListOffsets, OffsetForLeaderEpoch and DeleteRecords.
#include "broker_test_util.h"

namespace shale::broker::testing {
namespace {

using protocol::ErrorCode;

TEST_P(BothEngines, ListOffsetsEarliestLatestTimestampAndMax) {
  create_topic("lo", 1);
  produce("lo", 0, batch(3, 1000));  // offsets 0..2, timestamps 1000..1002
  produce("lo", 0, batch(3, 2000));  // offsets 3..5, timestamps 2000..2002
  EXPECT_EQ(list_offset("lo", 0, -2), 0);
  EXPECT_EQ(list_offset("lo", 0, -1), 6);
  int64_t ts = 0;
  EXPECT_EQ(list_offset("lo", 0, 1001, &ts), 1);
  EXPECT_EQ(ts, 1001);
  EXPECT_EQ(list_offset("lo", 0, 1500, &ts), 3);
  EXPECT_EQ(ts, 2000);
  EXPECT_EQ(list_offset("lo", 0, 9999, &ts), -1);
  EXPECT_EQ(ts, -1);
  EXPECT_EQ(list_offset("lo", 0, -3, &ts), 5);
  EXPECT_EQ(ts, 2002);
  // The time index is rebuilt after a restart.
  restart();
  EXPECT_EQ(list_offset("lo", 0, 1500, &ts), 3);
  EXPECT_EQ(list_offset("lo", 0, -3, &ts), 5);
}

TEST_P(BothEngines, DeleteRecordsMovesLogStart) {
  create_topic("dr", 1);
  produce("dr", 0, batch(3));
  produce("dr", 0, batch(3));
  protocol::DeleteRecordsRequest req;
  auto& t = req.topics.emplace_back();
  t.name = "dr";
  t.partitions.push_back({0, 3});
  auto r = run(handle_delete_records(*broker_, 2, std::move(req)));
  EXPECT_EQ(r.topics[0].partitions[0].error_code, 0);
  EXPECT_EQ(r.topics[0].partitions[0].low_watermark, 3);
  EXPECT_EQ(list_offset("dr", 0, -2), 3);
  auto f = fetch("dr", 0, 0);
  EXPECT_EQ(f.responses[0].partitions[0].error_code,
            static_cast<int16_t>(ErrorCode::kOffsetOutOfRange));
  EXPECT_EQ(f.responses[0].partitions[0].log_start_offset, 3);

  protocol::DeleteRecordsRequest beyond;
  auto& t2 = beyond.topics.emplace_back();
  t2.name = "dr";
  t2.partitions.push_back({0, 100});
  auto r2 = run(handle_delete_records(*broker_, 2, std::move(beyond)));
  EXPECT_EQ(r2.topics[0].partitions[0].error_code,
            static_cast<int16_t>(ErrorCode::kOffsetOutOfRange));
}

TEST_P(BothEngines, RetentionMsTrimsBatchesOlderThanTheCutoff) {
  create_topic("ret", 1, {{"retention.ms", "60000"}});
  create_topic("keep", 1, {{"retention.ms", "-1"}});
  const int64_t now = now_ms();
  produce("ret", 0, batch(3, now - 120000));  // offsets 0..2: older than the cutoff
  produce("ret", 0, batch(2, now));           // offsets 3..4: recent
  produce("keep", 0, batch(3, 1000));
  EXPECT_EQ(broker_->enforce_retention(now), 1);
  EXPECT_EQ(list_offset("ret", 0, -2), 3);
  EXPECT_EQ(list_offset("keep", 0, -2), 0);
  EXPECT_EQ(broker_->enforce_retention(now), 0);  // nothing more to do
  // All data expired: the log is emptied up to its end.
  EXPECT_EQ(broker_->enforce_retention(now + 3600000), 1);
  EXPECT_EQ(list_offset("ret", 0, -2), 5);
}

TEST_P(BothEngines, OffsetForLeaderEpochAnswersWithTheLogEnd) {
  create_topic("ole", 1);
  produce("ole", 0, batch(4));
  protocol::OffsetForLeaderEpochRequest req;
  auto& t = req.topics.emplace_back();
  t.topic = "ole";
  t.partitions.push_back({0, 0, 0});
  t.partitions.push_back({5, 0, 0});
  auto r = run(handle_offset_for_leader_epoch(*broker_, 4, std::move(req)));
  EXPECT_EQ(r.topics[0].partitions[0].error_code, 0);
  EXPECT_EQ(r.topics[0].partitions[0].leader_epoch, 0);
  EXPECT_EQ(r.topics[0].partitions[0].end_offset, 4);
  EXPECT_EQ(r.topics[0].partitions[1].error_code,
            static_cast<int16_t>(ErrorCode::kUnknownTopicOrPartition));
}

}  // namespace
}  // namespace shale::broker::testing
