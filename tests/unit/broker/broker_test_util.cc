#include "broker_test_util.h"

#include <random>

namespace shale::broker::testing {

void BrokerTest::SetUp() {
  dir_ =
      std::filesystem::temp_directory_path() / ("shale_broker_test_" + std::to_string(::getpid()) +
                                                "_" + std::to_string(std::random_device{}()));
  std::filesystem::create_directories(dir_);
  disk_ = std::make_shared<FakeDisk>();
  cfg_.cluster_id = "test-cluster-id-00000";
  cfg_.node_id = 1;
  cfg_.worker_threads = 2;
  guard_.emplace(io_.get_executor());
  io_thread_ = std::thread([this] { io_.run(); });
  restart();
}

void BrokerTest::restart() {
  if (broker_) broker_->stop();
  broker_.reset();
  if (engine_) engine_->shutdown();
  engine_.reset();
  meta_.reset();
  auto m = meta::SqliteMetaStore::open({(dir_ / "meta.db").string()});
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  meta_ = std::move(m).value();
  if (real_engine()) {
    storage::EngineOptions o;
    o.wal_path = "file://" + (dir_ / "wal").string();
    o.wal_capacity = 16 << 20;
    o.wal_max_write = 256 << 10;
    o.log_cache_size = 8 << 20;
    o.block_cache_size = 4 << 20;
    o.upload_threshold = 1 << 20;
    o.stream_split_size = 256 << 10;
    o.object_block_size = 16 << 10;
    o.object_part_size = 1 << 20;
    o.upload_interval_ms = -1;
    o.compaction_interval_ms = 0;
    o.object_delete_delay_ms = 0;
    auto e = storage::Engine::open(o, &store_, meta_.get());
    ASSERT_TRUE(e.ok()) << e.error().to_string();
    engine_ = std::move(e).value();
    fake_ = nullptr;
  } else {
    auto f = std::make_unique<FakeEngine>(disk_);
    fake_ = f.get();
    engine_ = std::move(f);
  }
  broker_ = std::make_unique<Broker>(cfg_, engine_.get(), meta_.get());
  auto st = broker_->start();
  ASSERT_TRUE(st.ok()) << st.error().to_string();
}

void BrokerTest::TearDown() {
  guard_.reset();
  io_.stop();
  io_thread_.join();
  if (broker_) broker_->stop();
  broker_.reset();
  if (engine_) engine_->shutdown();
  engine_.reset();
  meta_.reset();
  std::filesystem::remove_all(dir_);
}

protocol::CreateTopicsResponse BrokerTest::create_topic(
    const std::string& name, int32_t partitions, std::map<std::string, std::string> configs) {
  protocol::CreateTopicsRequest req;
  auto& t = req.topics.emplace_back();
  t.name = name;
  t.num_partitions = partitions;
  t.replication_factor = -1;
  for (auto& [k, v] : configs) t.configs.push_back({k, v});
  return run(handle_create_topics(*broker_, 7, std::move(req)));
}

protocol::ProduceResponse BrokerTest::produce(const std::string& topic, int32_t partition,
                                              Buffer records, int16_t acks) {
  protocol::ProduceRequest req;
  req.acks = acks;
  req.timeout_ms = 30000;
  auto& td = req.topic_data.emplace_back();
  td.name = topic;
  td.partition_data.push_back({partition, records});
  return run(handle_produce(*broker_, 9, std::move(req)));
}

protocol::FetchResponse BrokerTest::fetch(const std::string& topic, int32_t partition,
                                          int64_t offset, int32_t max_wait_ms, int32_t min_bytes) {
  protocol::FetchRequest req;
  req.max_wait_ms = max_wait_ms;
  req.min_bytes = min_bytes;
  req.max_bytes = 1 << 20;
  auto& ft = req.topics.emplace_back();
  ft.topic = topic;
  auto& fp = ft.partitions.emplace_back();
  fp.partition = partition;
  fp.fetch_offset = offset;
  fp.partition_max_bytes = 1 << 20;
  return run(handle_fetch(*broker_, 12, std::move(req)));
}

int64_t BrokerTest::list_offset(const std::string& topic, int32_t partition, int64_t ts,
                                int64_t* timestamp_out) {
  protocol::ListOffsetsRequest req;
  req.replica_id = -1;
  auto& t = req.topics.emplace_back();
  t.name = topic;
  auto& p = t.partitions.emplace_back();
  p.partition_index = partition;
  p.timestamp = ts;
  auto resp = run(handle_list_offsets(*broker_, 8, std::move(req)));
  EXPECT_EQ(resp.topics.at(0).partitions.at(0).error_code, 0);
  if (timestamp_out) *timestamp_out = resp.topics[0].partitions[0].timestamp;
  return resp.topics[0].partitions[0].offset;
}

Buffer BrokerTest::batch(int n, int64_t ts, int64_t pid, int16_t epoch, int32_t seq) {
  protocol::RecordBatchBuilder b;
  if (pid >= 0) b.producer(pid, epoch, seq);
  for (int i = 0; i < n; ++i) {
    std::string v = "value-" + std::to_string(i);
    b.add(ts + i, std::nullopt, v);
  }
  return b.build();
}

std::vector<int64_t> BrokerTest::offsets_in(const Buffer& records) {
  std::vector<int64_t> out;
  protocol::BatchReader reader(records, true, true);
  while (true) {
    auto b = reader.next();
    if (!b.ok() || !b->has_value()) break;
    const auto& h = (*b)->header();
    (void)(*b)->for_each_record(
        [&](const protocol::RecordView& v) { out.push_back(h.base_offset + v.offset_delta); });
  }
  return out;
}

}  // namespace shale::broker::testing
