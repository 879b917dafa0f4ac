// ProducerStateMap: Kafka's duplicate / sequence / epoch rules.
#include <gtest/gtest.h>

#include "broker/producer_state.h"

namespace shale::broker {
namespace {

using protocol::ErrorCode;

TEST(ProducerState, KeepsTheLastFiveBatchesForDuplicates) {
  ProducerStateMap m;
  for (int i = 0; i < 7; ++i) {
    auto c = m.check(7, 0, i * 10, i * 10 + 9);
    EXPECT_EQ(c.error, ErrorCode::kNone);
    EXPECT_FALSE(c.duplicate);
    m.record(7, 0, {i * 10, i * 10 + 9, i * 100, i * 100 + 9, 0});
  }
  auto dup = m.check(7, 0, 50, 59);
  ASSERT_TRUE(dup.duplicate);
  EXPECT_EQ(dup.duplicate->first_offset, 500);
  // Batch 0 fell out of the window: it is neither a duplicate nor in sequence.
  auto old = m.check(7, 0, 0, 9);
  EXPECT_FALSE(old.duplicate);
  EXPECT_EQ(old.error, ErrorCode::kOutOfOrderSequenceNumber);
}

TEST(ProducerState, SequenceWrapsAndEpochsFence) {
  ProducerStateMap m;
  m.record(1, 3, {INT32_MAX - 1, INT32_MAX, 0, 1, 0});
  EXPECT_EQ(m.check(1, 3, 0, 4).error, ErrorCode::kNone);
  EXPECT_EQ(m.check(1, 2, 0, 4).error, ErrorCode::kInvalidProducerEpoch);
  EXPECT_EQ(m.check(1, 4, 5, 6).error, ErrorCode::kOutOfOrderSequenceNumber);
  EXPECT_EQ(m.check(1, 4, 0, 6).error, ErrorCode::kNone);
  // Unknown producers and non-idempotent batches pass.
  EXPECT_EQ(m.check(2, 0, 17, 20).error, ErrorCode::kNone);
  EXPECT_EQ(m.check(-1, -1, -1, -1).error, ErrorCode::kNone);
}

}  // namespace
}  // namespace shale::broker
