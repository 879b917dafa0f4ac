#include "protocol/errors.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "protocol/generated/api_table.h"

namespace shale::protocol {
namespace {

TEST(Errors, TableIsDenseAndOrdered) {
  int16_t expect = -1;
  std::set<std::string> names;
  for (const ErrorInfo& e : all_errors()) {
    EXPECT_EQ(static_cast<int16_t>(e.code), expect);
    EXPECT_TRUE(names.insert(e.name).second) << e.name;
    ++expect;
  }
  EXPECT_EQ(all_errors().size(), 129u);
}

TEST(Errors, WellKnownCodes) {
  EXPECT_STREQ(error_name(ErrorCode::kNone), "NONE");
  EXPECT_EQ(static_cast<int>(ErrorCode::kNotLeaderOrFollower), 6);
  EXPECT_STREQ(error_name(ErrorCode::kNotLeaderOrFollower), "NOT_LEADER_OR_FOLLOWER");
  EXPECT_TRUE(is_retriable(ErrorCode::kNotLeaderOrFollower));
  EXPECT_EQ(static_cast<int>(ErrorCode::kUnsupportedVersion), 35);
  EXPECT_FALSE(is_retriable(ErrorCode::kUnsupportedVersion));
  EXPECT_EQ(static_cast<int>(ErrorCode::kCorruptMessage), 2);
  EXPECT_TRUE(is_retriable(ErrorCode::kCorruptMessage));
  EXPECT_EQ(static_cast<int>(ErrorCode::kUnsupportedForMessageFormat), 43);
  EXPECT_EQ(static_cast<int>(ErrorCode::kUnknownTopicId), 100);
  EXPECT_TRUE(is_retriable(ErrorCode::kUnknownTopicId));
  EXPECT_STREQ(error_name(ErrorCode::kUnknownServerError), "UNKNOWN_SERVER_ERROR");
  EXPECT_EQ(find_error(30000), nullptr);
  EXPECT_EQ(find_error(-2), nullptr);
  EXPECT_STREQ(error_name(static_cast<ErrorCode>(999)), "UNKNOWN_ERROR_CODE");
}

TEST(ApiTable, KeysAreOrderedAndMatchNames) {
  int16_t prev = -1;
  for (const ApiInfo& a : all_apis()) {
    EXPECT_GT(static_cast<int16_t>(a.key), prev);
    prev = static_cast<int16_t>(a.key);
    EXPECT_LE(a.min_version, a.max_version);
    EXPECT_EQ(find_api(a.key), &a);
  }
  EXPECT_EQ(find_api(int16_t{-1}), nullptr);
  EXPECT_EQ(find_api(int16_t{1000}), nullptr);
  // Kafka 4 removed the ZooKeeper-era inter-broker APIs: keys 4-7 have no entry.
  for (int16_t k = 4; k <= 7; ++k) EXPECT_EQ(find_api(k), nullptr) << k;
  EXPECT_NE(find_api(int16_t{8}), nullptr);
  EXPECT_STREQ(api_name(ApiKey::kProduce), "Produce");
  EXPECT_STREQ(api_name(ApiKey::kApiVersions), "ApiVersions");
}

TEST(ApiTable, VersionsFromSchemas) {
  const ApiInfo* produce = find_api(ApiKey::kProduce);
  EXPECT_EQ(produce->min_version, 3);  // KIP-896: Kafka 4 removed v0-2
  EXPECT_EQ(produce->max_version, 13);
  EXPECT_EQ(produce->first_flexible_version, 9);
  EXPECT_FALSE(produce->latest_version_unstable);
  const ApiInfo* fetch = find_api(ApiKey::kFetch);
  EXPECT_EQ(fetch->min_version, 4);
  EXPECT_EQ(fetch->max_version, 18);
  EXPECT_EQ(fetch->first_flexible_version, 12);
  const ApiInfo* sasl = find_api(ApiKey::kSaslHandshake);
  EXPECT_EQ(sasl->first_flexible_version, -1);
  EXPECT_FALSE(sasl->is_flexible(1));
  const ApiInfo* offset_commit = find_api(ApiKey::kOffsetCommit);
  EXPECT_TRUE(offset_commit->latest_version_unstable);
  EXPECT_EQ(offset_commit->max_version, 10);
  EXPECT_EQ(offset_commit->max_stable_version(), 9);
  EXPECT_FALSE(find_api(ApiKey::kEndTxn)->latest_version_unstable);
}

TEST(ApiTable, HeaderVersions) {
  EXPECT_EQ(request_header_version(ApiKey::kProduce, 8), 1);
  EXPECT_EQ(request_header_version(ApiKey::kProduce, 9), 2);
  EXPECT_EQ(response_header_version(ApiKey::kProduce, 8), 0);
  EXPECT_EQ(response_header_version(ApiKey::kProduce, 9), 1);
  // Keys without an API (Kafka 4 removed ControlledShutdown, key 7) get the non-flexible header.
  EXPECT_EQ(request_header_version(static_cast<ApiKey>(7), 0), 1);
  EXPECT_EQ(response_header_version(static_cast<ApiKey>(7), 3), 0);
  // KIP-511: ApiVersions responses always use header v0.
  EXPECT_EQ(request_header_version(ApiKey::kApiVersions, 3), 2);
  EXPECT_EQ(response_header_version(ApiKey::kApiVersions, 3), 0);
  EXPECT_EQ(request_header_version(ApiKey::kSaslHandshake, 1), 1);
}

}  // namespace
}  // namespace shale::protocol
