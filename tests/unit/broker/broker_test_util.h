// Fixture for broker handler tests: a Broker over a FakeEngine (in-memory streams that survive
// restart()) and a SqliteMetaStore on a temp dir, plus an io_context thread standing in for a
// shard, on which handler coroutines run.
#pragma once

#include <filesystem>
#include <future>
#include <memory>
#include <thread>

#include <gtest/gtest.h>
#include <asio/co_spawn.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/use_future.hpp>

#include "broker/broker.h"
#include "broker/handlers.h"
#include "fake_engine.h"
#include "meta/sqlite_meta_store.h"
#include "objstore/memory_store.h"
#include "protocol/record_batch.h"

namespace shale::broker::testing {

class BrokerTest : public ::testing::Test {
 protected:
  // true: the real storage::Engine (file WAL in a temp dir + MemoryStore); false: FakeEngine,
  // whose controls (hold/refuse appends) some tests need.
  virtual bool real_engine() const { return false; }
  void SetUp() override;
  void TearDown() override;

  // Stops the broker and starts a new one over the same disk and MetaStore file.
  void restart();

  template <typename T>
  T run(asio::awaitable<T> aw) {
    return asio::co_spawn(io_, std::move(aw), asio::use_future).get();
  }
  template <typename T>
  std::future<T> spawn(asio::awaitable<T> aw) {
    return asio::co_spawn(io_, std::move(aw), asio::use_future);
  }

  // Helpers building requests.
  protocol::CreateTopicsResponse create_topic(const std::string& name, int32_t partitions,
                                              std::map<std::string, std::string> configs = {});
  protocol::ProduceResponse produce(const std::string& topic, int32_t partition, Buffer records,
                                    int16_t acks = -1);
  protocol::FetchResponse fetch(const std::string& topic, int32_t partition, int64_t offset,
                                int32_t max_wait_ms = 0, int32_t min_bytes = 0);
  int64_t list_offset(const std::string& topic, int32_t partition, int64_t ts,
                      int64_t* timestamp_out = nullptr);

  static Buffer batch(int n, int64_t ts = 1000, int64_t pid = -1, int16_t epoch = -1,
                      int32_t seq = -1);
  // Number of records in a fetched records buffer, and the offset of the first one >= from.
  static std::vector<int64_t> offsets_in(const Buffer& records);

  BrokerConfig cfg_;
  std::filesystem::path dir_;
  std::shared_ptr<FakeDisk> disk_;
  objstore::MemoryStore store_;
  std::unique_ptr<storage::Engine> engine_;
  FakeEngine* fake_ = nullptr;  // engine_ when !real_engine()
  std::unique_ptr<meta::SqliteMetaStore> meta_;
  std::unique_ptr<Broker> broker_;
  asio::io_context io_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> guard_;
  std::thread io_thread_;
};

// Tests that must pass on both engines.
class BothEngines : public BrokerTest, public ::testing::WithParamInterface<bool> {
 protected:
  bool real_engine() const override { return GetParam(); }
};

}  // namespace shale::broker::testing
