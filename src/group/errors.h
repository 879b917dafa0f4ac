// Kafka error codes the group coordinator returns, with the exact numbers of Apache Kafka's
// org.apache.kafka.common.protocol.Errors. The coordinator does not depend on the generated
// protocol codecs (module protocol/), so it keeps its own copy of the few codes it needs; the
// broker copies these int16 values into responses unchanged.
// Thread-safety: constants only.
#pragma once

#include <cstdint>

namespace shale::group::err {

inline constexpr int16_t kUnknownServerError = -1;
inline constexpr int16_t kNone = 0;
inline constexpr int16_t kUnknownTopicOrPartition = 3;
inline constexpr int16_t kOffsetMetadataTooLarge = 12;
inline constexpr int16_t kCoordinatorLoadInProgress = 14;
inline constexpr int16_t kCoordinatorNotAvailable = 15;
inline constexpr int16_t kNotCoordinator = 16;
inline constexpr int16_t kIllegalGeneration = 22;
inline constexpr int16_t kInconsistentGroupProtocol = 23;
inline constexpr int16_t kInvalidGroupId = 24;
inline constexpr int16_t kUnknownMemberId = 25;
inline constexpr int16_t kInvalidSessionTimeout = 26;
inline constexpr int16_t kRebalanceInProgress = 27;
inline constexpr int16_t kInvalidCommitOffsetSize = 28;
inline constexpr int16_t kInvalidRequest = 42;
inline constexpr int16_t kNonEmptyGroup = 68;
inline constexpr int16_t kGroupIdNotFound = 69;
inline constexpr int16_t kMemberIdRequired = 79;
inline constexpr int16_t kGroupMaxSizeReached = 81;
inline constexpr int16_t kFencedInstanceId = 82;
inline constexpr int16_t kGroupSubscribedToTopic = 86;
inline constexpr int16_t kUnstableOffsetCommit = 88;

}  // namespace shale::group::err
