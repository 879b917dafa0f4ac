// Produce and Fetch over a real Broker: offsets, validation errors, durability before the
// response, back-pressure, idempotent producers, long-poll and incremental fetch sessions.
#include <atomic>
#include <chrono>
#include <thread>

#include "broker_test_util.h"

namespace shale::broker::testing {
namespace {

using protocol::ErrorCode;

int16_t code(ErrorCode c) { return static_cast<int16_t>(c); }

const protocol::FetchResponse::PartitionData& only(const protocol::FetchResponse& r) {
  return r.responses.at(0).partitions.at(0);
}

TEST_P(BothEngines, ProduceAssignsOffsetsAndFetchReturnsThem) {
  create_topic("p", 1);
  auto r1 = produce("p", 0, batch(3));
  EXPECT_EQ(r1.responses[0].partition_responses[0].error_code, 0);
  EXPECT_EQ(r1.responses[0].partition_responses[0].base_offset, 0);
  auto r2 = produce("p", 0, batch(2));
  EXPECT_EQ(r2.responses[0].partition_responses[0].base_offset, 3);
  EXPECT_EQ(r2.responses[0].partition_responses[0].log_append_time_ms, -1);

  auto f = fetch("p", 0, 0);
  ASSERT_EQ(only(f).error_code, 0);
  EXPECT_EQ(only(f).high_watermark, 5);
  EXPECT_EQ(only(f).log_start_offset, 0);
  EXPECT_EQ(offsets_in(*only(f).records), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  // The stored batches kept a valid CRC after the base offset rewrite.
  protocol::BatchReader reader(*only(f).records, false, true);
  int batches = 0;
  while (true) {
    auto b = reader.next();
    ASSERT_TRUE(b.ok());
    if (!b->has_value()) break;
    ++batches;
  }
  EXPECT_EQ(batches, 2);

  auto tail = fetch("p", 0, 3);
  EXPECT_EQ(offsets_in(*only(tail).records), (std::vector<int64_t>{3, 4}));
  auto end = fetch("p", 0, 5);
  EXPECT_EQ(only(end).error_code, 0);
  EXPECT_TRUE(only(end).records->empty());
  EXPECT_EQ(only(fetch("p", 0, 6)).error_code, code(ErrorCode::kOffsetOutOfRange));
}

TEST_P(BothEngines, ProduceErrorsPerPartitionInOneResponse) {
  create_topic("e", 2, {{"max.message.bytes", "200"}});
  Buffer good = batch(1);
  Buffer big = batch(20);
  std::vector<uint8_t> corrupt(good.begin(), good.end());
  corrupt.back() ^= 0xff;  // breaks the CRC
  std::vector<uint8_t> magic1(good.begin(), good.end());
  magic1[16] = 1;

  protocol::ProduceRequest req;
  req.acks = 1;
  auto& td = req.topic_data.emplace_back();
  td.name = "e";
  td.partition_data.push_back({0, good});
  td.partition_data.push_back({1, Buffer::take(std::move(corrupt))});
  td.partition_data.push_back({7, good});
  auto& td2 = req.topic_data.emplace_back();
  td2.name = "e";
  td2.partition_data.push_back({1, big});
  td2.partition_data.push_back({1, Buffer::take(std::move(magic1))});
  auto& td3 = req.topic_data.emplace_back();
  td3.name = "missing";
  td3.partition_data.push_back({0, good});
  auto r = run(handle_produce(*broker_, 9, std::move(req)));
  ASSERT_EQ(r.responses.size(), 3u);
  EXPECT_EQ(r.responses[0].partition_responses[0].error_code, 0);
  EXPECT_EQ(r.responses[0].partition_responses[1].error_code, code(ErrorCode::kCorruptMessage));
  EXPECT_EQ(r.responses[0].partition_responses[2].error_code,
            code(ErrorCode::kUnknownTopicOrPartition));
  EXPECT_EQ(r.responses[1].partition_responses[0].error_code, code(ErrorCode::kMessageTooLarge));
  EXPECT_EQ(r.responses[1].partition_responses[1].error_code,
            code(ErrorCode::kUnsupportedForMessageFormat));
  EXPECT_EQ(r.responses[2].partition_responses[0].error_code,
            code(ErrorCode::kUnknownTopicOrPartition));
  EXPECT_EQ(only(fetch("e", 1, 0)).high_watermark, 0);  // nothing bad was stored
  // Invalid acks.
  auto bad_acks = produce("e", 0, batch(1), 2);
  EXPECT_EQ(bad_acks.responses[0].partition_responses[0].error_code,
            code(ErrorCode::kInvalidRequiredAcks));
}

TEST_F(BrokerTest, ProduceAnswersOnlyAfterTheAppendIsDurable) {
  create_topic("d", 1);
  fake_->hold_appends(true);
  protocol::ProduceRequest req;
  req.acks = -1;
  auto& td = req.topic_data.emplace_back();
  td.name = "d";
  td.partition_data.push_back({0, batch(2)});
  auto fut = spawn(handle_produce(*broker_, 9, std::move(req)));
  // Not durable yet: the high watermark has not moved and no response exists.
  EXPECT_EQ(broker_->topics().partition("d", 0)->high_watermark(), 0);
  EXPECT_EQ(fut.wait_for(std::chrono::milliseconds(100)), std::future_status::timeout);
  fake_->release_held();
  auto r = fut.get();
  EXPECT_EQ(r.responses[0].partition_responses[0].error_code, 0);
  EXPECT_EQ(broker_->topics().partition("d", 0)->high_watermark(), 2);
}

// A produce releases its connection's order once its appends are submitted, before they are
// durable: the connection's next request may start (and append behind it) while it waits.
TEST_F(BrokerTest, ProduceReleasesTheConnectionOrderOnceAppendsAreSubmitted) {
  create_topic("o", 1);
  fake_->hold_appends(true);
  struct Order final : net::RequestOrder {
    void release() override { released.fetch_add(1); }
    std::atomic<int> released{0};
  } order;
  protocol::ProduceRequest req;
  req.acks = -1;
  auto& td = req.topic_data.emplace_back();
  td.name = "o";
  td.partition_data.push_back({0, batch(2)});
  auto fut = spawn(handle_produce(*broker_, 9, std::move(req), &order));
  for (int i = 0; i < 2000 && order.released.load() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(order.released.load(), 1);
  EXPECT_EQ(fut.wait_for(std::chrono::milliseconds(0)), std::future_status::timeout);
  fake_->release_held();
  EXPECT_EQ(fut.get().responses[0].partition_responses[0].error_code, 0);
}

TEST_F(BrokerTest, BackPressureIsARetriableError) {
  create_topic("bp", 1);
  fake_->refuse_appends(true);
  auto r = produce("bp", 0, batch(1));
  const int16_t ec = r.responses[0].partition_responses[0].error_code;
  EXPECT_EQ(ec, code(ErrorCode::kRequestTimedOut));
  EXPECT_TRUE(protocol::is_retriable(static_cast<ErrorCode>(ec)));
  fake_->refuse_appends(false);
  EXPECT_EQ(produce("bp", 0, batch(1)).responses[0].partition_responses[0].base_offset, 0);
}

// compression.type other than "producer": batches are stored recompressed (Kafka's rule), the
// records and offsets unchanged; "producer" keeps the client's codec.
TEST_P(BothEngines, TopicCompressionTypeRecompressesBatches) {
  create_topic("z", 1, {{"compression.type", "zstd"}});
  create_topic("p", 1);
  auto r = produce("z", 0, batch(3));
  ASSERT_EQ(r.responses[0].partition_responses[0].error_code, 0);
  auto r2 = produce("z", 0, batch(2));
  ASSERT_EQ(r2.responses[0].partition_responses[0].base_offset, 3);
  auto f = fetch("z", 0, 0);
  protocol::BatchReader reader(*only(f).records, false, true);
  int batches = 0, records = 0;
  while (true) {
    auto next = reader.next();
    ASSERT_TRUE(next.ok()) << next.error().to_string();
    if (!next->has_value()) break;
    const auto& b = **next;
    EXPECT_EQ(b.header().compression(), protocol::Compression::kZstd);
    EXPECT_EQ(b.header().base_offset, batches == 0 ? 0 : 3);
    EXPECT_TRUE(b.validate(protocol::OffsetCheck::kMonotonic).ok());
    ASSERT_TRUE(b.for_each_record([&](const protocol::RecordView&) { ++records; }).ok());
    ++batches;
  }
  EXPECT_EQ(batches, 2);
  EXPECT_EQ(records, 5);
  produce("p", 0, batch(2));
  auto fp = protocol::RecordBatch::parse(*only(fetch("p", 0, 0)).records, true);
  ASSERT_TRUE(fp.ok());
  EXPECT_EQ(fp->header().compression(), protocol::Compression::kNone);
}

// Issue #19: a WAL that cannot drain because uploads fail is KAFKA_STORAGE_ERROR (retriable,
// answered at once, with the cause in the message), not plain back-pressure.
TEST_F(BrokerTest, DegradedStorageRefusalIsKafkaStorageError) {
  create_topic("deg", 1);
  fake_->set_degraded(true);
  fake_->refuse_appends(true);
  auto r = produce("deg", 0, batch(1));
  const auto& pr = r.responses[0].partition_responses[0];
  EXPECT_EQ(pr.error_code, code(ErrorCode::kKafkaStorageError));
  EXPECT_TRUE(protocol::is_retriable(static_cast<ErrorCode>(pr.error_code)));
  ASSERT_TRUE(pr.error_message.has_value());
  EXPECT_NE(pr.error_message->find("object_store_full"), std::string::npos);
  fake_->refuse_appends(false);
  fake_->set_degraded(false);
  EXPECT_EQ(produce("deg", 0, batch(1)).responses[0].partition_responses[0].error_code, 0);
}

// Issue #19: DescribeLogDirs shows the degraded engine as Kafka shows an offline log dir.
TEST_F(BrokerTest, DescribeLogDirsShowsDegradedStorage) {
  cfg_.log_dir = dir_.string();
  restart();
  create_topic("ldd", 1);
  auto describe = [&] {
    protocol::DescribeLogDirsRequest req;
    req.topics = std::nullopt;  // every topic
    return run(handle_describe_log_dirs(*broker_, 4, std::move(req)));
  };
  auto ok = describe();
  ASSERT_EQ(ok.results.size(), 1u);
  EXPECT_EQ(ok.results[0].error_code, 0);
  EXPECT_EQ(ok.results[0].topics.size(), 1u);
  fake_->set_degraded(true);
  auto bad = describe();
  ASSERT_EQ(bad.results.size(), 1u);
  EXPECT_EQ(bad.results[0].error_code, code(ErrorCode::kKafkaStorageError));
  // Partitions stay listed (their stored data is readable), unlike Kafka's offline dir.
  EXPECT_EQ(bad.results[0].topics.size(), ok.results[0].topics.size());
  fake_->set_degraded(false);
  EXPECT_EQ(describe().results[0].error_code, 0);
}

TEST_F(BrokerTest, ProduceIsRefusedWhileTheAckGateIsClosed) {
  create_topic("gate", 1);
  std::atomic<bool> lease_valid{false};
  broker_->set_ack_gate([&] { return lease_valid.load(); });
  auto r = produce("gate", 0, batch(1));
  const int16_t ec = r.responses[0].partition_responses[0].error_code;
  EXPECT_EQ(ec, code(ErrorCode::kNotLeaderOrFollower));
  EXPECT_TRUE(protocol::is_retriable(static_cast<ErrorCode>(ec)));
  EXPECT_EQ(broker_->topics().partition("gate", 0)->high_watermark(), 0);  // nothing appended
  lease_valid = true;
  EXPECT_EQ(produce("gate", 0, batch(1)).responses[0].partition_responses[0].base_offset, 0);
  broker_->set_ack_gate({});
}

// cluster.etcd_leader_killed under load: the lease lapsed (a renewal slowed by an etcd leader
// election) while a produce's append was in flight. It was answered NOT_LEADER_OR_FOLLOWER
// although stored, while the request pipelined behind it was acknowledged after the renewal;
// librdkafka then acknowledged the first batch implicitly, without an offset. Appends made under
// a lease are acknowledged once that same lease is renewed.
TEST_F(BrokerTest, AppendsBeforeALapseAreAcknowledgedWhenTheSameLeaseIsRenewed) {
  create_topic("lapse", 1);
  std::atomic<int> calls{0};
  // 1st call: the gate before the append (lease 7); then closed for a few polls; then lease 7.
  broker_->set_ack_token([&]() -> int64_t {
    const int n = calls.fetch_add(1);
    return n == 0 || n >= 5 ? 7 : 0;
  });
  auto r = produce("lapse", 0, batch(1, 1000, 4242, 0, 0));
  const auto& pr = r.responses[0].partition_responses[0];
  EXPECT_EQ(pr.error_code, 0);
  EXPECT_EQ(pr.base_offset, 0);
  EXPECT_GE(calls.load(), 5);
  broker_->set_ack_gate({});
}

TEST_F(BrokerTest, AppendsBeforeALapseAreNotAcknowledgedUnderANewLease) {
  create_topic("regrant", 1);
  std::atomic<int> calls{0};
  // Lease 7 at the append, a lapse, then lease 8: it expired in the store meanwhile, another
  // broker may be taking the partition over, so the append is not acknowledged.
  broker_->set_ack_token([&]() -> int64_t {
    const int n = calls.fetch_add(1);
    return n == 0 ? 7 : n < 3 ? 0 : 8;
  });
  auto r = produce("regrant", 0, batch(1, 1000, 4242, 0, 0));
  EXPECT_EQ(r.responses[0].partition_responses[0].error_code,
            code(ErrorCode::kNotLeaderOrFollower));
  EXPECT_EQ(broker_->topics().partition("regrant", 0)->high_watermark(), 1);  // it is stored
  // The client's retry under the new lease is deduplicated: the original offset, stored once.
  auto again = produce("regrant", 0, batch(1, 1000, 4242, 0, 0));
  EXPECT_EQ(again.responses[0].partition_responses[0].error_code, 0);
  EXPECT_EQ(again.responses[0].partition_responses[0].base_offset, 0);
  EXPECT_EQ(broker_->topics().partition("regrant", 0)->high_watermark(), 1);
  broker_->set_ack_gate({});
}

TEST_P(BothEngines, LogAppendTimeTopicsStampBatches) {
  create_topic("lat", 1, {{"message.timestamp.type", "LogAppendTime"}});
  auto r = produce("lat", 0, batch(2, 5));
  const auto& pr = r.responses[0].partition_responses[0];
  EXPECT_GT(pr.log_append_time_ms, 1000000);
  auto f = fetch("lat", 0, 0);
  auto b = protocol::RecordBatch::parse(*only(f).records, true);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->header().timestamp_type(), protocol::TimestampType::kLogAppendTime);
  EXPECT_EQ(b->header().max_timestamp, pr.log_append_time_ms);
}

TEST_P(BothEngines, IdempotentProducerDuplicatesAndSequenceErrors) {
  create_topic("idem", 1);
  auto init = run(handle_init_producer_id(
      *broker_, 4, protocol::InitProducerIdRequest{std::nullopt, 60000, -1, -1}));
  ASSERT_EQ(init.error_code, 0);
  const int64_t pid = init.producer_id;
  EXPECT_GE(pid, 0);
  auto r0 = produce("idem", 0, batch(2, 1000, pid, 0, 0));
  EXPECT_EQ(r0.responses[0].partition_responses[0].base_offset, 0);
  auto r1 = produce("idem", 0, batch(3, 1000, pid, 0, 2));
  EXPECT_EQ(r1.responses[0].partition_responses[0].base_offset, 2);
  // A retry of the first batch gets its original offset and is not stored again.
  auto dup = produce("idem", 0, batch(2, 1000, pid, 0, 0));
  EXPECT_EQ(dup.responses[0].partition_responses[0].error_code, 0);
  EXPECT_EQ(dup.responses[0].partition_responses[0].base_offset, 0);
  EXPECT_EQ(only(fetch("idem", 0, 0)).high_watermark, 5);
  // A gap in the sequence.
  auto gap = produce("idem", 0, batch(1, 1000, pid, 0, 9));
  EXPECT_EQ(gap.responses[0].partition_responses[0].error_code,
            code(ErrorCode::kOutOfOrderSequenceNumber));
  // The state is rebuilt from the log after a restart.
  restart();
  auto dup2 = produce("idem", 0, batch(3, 1000, pid, 0, 2));
  EXPECT_EQ(dup2.responses[0].partition_responses[0].base_offset, 2);
  auto next = produce("idem", 0, batch(1, 1000, pid, 0, 5));
  EXPECT_EQ(next.responses[0].partition_responses[0].base_offset, 5);
  // A bumped epoch restarts at 0; the old epoch is then fenced.
  auto bumped = produce("idem", 0, batch(1, 1000, pid, 1, 0));
  EXPECT_EQ(bumped.responses[0].partition_responses[0].error_code, 0);
  auto stale = produce("idem", 0, batch(1, 1000, pid, 0, 6));
  EXPECT_EQ(stale.responses[0].partition_responses[0].error_code,
            code(ErrorCode::kInvalidProducerEpoch));
  // Producer ids are never reused, even across restarts.
  auto init2 = run(handle_init_producer_id(
      *broker_, 4, protocol::InitProducerIdRequest{std::nullopt, 60000, -1, -1}));
  EXPECT_GT(init2.producer_id, pid);
}

TEST_P(BothEngines, FetchLongPollIsWokenByAnAppend) {
  create_topic("lp", 1);
  protocol::FetchRequest req;
  req.max_wait_ms = 60000;  // far longer than the test: only the append can end the wait
  req.min_bytes = 1;
  auto& ft = req.topics.emplace_back();
  ft.topic = "lp";
  ft.partitions.push_back({0, -1, 0, -1, -1, 1 << 20, {}});
  auto fut = spawn(handle_fetch(*broker_, 12, std::move(req)));
  EXPECT_EQ(fut.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout);
  produce("lp", 0, batch(4));
  auto r = fut.get();
  EXPECT_EQ(offsets_in(*only(r).records).size(), 4u);
}

TEST_P(BothEngines, FetchRespectsMaxBytesButReturnsAtLeastOneBatch) {
  create_topic("mb", 1);
  for (int i = 0; i < 5; ++i) produce("mb", 0, batch(10));
  protocol::FetchRequest req;
  req.max_bytes = 1;  // smaller than any batch
  auto& ft = req.topics.emplace_back();
  ft.topic = "mb";
  ft.partitions.push_back({0, -1, 0, -1, -1, 1 << 20, {}});
  auto r = run(handle_fetch(*broker_, 12, std::move(req)));
  EXPECT_EQ(offsets_in(*only(r).records).size(), 10u);
}

TEST_P(BothEngines, IncrementalFetchSessions) {
  create_topic("s", 2);
  produce("s", 0, batch(1));
  protocol::FetchRequest full;
  full.session_id = 0;
  full.session_epoch = 0;
  auto& ft = full.topics.emplace_back();
  ft.topic = "s";
  ft.partitions.push_back({0, -1, 0, -1, -1, 1 << 20, {}});
  ft.partitions.push_back({1, -1, 0, -1, -1, 1 << 20, {}});
  auto r = run(handle_fetch(*broker_, 12, full));
  ASSERT_NE(r.session_id, 0);
  ASSERT_EQ(r.responses.at(0).partitions.size(), 2u);
  const int32_t sid = r.session_id;

  // Incremental: the client moves partition 0's offset; nothing new anywhere → empty response.
  protocol::FetchRequest inc;
  inc.session_id = sid;
  inc.session_epoch = 1;
  auto& it = inc.topics.emplace_back();
  it.topic = "s";
  it.partitions.push_back({0, -1, 1, -1, -1, 1 << 20, {}});
  auto r1 = run(handle_fetch(*broker_, 12, inc));
  EXPECT_EQ(r1.error_code, 0);
  EXPECT_EQ(r1.session_id, sid);
  EXPECT_TRUE(r1.responses.empty());

  // New data on partition 1 only: just it comes back.
  produce("s", 1, batch(2));
  protocol::FetchRequest inc2;
  inc2.session_id = sid;
  inc2.session_epoch = 2;
  auto r2 = run(handle_fetch(*broker_, 12, inc2));
  ASSERT_EQ(r2.responses.size(), 1u);
  ASSERT_EQ(r2.responses[0].partitions.size(), 1u);
  EXPECT_EQ(r2.responses[0].partitions[0].partition_index, 1);
  EXPECT_EQ(offsets_in(*r2.responses[0].partitions[0].records).size(), 2u);

  // Wrong epoch, unknown session.
  auto bad = inc2;
  bad.session_epoch = 7;
  EXPECT_EQ(run(handle_fetch(*broker_, 12, bad)).error_code,
            code(ErrorCode::kInvalidFetchSessionEpoch));
  auto unknown = inc2;
  unknown.session_id = sid + 1;
  EXPECT_EQ(run(handle_fetch(*broker_, 12, unknown)).error_code,
            code(ErrorCode::kFetchSessionIdNotFound));

  // Forgetting partition 1: new data there is no longer reported.
  protocol::FetchRequest forget;
  forget.session_id = sid;
  forget.session_epoch = 3;
  forget.forgotten_topics_data.push_back({"s", {}, {1}});
  run(handle_fetch(*broker_, 12, forget));
  produce("s", 1, batch(1));
  protocol::FetchRequest inc4;
  inc4.session_id = sid;
  inc4.session_epoch = 4;
  EXPECT_TRUE(run(handle_fetch(*broker_, 12, inc4)).responses.empty());

  // Closing the session (epoch -1).
  protocol::FetchRequest close;
  close.session_id = sid;
  close.session_epoch = -1;
  run(handle_fetch(*broker_, 12, close));
  EXPECT_EQ(broker_->fetch_sessions().find(sid), nullptr);
}

TEST_P(BothEngines, FetchByTopicId) {
  auto id = create_topic("ids", 1).topics[0].topic_id;
  produce("ids", 0, batch(1));
  protocol::FetchRequest req;
  auto& ft = req.topics.emplace_back();
  ft.topic_id = id;
  ft.partitions.push_back({0, -1, 0, -1, -1, 1 << 20, {}});
  auto& unknown = req.topics.emplace_back();
  unknown.topic_id = random_topic_id();
  unknown.partitions.push_back({0, -1, 0, -1, -1, 1 << 20, {}});
  auto r = run(handle_fetch(*broker_, 13, std::move(req)));
  ASSERT_EQ(r.responses.size(), 2u);
  EXPECT_EQ(r.responses[0].topic_id, id);
  EXPECT_EQ(offsets_in(*r.responses[0].partitions[0].records).size(), 1u);
  EXPECT_EQ(r.responses[1].partitions[0].error_code, code(ErrorCode::kUnknownTopicId));
}

TEST_P(BothEngines, AcknowledgedRecordsSurviveRestart) {
  create_topic("r", 1);
  produce("r", 0, batch(3));
  restart();
  auto f = fetch("r", 0, 0);
  EXPECT_EQ(offsets_in(*only(f).records).size(), 3u);
  EXPECT_EQ(produce("r", 0, batch(1)).responses[0].partition_responses[0].base_offset, 3);
}

}  // namespace
}  // namespace shale::broker::testing
