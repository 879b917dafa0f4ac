// Transactions (docs/transactions.md): the coordinator's state machine and fencing, the
// partition side (verification of transactional batches, last stable offset, aborted list,
// read_committed Fetch and ListOffsets), recovery from every persisted coordinator state, and
// the side-data snapshot carrying open and aborted transactions.
#include <chrono>
#include <future>
#include <thread>

#include "base/crc32c.h"
#include "base/endian.h"
#include "broker/partition_snapshot.h"
#include "broker/txn_coordinator.h"
#include "broker/txn_handlers.h"
#include "broker_test_util.h"
#include "meta/meta_store.h"

namespace shale::broker::testing {
namespace {

using protocol::ErrorCode;

class Txn : public BrokerTest {
 protected:
  void SetUp() override {
    BrokerTest::SetUp();
    cfg_.txn_abort_check_interval_ms = 0;  // tests call abort_expired() themselves
    cfg_.txn_max_timeout_ms = 60000;
    restart_txn();
  }
  void restart_txn() {
    restart();
    ASSERT_TRUE(broker_->txn().start().ok());
  }
  TxnCoordinator& tc() { return broker_->txn(); }
  std::shared_ptr<Partition> part(const std::string& topic, int32_t index) {
    return broker_->topics().partition(topic, index);
  }
  static Buffer txn_batch(int n, int64_t pid, int16_t epoch, int32_t seq) {
    protocol::RecordBatchBuilder b;
    b.producer(pid, epoch, seq).transactional(true);
    for (int i = 0; i < n; ++i) b.add(1000 + i, std::nullopt, "v" + std::to_string(i));
    return b.build();
  }
  int16_t produce_code(const std::string& topic, int32_t p, Buffer records) {
    auto r = produce(topic, p, std::move(records));
    return r.responses[0].partition_responses[0].error_code;
  }
  protocol::FetchResponse fetch_committed(const std::string& topic, int32_t p, int64_t offset) {
    protocol::FetchRequest req;
    req.max_bytes = 1 << 20;
    req.isolation_level = 1;
    auto& ft = req.topics.emplace_back();
    ft.topic = topic;
    auto& fp = ft.partitions.emplace_back();
    fp.partition = p;
    fp.fetch_offset = offset;
    fp.partition_max_bytes = 1 << 20;
    return run(handle_fetch(*broker_, 12, std::move(req)));
  }
  TxnInitResult init(const std::string& tid, int32_t timeout_ms = 30000) {
    return tc().init_producer_id(tid, timeout_ms, -1, -1);
  }
  ErrorCode add(const std::string& tid, const TxnInitResult& p, const std::string& topic,
                int32_t partition) {
    return tc()
        .add_partitions(tid, p.producer_id, p.producer_epoch, {{topic, partition}})
        .at({topic, partition});
  }
};

TEST_F(Txn, InitProducerIdBumpsTheEpochAndFencesTheOldProducer) {
  auto a = init("t1");
  ASSERT_EQ(a.error, ErrorCode::kNone);
  EXPECT_EQ(a.producer_epoch, 0);
  auto b = init("t1");
  ASSERT_EQ(b.error, ErrorCode::kNone);
  EXPECT_EQ(b.producer_id, a.producer_id);
  EXPECT_EQ(b.producer_epoch, 1);
  create_topic("t", 1);
  EXPECT_EQ(add("t1", a, "t", 0), ErrorCode::kProducerFenced);
  EXPECT_EQ(tc().end_txn("t1", a.producer_id, a.producer_epoch, true), ErrorCode::kProducerFenced);
  EXPECT_EQ(add("t1", b, "t", 0), ErrorCode::kNone);
  // Another id is another producer.
  auto c = init("t2");
  EXPECT_NE(c.producer_id, a.producer_id);
  // Bad input: unknown id, wrong producer id, timeouts out of bounds.
  EXPECT_EQ(tc().end_txn("nope", 1, 0, true), ErrorCode::kInvalidProducerIdMapping);
  EXPECT_EQ(tc().end_txn("t1", c.producer_id, 0, true), ErrorCode::kInvalidProducerIdMapping);
  EXPECT_EQ(init("t3", 60001).error, ErrorCode::kInvalidTransactionTimeout);
  EXPECT_EQ(init("t3", 0).error, ErrorCode::kInvalidTransactionTimeout);
  // A producer re-initialising with a stale epoch is a zombie (KIP-360).
  EXPECT_EQ(tc().init_producer_id("t1", 30000, a.producer_id, a.producer_epoch).error,
            ErrorCode::kProducerFenced);
  // (Its open transaction is aborted with epoch 2 first, so it gets 3.)
  EXPECT_EQ(tc().init_producer_id("t1", 30000, b.producer_id, b.producer_epoch).producer_epoch, 3);
}

TEST_F(Txn, TransactionalProduceNeedsThePartitionInTheTransaction) {
  create_topic("t", 2);
  auto p = init("tp");
  EXPECT_EQ(produce_code("t", 0, txn_batch(2, p.producer_id, p.producer_epoch, 0)),
            static_cast<int16_t>(ErrorCode::kInvalidTxnState));
  ASSERT_EQ(add("tp", p, "t", 0), ErrorCode::kNone);
  EXPECT_EQ(produce_code("t", 0, txn_batch(2, p.producer_id, p.producer_epoch, 0)), 0);
  // Partition 1 was not added.
  EXPECT_EQ(produce_code("t", 1, txn_batch(2, p.producer_id, p.producer_epoch, 0)),
            static_cast<int16_t>(ErrorCode::kInvalidTxnState));
  // After a fence the old epoch is refused.
  auto q = init("tp");
  EXPECT_EQ(produce_code("t", 0, txn_batch(2, p.producer_id, p.producer_epoch, 2)),
            static_cast<int16_t>(ErrorCode::kInvalidProducerEpoch));
  (void)q;
}

TEST_F(Txn, LastStableOffsetAndAbortedTransactions) {
  create_topic("t", 1);
  auto plain = produce("t", 0, batch(3));  // offsets 0-2
  ASSERT_EQ(plain.responses[0].partition_responses[0].error_code, 0);
  auto p = init("ls");
  ASSERT_EQ(add("ls", p, "t", 0), ErrorCode::kNone);
  ASSERT_EQ(produce_code("t", 0, txn_batch(2, p.producer_id, p.producer_epoch, 0)), 0);  // 3-4
  auto pt = part("t", 0);
  EXPECT_EQ(pt->last_stable_offset(), 3);
  EXPECT_EQ(pt->high_watermark(), 5);
  // read_committed stops at the LSO; read_uncommitted sees it all.
  auto f = fetch_committed("t", 0, 0);
  auto& pd = f.responses[0].partitions[0];
  EXPECT_EQ(pd.last_stable_offset, 3);
  EXPECT_EQ(offsets_in(*pd.records), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(offsets_in(*fetch("t", 0, 0).responses[0].partitions[0].records).size(), 5u);
  {
    // ListOffsets latest: the LSO for read_committed, the high watermark otherwise.
    for (int8_t iso : {0, 1}) {
      protocol::ListOffsetsRequest req;
      req.replica_id = -1;
      req.isolation_level = iso;
      auto& lt = req.topics.emplace_back();
      lt.name = "t";
      auto& lp = lt.partitions.emplace_back();
      lp.partition_index = 0;
      lp.timestamp = -1;
      auto lr = run(handle_list_offsets(*broker_, 7, std::move(req)));
      EXPECT_EQ(lr.topics[0].partitions[0].offset, iso == 1 ? 3 : 5);
    }
  }
  auto at_lso = fetch_committed("t", 0, 3);
  EXPECT_EQ(at_lso.responses[0].partitions[0].error_code, 0);
  EXPECT_TRUE(offsets_in(*at_lso.responses[0].partitions[0].records).empty());
  // Abort: marker at 5, LSO moves to the end, the aborted list names the transaction.
  ASSERT_EQ(tc().end_txn("ls", p.producer_id, p.producer_epoch, false), ErrorCode::kNone);
  EXPECT_EQ(pt->high_watermark(), 6);
  EXPECT_EQ(pt->last_stable_offset(), 6);
  auto g = fetch_committed("t", 0, 0);
  auto& gd = g.responses[0].partitions[0];
  ASSERT_TRUE(gd.aborted_transactions.has_value());
  ASSERT_EQ(gd.aborted_transactions->size(), 1u);
  EXPECT_EQ((*gd.aborted_transactions)[0].producer_id, p.producer_id);
  EXPECT_EQ((*gd.aborted_transactions)[0].first_offset, 3);
  EXPECT_EQ(pt->aborted_txns(0, 100), (std::vector<AbortedTxn>{{p.producer_id, 3, 5}}));
  EXPECT_TRUE(pt->aborted_txns(6, 100).empty());
  // A committed transaction adds nothing to the list; EndTxn retried answers NONE.
  ASSERT_EQ(add("ls", p, "t", 0), ErrorCode::kNone);
  ASSERT_EQ(produce_code("t", 0, txn_batch(1, p.producer_id, p.producer_epoch, 2)), 0);  // 6
  EXPECT_EQ(pt->last_stable_offset(), 6);
  ASSERT_EQ(tc().end_txn("ls", p.producer_id, p.producer_epoch, true), ErrorCode::kNone);
  EXPECT_EQ(tc().end_txn("ls", p.producer_id, p.producer_epoch, true), ErrorCode::kNone);
  EXPECT_EQ(tc().end_txn("ls", p.producer_id, p.producer_epoch, false),
            ErrorCode::kInvalidTxnState);
  EXPECT_EQ(pt->last_stable_offset(), 8);
  EXPECT_EQ(pt->aborted_txns(0, 100).size(), 1u);
  // The marker is a control batch (transactional + control attributes, key type 1 = commit).
  Buffer all = *fetch("t", 0, 7).responses[0].partitions[0].records;
  protocol::BatchReader reader(all, false, true);
  auto mb = reader.next();
  ASSERT_TRUE(mb.ok() && mb->has_value());
  EXPECT_TRUE((*mb)->header().is_control());
  EXPECT_TRUE((*mb)->header().is_transactional());
  EXPECT_EQ((*mb)->header().producer_id, p.producer_id);
  std::string key;
  ASSERT_TRUE((*mb)->for_each_record([&](const protocol::RecordView& v) { key = *v.key; }).ok());
  EXPECT_EQ(key, std::string("\0\0\0\1", 4));
}

// EndTxn is answered only once every marker is durable; a refused marker append is retried
// and the transaction completes exactly once.
TEST_F(Txn, EndTxnWaitsForDurableMarkersAndRetriesRefusedOnes) {
  create_topic("t", 1);
  auto p = init("dm");
  ASSERT_EQ(add("dm", p, "t", 0), ErrorCode::kNone);
  ASSERT_EQ(produce_code("t", 0, txn_batch(2, p.producer_id, p.producer_epoch, 0)), 0);
  auto pt = part("t", 0);
  // Held: the marker is in flight, not durable, so EndTxn waits.
  fake_->hold_appends(true);
  auto held = std::async(std::launch::async,
                         [&] { return tc().end_txn("dm", p.producer_id, p.producer_epoch, true); });
  EXPECT_EQ(held.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout);
  EXPECT_EQ(tc().describe({"dm"})[0].meta.state, TxnState::kPrepareCommit);
  // A snapshot taken now still lists the transaction as open: its marker is not durable.
  EXPECT_EQ(pt->snapshot().open_txns,
            (std::vector<std::pair<int64_t, int64_t>>{{p.producer_id, 0}}));
  EXPECT_EQ(tc().end_txn("dm", p.producer_id, p.producer_epoch, true),
            ErrorCode::kConcurrentTransactions);
  fake_->hold_appends(false);
  fake_->release_held();
  EXPECT_EQ(held.get(), ErrorCode::kNone);
  EXPECT_EQ(pt->high_watermark(), 3);
  EXPECT_EQ(pt->last_stable_offset(), 3);
  // Refused: retried until the engine accepts it; one marker in the end.
  ASSERT_EQ(add("dm", p, "t", 0), ErrorCode::kNone);
  ASSERT_EQ(produce_code("t", 0, txn_batch(1, p.producer_id, p.producer_epoch, 2)), 0);  // 3
  fake_->refuse_appends(true);
  auto refused = std::async(std::launch::async, [&] {
    return tc().end_txn("dm", p.producer_id, p.producer_epoch, false);
  });
  EXPECT_EQ(refused.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout);
  EXPECT_EQ(pt->last_stable_offset(), 3);
  EXPECT_TRUE(pt->has_open_txn(p.producer_id));
  fake_->refuse_appends(false);
  EXPECT_EQ(refused.get(), ErrorCode::kNone);
  EXPECT_EQ(pt->high_watermark(), 5);
  EXPECT_EQ(pt->last_stable_offset(), 5);
  EXPECT_EQ(pt->aborted_txns(0, 100), (std::vector<AbortedTxn>{{p.producer_id, 3, 4}}));
}

// Retention (or DeleteRecords) past the start of an open transaction: the LSO stays at or
// above the log start, so read_committed readers are not stuck below it.
TEST_F(Txn, LastStableOffsetIsNeverBelowTheLogStart) {
  create_topic("t", 1);
  auto p = init("lt");
  ASSERT_EQ(add("lt", p, "t", 0), ErrorCode::kNone);
  ASSERT_EQ(produce_code("t", 0, txn_batch(2, p.producer_id, p.producer_epoch, 0)), 0);    // 0-1
  ASSERT_EQ(produce("t", 0, batch(2)).responses[0].partition_responses[0].error_code, 0);  // 2-3
  auto pt = part("t", 0);
  EXPECT_EQ(pt->last_stable_offset(), 0);
  ASSERT_TRUE(pt->stream()->trim(2).ok());
  EXPECT_EQ(pt->last_stable_offset(), 2);
}

TEST_F(Txn, OpenAndAbortedTransactionsSurviveRestartWithAndWithoutSnapshot) {
  create_topic("t", 1);
  auto p = init("rs");
  ASSERT_EQ(add("rs", p, "t", 0), ErrorCode::kNone);
  ASSERT_EQ(produce_code("t", 0, txn_batch(2, p.producer_id, p.producer_epoch, 0)), 0);
  ASSERT_EQ(tc().end_txn("rs", p.producer_id, p.producer_epoch, false), ErrorCode::kNone);
  ASSERT_EQ(add("rs", p, "t", 0), ErrorCode::kNone);
  ASSERT_EQ(produce_code("t", 0, txn_batch(1, p.producer_id, p.producer_epoch, 2)), 0);  // 3
  auto check = [&] {
    auto pt = part("t", 0);
    EXPECT_EQ(pt->high_watermark(), 4);
    EXPECT_EQ(pt->last_stable_offset(), 3);
    EXPECT_EQ(pt->aborted_txns(0, 100), (std::vector<AbortedTxn>{{p.producer_id, 0, 2}}));
  };
  check();
  // Snapshot round trip.
  auto snap = part("t", 0)->snapshot();
  ASSERT_EQ(snap.open_txns.size(), 1u);
  auto decoded = PartitionSnapshot::decode(snap.encode());
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(decoded->open_txns, snap.open_txns);
  EXPECT_EQ(decoded->aborted_txns, snap.aborted_txns);
  restart_txn();  // stop() writes snapshots
  check();
  // The coordinator state came back too: the transaction is still Ongoing and can commit.
  auto d = tc().describe({"rs"});
  ASSERT_EQ(d[0].error, ErrorCode::kNone);
  EXPECT_EQ(d[0].meta.state, TxnState::kOngoing);
  ASSERT_EQ(tc().end_txn("rs", p.producer_id, p.producer_epoch, true), ErrorCode::kNone);
  EXPECT_EQ(part("t", 0)->last_stable_offset(), 5);
}

// A crash after the Prepare record and before (some of) the markers: start() finishes it.
TEST_F(Txn, RecoveryCompletesPrepareCommitAndPrepareAbort) {
  create_topic("t", 2);
  for (bool commit : {true, false}) {
    const std::string tid = commit ? "rc" : "ra";
    auto p = init(tid);
    ASSERT_EQ(tc().add_partitions(tid, p.producer_id, p.producer_epoch, {{"t", 0}, {"t", 1}})
                  .at({"t", 0}),
              ErrorCode::kNone);
    const int64_t before0 = part("t", 0)->high_watermark();
    ASSERT_EQ(produce_code("t", 0, txn_batch(2, p.producer_id, p.producer_epoch, 0)), 0);
    ASSERT_EQ(produce_code("t", 1, txn_batch(2, p.producer_id, p.producer_epoch, 0)), 0);
    // Simulate the crash: the record says Prepare*, and only partition 0 got its marker.
    auto d = tc().describe({tid});
    TxnMetadata m = d[0].meta;
    m.state = commit ? TxnState::kPrepareCommit : TxnState::kPrepareAbort;
    meta::Txn t;
    t.ops.push_back(meta::Op::put("shale/txn/ids/" + tid, m.encode()));
    ASSERT_TRUE(broker_->meta().commit(t).ok());
    std::promise<Status> done;
    part("t", 0)->append_marker(p.producer_id, p.producer_epoch, commit, 1,
                                [&](Status s) { done.set_value(std::move(s)); });
    ASSERT_TRUE(done.get_future().get().ok());
    restart_txn();
    auto after = tc().describe({tid});
    EXPECT_EQ(after[0].meta.state, commit ? TxnState::kCompleteCommit : TxnState::kCompleteAbort);
    EXPECT_TRUE(after[0].meta.partitions.empty());
    for (int32_t i : {0, 1}) {
      auto pt = part("t", i);
      EXPECT_EQ(pt->last_stable_offset(), pt->high_watermark()) << i;
      EXPECT_FALSE(pt->has_open_txn(p.producer_id));
      if (!commit) {
        auto ab = pt->aborted_txns(0, 1000);
        ASSERT_FALSE(ab.empty());
        EXPECT_EQ(ab.back().producer_id, p.producer_id);
      }
    }
    // Partition 0 kept exactly one marker: two data records + one marker since `before0`.
    EXPECT_EQ(part("t", 0)->high_watermark(), before0 + 3);
  }
}

TEST_F(Txn, TimedOutTransactionsAreAbortedWithABumpedEpoch) {
  create_topic("t", 1);
  auto p = init("to", 1);
  ASSERT_EQ(add("to", p, "t", 0), ErrorCode::kNone);
  ASSERT_EQ(produce_code("t", 0, txn_batch(1, p.producer_id, p.producer_epoch, 0)), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(tc().abort_expired(), 1);
  EXPECT_EQ(part("t", 0)->last_stable_offset(), part("t", 0)->high_watermark());
  EXPECT_EQ(part("t", 0)->aborted_txns(0, 100).size(), 1u);
  // The producer was fenced: a commit after the timeout abort fails, nothing half-committed.
  EXPECT_EQ(tc().end_txn("to", p.producer_id, p.producer_epoch, true), ErrorCode::kProducerFenced);
  EXPECT_EQ(produce_code("t", 0, txn_batch(1, p.producer_id, p.producer_epoch, 1)),
            static_cast<int16_t>(ErrorCode::kInvalidProducerEpoch));
  // It may re-initialise with its old epoch (KIP-360) and carry on.
  auto again = tc().init_producer_id("to", 30000, p.producer_id, p.producer_epoch);
  ASSERT_EQ(again.error, ErrorCode::kNone);
  EXPECT_EQ(again.producer_epoch, p.producer_epoch + 2);
}

TEST_F(Txn, TxnOffsetCommitNeedsAddOffsetsAndBecomesVisibleOnCommit) {
  create_topic("t", 1);
  std::map<std::string, std::map<TxnTopicPartition, TxnPendingOffset>> committed;
  tc().set_commit_offsets([&](const std::string& g, const auto& o) {
    for (const auto& [tp, po] : o) committed[g][tp] = po;
    return ok_status();
  });
  auto p = init("oc");
  std::vector<std::pair<TxnTopicPartition, TxnPendingOffset>> offs = {{{"t", 0}, {42, -1, "m"}}};
  EXPECT_EQ(tc().txn_offset_commit("oc", "g", p.producer_id, p.producer_epoch, offs),
            ErrorCode::kInvalidTxnState);
  ASSERT_EQ(tc().add_offsets("oc", p.producer_id, p.producer_epoch, "g"), ErrorCode::kNone);
  ASSERT_EQ(tc().txn_offset_commit("oc", "g", p.producer_id, p.producer_epoch, offs),
            ErrorCode::kNone);
  EXPECT_TRUE(committed.empty());
  EXPECT_TRUE(tc().has_pending_offsets("g", "t", 0));
  EXPECT_FALSE(tc().has_pending_offsets("g", "t", 1));
  EXPECT_FALSE(tc().has_pending_offsets("other", "t", 0));
  ASSERT_EQ(tc().end_txn("oc", p.producer_id, p.producer_epoch, false), ErrorCode::kNone);
  EXPECT_FALSE(tc().has_pending_offsets("g", "t", 0));
  EXPECT_TRUE(committed.empty());  // aborted: the offsets are dropped
  ASSERT_EQ(tc().add_offsets("oc", p.producer_id, p.producer_epoch, "g"), ErrorCode::kNone);
  ASSERT_EQ(tc().txn_offset_commit("oc", "g", p.producer_id, p.producer_epoch, offs),
            ErrorCode::kNone);
  ASSERT_EQ(tc().end_txn("oc", p.producer_id, p.producer_epoch, true), ErrorCode::kNone);
  ASSERT_EQ(committed["g"].size(), 1u);
  const TxnTopicPartition t0{"t", 0};
  EXPECT_EQ(committed["g"][t0].offset, 42);
}

TEST_F(Txn, ListAndDescribe) {
  create_topic("t", 1);
  auto p = init("ld");
  ASSERT_EQ(add("ld", p, "t", 0), ErrorCode::kNone);
  (void)init("other");
  auto all = tc().list({}, {}, -1);
  EXPECT_EQ(all.size(), 2u);
  auto ongoing = tc().list({"Ongoing"}, {}, -1);
  ASSERT_EQ(ongoing.size(), 1u);
  EXPECT_EQ(ongoing[0].first, "ld");
  EXPECT_EQ(tc().list({}, {p.producer_id}, -1).size(), 1u);
  auto d = tc().describe({"ld", "missing"});
  EXPECT_EQ(d[0].meta.partitions.size(), 1u);
  EXPECT_EQ(d[1].error, ErrorCode::kTransactionalIdNotFound);
}

// Version 1 snapshots (before transactions) are still read.
TEST(TxnSnapshot, Version1IsStillRead) {
  PartitionSnapshot s;
  s.covered_end = 10;
  s.producers.push_back({5, 1, {{0, 3, 2, 5, 1000}}});
  std::string v2 = s.encode();
  // Version 2 ends with the two (empty) transaction counts before the CRC.
  std::string body = v2.substr(0, v2.size() - 4 - 2);
  body[0] = 1;
  uint8_t crc[4];
  be::store32(crc, crc32c::value(body.data(), body.size()));
  body.append(reinterpret_cast<const char*>(crc), 4);
  auto d = PartitionSnapshot::decode(body);
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->covered_end, 10);
  ASSERT_EQ(d->producers.size(), 1u);
  EXPECT_TRUE(d->open_txns.empty());
}

TEST(TxnRecord, EncodeDecodeRoundTripAndRejectsGarbage) {
  TxnMetadata m;
  m.producer_id = 77;
  m.producer_epoch = 3;
  m.last_producer_epoch = 2;
  m.timeout_ms = 1234;
  m.state = TxnState::kPrepareCommit;
  m.partitions = {{"a", 0}, {"b", 7}};
  m.groups["g"][{"a", 1}] = {10, 2, std::nullopt};
  m.groups["g"][{"a", 2}] = {11, -1, std::string("meta\0x", 6)};
  m.groups["h"];
  m.start_ms = 1000;
  m.update_ms = 2000;
  auto d = TxnMetadata::decode(m.encode());
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d, m);
  std::string bytes = m.encode();
  EXPECT_FALSE(TxnMetadata::decode(bytes.substr(0, bytes.size() - 1)).ok());
  EXPECT_FALSE(TxnMetadata::decode(bytes + "x").ok());
  EXPECT_FALSE(TxnMetadata::decode("").ok());
}

}  // namespace
}  // namespace shale::broker::testing
