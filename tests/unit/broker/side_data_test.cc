// Per-partition side data and what uses it: the batch-size index (retention.bytes,
// DescribeLogDirs), message.timestamp.before/after.max.ms, and side-data snapshots (snapshot +
// tail replay must equal a full replay, also when the snapshot was taken with appends in
// flight that a crash then lost).
#include <sys/statvfs.h>

#include "broker/partition_snapshot.h"
#include "broker_test_util.h"

namespace shale::broker::testing {
namespace {

using protocol::ErrorCode;

int16_t code(ErrorCode e) { return static_cast<int16_t>(e); }

class SideData : public BothEngines {
 protected:
  protocol::DescribeLogDirsResponse log_dirs(
      std::optional<std::vector<protocol::DescribeLogDirsRequest::DescribableLogDirTopic>> topics,
      int16_t version = 4) {
    protocol::DescribeLogDirsRequest req;
    req.topics = std::move(topics);
    return run(handle_describe_log_dirs(*broker_, version, std::move(req)));
  }
  std::shared_ptr<Partition> part(const std::string& topic, int32_t index) {
    return broker_->topics().partition(topic, index);
  }
  // Produces n batches of `records` records each; returns the byte size of one batch.
  int64_t produce_batches(const std::string& topic, int n, int records, int64_t ts) {
    int64_t size = 0;
    for (int i = 0; i < n; ++i) {
      Buffer b = batch(records, ts);
      size = static_cast<int64_t>(b.size());
      auto r = produce(topic, 0, b);
      EXPECT_EQ(r.responses[0].partition_responses[0].error_code, 0);
    }
    return size;
  }
};

TEST_P(SideData, DescribeLogDirsReportsEveryPartitionWithItsSize) {
  cfg_.log_dir = dir_.string();
  restart();
  create_topic("ld", 2);
  create_topic("other", 1);
  const int64_t one = produce_batches("ld", 3, 4, 1000);
  auto r = log_dirs(std::nullopt);
  ASSERT_EQ(r.results.size(), 1u);
  const auto& d = r.results[0];
  EXPECT_EQ(d.error_code, 0);
  EXPECT_EQ(d.log_dir, dir_.string());
  ASSERT_EQ(d.topics.size(), 2u);
  for (const auto& t : d.topics) {
    if (t.name == "ld") {
      ASSERT_EQ(t.partitions.size(), 2u);
      for (const auto& p : t.partitions) {
        EXPECT_EQ(p.partition_size, p.partition_index == 0 ? 3 * one : 0);
        EXPECT_EQ(p.offset_lag, 0);
        EXPECT_FALSE(p.is_future_key);
      }
    } else {
      EXPECT_EQ(t.name, "other");
      ASSERT_EQ(t.partitions.size(), 1u);
      EXPECT_EQ(t.partitions[0].partition_size, 0);
    }
  }
  struct statvfs st {};
  ASSERT_EQ(::statvfs(dir_.c_str(), &st), 0);
  EXPECT_EQ(d.total_bytes, static_cast<int64_t>(st.f_blocks) * static_cast<int64_t>(st.f_frsize));
  EXPECT_GT(d.usable_bytes, 0);
  EXPECT_LE(d.usable_bytes, d.total_bytes);

  // A subset: only the partitions asked for (an unknown topic is left out, as Kafka does).
  std::vector<protocol::DescribeLogDirsRequest::DescribableLogDirTopic> want(2);
  want[0].topic = "ld";
  want[0].partitions = {0};
  want[1].topic = "missing";
  want[1].partitions = {0};
  auto sub = log_dirs(want, 1);
  ASSERT_EQ(sub.results.size(), 1u);
  ASSERT_EQ(sub.results[0].topics.size(), 1u);
  ASSERT_EQ(sub.results[0].topics[0].partitions.size(), 1u);
  EXPECT_EQ(sub.results[0].topics[0].partitions[0].partition_size, 3 * one);
  EXPECT_EQ(sub.results[0].total_bytes, -1);  // v1 does not carry it

  // Trimmed batches no longer count; the sizes survive a restart.
  protocol::DeleteRecordsRequest del;
  del.topics.push_back({"ld", {{0, 4}}});
  run(handle_delete_records(*broker_, 2, std::move(del)));
  EXPECT_EQ(part("ld", 0)->size_bytes(), 2 * one);
  restart();
  EXPECT_EQ(part("ld", 0)->size_bytes(), 2 * one);
}

TEST_P(SideData, RetentionBytesKeepsAtMostTheLimit) {
  create_topic("rb", 1);
  create_topic("unlimited", 1, {{"retention.bytes", "-1"}, {"retention.ms", "-1"}});
  const int64_t one = produce_batches("rb", 5, 4, now_ms());  // 5 batches of 4 records
  produce_batches("unlimited", 5, 4, now_ms());
  EXPECT_EQ(broker_->enforce_retention(now_ms()), 0);  // default -1: no size limit

  auto alter = [&](const std::string& value) {
    protocol::IncrementalAlterConfigsRequest req;
    auto& res = req.resources.emplace_back();
    res.resource_type = kConfigResourceTopic;
    res.resource_name = "rb";
    res.configs.push_back({"retention.bytes", 0, value});
    auto r = run(handle_incremental_alter_configs(*broker_, 1, std::move(req)));
    ASSERT_EQ(r.responses.at(0).error_code, 0);
  };
  alter(std::to_string(2 * one + one / 2));  // room for 2.5 batches: keep 2
  EXPECT_EQ(broker_->enforce_retention(now_ms()), 1);
  EXPECT_EQ(list_offset("rb", 0, -2), 12);
  EXPECT_EQ(part("rb", 0)->size_bytes(), 2 * one);
  EXPECT_EQ(broker_->enforce_retention(now_ms()), 0);
  alter(std::to_string(one));  // exactly one batch
  EXPECT_EQ(broker_->enforce_retention(now_ms()), 1);
  EXPECT_EQ(list_offset("rb", 0, -2), 16);
  alter("10");  // smaller than any batch: empty, up to the end
  EXPECT_EQ(broker_->enforce_retention(now_ms()), 1);
  EXPECT_EQ(list_offset("rb", 0, -2), 20);
  EXPECT_EQ(part("rb", 0)->size_bytes(), 0);
  EXPECT_EQ(list_offset("unlimited", 0, -2), 0);

  // The broker default (log.retention.bytes) applies to topics without an override.
  cfg_.topic_defaults.retention_bytes = one;
  restart();
  EXPECT_EQ(broker_->enforce_retention(now_ms()), 0);  // "rb" is empty, "unlimited" overrides
  create_topic("dflt", 1);
  produce_batches("dflt", 3, 4, now_ms());
  EXPECT_EQ(broker_->enforce_retention(now_ms()), 1);
  EXPECT_EQ(list_offset("dflt", 0, -2), 8);
  EXPECT_EQ(list_offset("unlimited", 0, -2), 0);
}

TEST_P(SideData, TimestampsOutsideTheWindowAreRefused) {
  create_topic("ts", 1, {{"message.timestamp.before.max.ms", "60000"}});
  create_topic(
      "lat", 1,
      {{"message.timestamp.type", "LogAppendTime"}, {"message.timestamp.before.max.ms", "60000"}});
  const int64_t now = now_ms();
  auto old = produce("ts", 0, batch(3, now - 3600000));
  const auto& p = old.responses[0].partition_responses[0];
  EXPECT_EQ(p.error_code, code(ErrorCode::kInvalidTimestamp));
  ASSERT_EQ(p.record_errors.size(), 1u);
  EXPECT_EQ(p.record_errors[0].batch_index, 0);
  ASSERT_TRUE(p.error_message.has_value());
  EXPECT_NE(p.error_message->find("is out of range"), std::string::npos) << *p.error_message;
  // Kafka 4's default message.timestamp.after.max.ms is one hour.
  auto future = produce("ts", 0, batch(1, now + 2 * 3600000));
  EXPECT_EQ(future.responses[0].partition_responses[0].error_code,
            code(ErrorCode::kInvalidTimestamp));
  auto fine = produce("ts", 0, batch(3, now - 1000));
  EXPECT_EQ(fine.responses[0].partition_responses[0].error_code, 0);
  EXPECT_EQ(fine.responses[0].partition_responses[0].base_offset, 0);  // nothing stored before
  // LogAppendTime topics replace the timestamps, so nothing is checked.
  auto lat = produce("lat", 0, batch(3, 1000));
  EXPECT_EQ(lat.responses[0].partition_responses[0].error_code, 0);

  // DescribeConfigs: the topic override, the Kafka 4 default, and a broker-level value.
  protocol::DescribeConfigsRequest req;
  req.include_synonyms = true;
  req.resources.push_back({2, "ts",
                           std::vector<std::string>{"message.timestamp.after.max.ms",
                                                    "message.timestamp.before.max.ms"}});
  auto r = run(handle_describe_configs(*broker_, 4, std::move(req)));
  ASSERT_EQ(r.results.at(0).configs.size(), 2u);
  const auto& after = r.results[0].configs[0];
  EXPECT_EQ(after.value, "3600000");
  EXPECT_EQ(after.config_source, 5);
  ASSERT_EQ(after.synonyms.size(), 1u);
  EXPECT_EQ(after.synonyms[0].name, "log.message.timestamp.after.max.ms");
  const auto& before = r.results[0].configs[1];
  EXPECT_EQ(before.value, "60000");
  EXPECT_EQ(before.config_source, 1);
  ASSERT_EQ(before.synonyms.size(), 2u);
  EXPECT_EQ(before.synonyms[1].value, "9223372036854775807");

  cfg_.topic_defaults.timestamp_after_max_ms = 0;
  cfg_.topic_defaults.static_overrides["log.message.timestamp.after.max.ms"] = "0";
  restart();
  auto ahead = produce("ts", 0, batch(1, now_ms() + 60000));
  EXPECT_EQ(ahead.responses[0].partition_responses[0].error_code,
            code(ErrorCode::kInvalidTimestamp));
  protocol::DescribeConfigsRequest req2;
  req2.include_synonyms = true;
  req2.resources.push_back({2, "ts", std::vector<std::string>{"message.timestamp.after.max.ms"}});
  auto r2 = run(handle_describe_configs(*broker_, 4, std::move(req2)));
  const auto& a2 = r2.results.at(0).configs.at(0);
  EXPECT_EQ(a2.value, "0");
  EXPECT_EQ(a2.config_source, 4);  // STATIC_BROKER_CONFIG
  ASSERT_EQ(a2.synonyms.size(), 2u);
  EXPECT_EQ(a2.synonyms[1].value, "3600000");
}

TEST_P(SideData, SnapshotPlusTailReplayEqualsFullReplay) {
  create_topic("snap", 1);
  int32_t seq[2] = {0, 0};
  auto mix = [&](int from, int to) {
    for (int i = from; i < to; ++i) {
      const int64_t ts = 1000 + (i % 7) * 100 + i;  // not monotonic
      Buffer b;
      if (i % 3 == 0) {
        b = batch(2, ts);
      } else {
        const int k = i % 2;
        b = batch(2, ts, 1000 + k, 0, seq[k]);
        seq[k] += 2;
      }
      ASSERT_EQ(produce("snap", 0, b).responses[0].partition_responses[0].error_code, 0);
    }
  };
  mix(0, 20);
  auto p = part("snap", 0);
  auto covered = p->write_snapshot();
  ASSERT_TRUE(covered.ok());
  EXPECT_EQ(*covered, 40);
  EXPECT_EQ(p->batches_since_snapshot(), 0);
  mix(20, 33);
  EXPECT_EQ(p->batches_since_snapshot(), 13);

  // A second Partition over the same stream: snapshot + tail, and a full replay.
  Partition tail("snap", 0, p->stream_id());
  ASSERT_TRUE(tail.open(*engine_).ok());
  EXPECT_EQ(tail.loaded_snapshot_offset(), 40);
  Partition full("snap", 0, p->stream_id());
  ASSERT_TRUE(full.open(*engine_, false).ok());
  EXPECT_EQ(full.loaded_snapshot_offset(), -1);
  const std::string want = p->snapshot().encode();
  EXPECT_EQ(tail.snapshot().encode(), want);
  EXPECT_EQ(full.snapshot().encode(), want);
  EXPECT_EQ(tail.size_bytes(), p->size_bytes());
  EXPECT_EQ(tail.max_timestamp(), p->max_timestamp());
  EXPECT_EQ(tail.producer_count(), 2u);

  // A graceful stop snapshots everything: the next open replays nothing.
  restart();
  EXPECT_EQ(part("snap", 0)->loaded_snapshot_offset(), 66);
  EXPECT_EQ(part("snap", 0)->snapshot().encode(), want);
  // Duplicate detection still works from the restored state: a retry of the last batch of
  // producer 1001 gets its original offset back.
  auto dup = produce("snap", 0, batch(2, 5000, 1001, 0, seq[1] - 2));
  EXPECT_EQ(dup.responses[0].partition_responses[0].error_code, 0);
  EXPECT_EQ(dup.responses[0].partition_responses[0].base_offset, 62);
  EXPECT_EQ(list_offset("snap", 0, -1), 66);
}

TEST_P(SideData, BrokerSnapshotsByBatchCount) {
  cfg_.snapshot_interval_batches = 5;
  cfg_.snapshot_interval_ms = 0;
  restart();
  create_topic("cnt", 1);
  produce_batches("cnt", 4, 1, 1000);
  EXPECT_EQ(broker_->write_snapshots(false), 0);  // not due (the maintenance thread agrees)
  EXPECT_EQ(part("cnt", 0)->batches_since_snapshot(), 4);
  produce_batches("cnt", 1, 1, 1000);
  // Due now: written by this call or already by the maintenance thread.
  broker_->write_snapshots(false);
  EXPECT_EQ(part("cnt", 0)->batches_since_snapshot(), 0);
  EXPECT_EQ(broker_->write_snapshots(false), 0);
  auto snap =
      PartitionSnapshot::decode(*part("cnt", 0)->stream()->get_meta(kPartitionSnapshotKey).value());
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ(snap->covered_end, 5);
}

TEST_P(SideData, CorruptSnapshotFallsBackToFullReplay) {
  create_topic("bad", 1);
  produce_batches("bad", 3, 2, 1000);
  auto p = part("bad", 0);
  ASSERT_TRUE(p->stream()->put_meta(kPartitionSnapshotKey, "garbage!").ok());
  Partition again("bad", 0, p->stream_id());
  ASSERT_TRUE(again.open(*engine_).ok());
  EXPECT_EQ(again.loaded_snapshot_offset(), -1);
  EXPECT_EQ(again.snapshot().encode(), p->snapshot().encode());
}

INSTANTIATE_TEST_SUITE_P(Engines, SideData, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "real" : "fake"; });

// With an append in flight (not yet durable) the snapshot covers only the durable prefix, and
// after a crash that loses the in-flight batch the producer can resend it.
class SnapshotCrash : public BrokerTest {
 protected:
  std::shared_ptr<Partition> part_of(const std::string& topic) {
    return broker_->topics().partition(topic, 0);
  }
};

TEST_F(SnapshotCrash, SnapshotNeverCoversAppendsInFlight) {
  create_topic("crash", 1);
  ASSERT_EQ(
      produce("crash", 0, batch(2, 1000, 7, 0, 0)).responses[0].partition_responses[0].error_code,
      0);
  fake_->hold_appends(true);
  produce("crash", 0, batch(2, 2000, 7, 0, 2), /*acks=*/0);  // in flight
  auto p = part_of("crash");
  EXPECT_EQ(p->stream()->next_offset(), 4);
  auto covered = p->write_snapshot();
  ASSERT_TRUE(covered.ok());
  EXPECT_EQ(*covered, 2);
  auto snap = PartitionSnapshot::decode(*p->stream()->get_meta(kPartitionSnapshotKey).value());
  ASSERT_TRUE(snap.ok());
  ASSERT_EQ(snap->producers.size(), 1u);
  EXPECT_EQ(snap->producers[0].batches.size(), 1u);
  EXPECT_EQ(snap->sizes.size(), 1u);
  EXPECT_EQ(snap->time_index.back().max_timestamp, 1001);

  // "kill -9": a new engine over the same disk; the held append never became durable.
  restart();
  EXPECT_EQ(list_offset("crash", 0, -1), 2);
  EXPECT_EQ(part_of("crash")->loaded_snapshot_offset(), 2);
  auto resend = produce("crash", 0, batch(2, 2000, 7, 0, 2));
  EXPECT_EQ(resend.responses[0].partition_responses[0].error_code, 0);
  EXPECT_EQ(resend.responses[0].partition_responses[0].base_offset, 2);
}

TEST(PartitionSnapshotCodec, RoundTripsAndRejectsDamage) {
  PartitionSnapshot s;
  s.covered_end = 1234567;
  s.time_index = {{100, 0, 1}, {-5 + 200, 10, 12}, {INT64_MAX, 20, 20}};
  s.sizes = {{0, 10, 500}, {10, 20, 900}, {20, 30, 1000}};
  s.sizes_cumulative_before = 0;
  s.producers = {{-1, -1, {}}, {42, 3, {{0, 9, 0, 9, 100}, {10, 10, 20, 20, -1}}}};
  const std::string bytes = s.encode();
  auto back = PartitionSnapshot::decode(bytes);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->covered_end, s.covered_end);
  EXPECT_EQ(back->time_index, s.time_index);
  EXPECT_EQ(back->sizes, s.sizes);
  ASSERT_EQ(back->producers.size(), 2u);
  EXPECT_EQ(back->producers[1].batches, s.producers[1].batches);
  EXPECT_EQ(back->producers[1].epoch, 3);
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string bad = bytes;
    bad[i] = static_cast<char>(bad[i] ^ 0x40);
    EXPECT_FALSE(PartitionSnapshot::decode(bad).ok()) << "flipped byte " << i;
  }
  EXPECT_FALSE(PartitionSnapshot::decode(bytes.substr(0, bytes.size() - 1)).ok());
  EXPECT_FALSE(PartitionSnapshot::decode("").ok());
}

TEST(PartitionSnapshotCodec, ThinningKeepsLookupsAtOrBeforeTheExactBatch) {
  std::vector<TimeIndexEntry> t;
  std::vector<SizeIndexEntry> z;
  for (int i = 0; i < 100; ++i) {
    t.push_back({1000 + i * 10, i * 3, i * 3 + 1});
    z.push_back({i * 3, i * 3 + 3, (i + 1) * 50});
  }
  thin_time_index(t, 8);
  thin_size_index(z, 8);
  EXPECT_LE(t.size(), 8u);
  EXPECT_LE(z.size(), 8u);
  EXPECT_EQ(t.front().base_offset, 0);
  EXPECT_EQ(t.back().max_timestamp, 1990);
  EXPECT_EQ(z.back().cumulative_bytes, 5000);
  EXPECT_EQ(z.back().end_offset, 300);
  for (size_t i = 1; i < z.size(); ++i) EXPECT_EQ(z[i].base_offset, z[i - 1].end_offset);
  // The first entry with max >= 1555 must start at or before batch 56 (ts 1560), the exact one.
  auto it = std::lower_bound(t.begin(), t.end(), 1555, [](const TimeIndexEntry& e, int64_t ts) {
    return e.max_timestamp < ts;
  });
  ASSERT_NE(it, t.end());
  EXPECT_LE(it->base_offset, 56 * 3);
}

}  // namespace
}  // namespace shale::broker::testing
