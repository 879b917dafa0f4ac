// Reads the topic list out of a ConsumerProtocolSubscription (the JoinGroup metadata that
// Kafka consumers send with protocol type "consumer"), so that OffsetDelete can answer
// GROUP_SUBSCRIBED_TO_TOPIC and offset expiration can spare subscribed topics. Format
// (ConsumerProtocolSubscription.json in the kafka-clients jar, not flexible): int16 version, then
// Topics as int32 count + int16-length strings; later fields are not needed here. Like Kafka's
// ConsumerProtocol, a version newer than known is read with the fields this code knows.
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace shale::group {

inline constexpr std::string_view kConsumerProtocolType = "consumer";

Result<std::vector<std::string>> subscription_topics(std::string_view metadata);

}  // namespace shale::group
