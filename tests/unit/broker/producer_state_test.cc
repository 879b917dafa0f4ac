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
  // Non-idempotent batches pass; so does an unknown producer's first batch at sequence 0.
  EXPECT_EQ(m.check(-1, -1, -1, -1).error, ErrorCode::kNone);
  EXPECT_EQ(m.check(2, 0, 0, 3).error, ErrorCode::kNone);
  EXPECT_EQ(m.check(2, 5, 0, 3).error, ErrorCode::kNone);
}

// The cluster.etcd_leader_killed flake: a partition being opened answered a producer's first
// request (sequence 0) NOT_LEADER_OR_FOLLOWER and then accepted the request pipelined behind it
// (sequence 1) once it served; the retry of sequence 0 was then out of order, which librdkafka
// treats as a fatal "sequence desynchronization". A producer unknown here must start at 0.
TEST(ProducerState, UnknownProducerMustStartAtSequenceZero) {
  ProducerStateMap m;
  auto later = m.check(9, 0, 1, 1);
  EXPECT_EQ(later.error, ErrorCode::kUnknownProducerId);
  EXPECT_FALSE(later.duplicate);
  EXPECT_EQ(m.check(9, 0, 17, 20).error, ErrorCode::kUnknownProducerId);
  // The retry of the refused first batch is accepted, and the next one follows it.
  ASSERT_EQ(m.check(9, 0, 0, 0).error, ErrorCode::kNone);
  m.record(9, 0, {0, 0, 0, 0, 0});
  EXPECT_EQ(m.check(9, 0, 1, 1).error, ErrorCode::kNone);
  // After the client bumps its epoch it restarts at 0, which a partition new to it accepts.
  EXPECT_EQ(m.check(10, 1, 0, 4).error, ErrorCode::kNone);
  EXPECT_EQ(m.check(10, 1, 5, 6).error, ErrorCode::kUnknownProducerId);
}

}  // namespace
}  // namespace shale::broker
