// s3.wal.path in every spelling a Shale or AutoMQ configuration uses (app/wal_uri.h).
#include "app/wal_uri.h"

#include <gtest/gtest.h>

namespace shale::app {
namespace {

WalUri parse(const std::string& s) {
  auto w = parse_wal_uri(s);
  EXPECT_TRUE(w.ok()) << s << ": " << (w.ok() ? "" : w.error().message);
  return w.ok() ? std::move(w).value() : WalUri{};
}

std::string error(const std::string& s) {
  auto w = parse_wal_uri(s);
  return w.ok() ? std::string("accepted") : w.error().message;
}

TEST(WalUri, ShaleFileForms) {
  WalUri a = parse("file:///var/lib/shale/wal");
  EXPECT_EQ(a.kind, WalUri::Kind::kFile);
  EXPECT_EQ(a.path, "/var/lib/shale/wal");
  EXPECT_FALSE(a.capacity);
  EXPECT_EQ(parse("file://./data/wal").path, "./data/wal");  // the default, relative data.dir
  EXPECT_EQ(parse("/dev/nvme1n1").path, "/dev/nvme1n1");     // AutoMQ's old bare path
}

TEST(WalUri, AutoMQBlockWalLine) {
  WalUri w = parse("0@file:///dev/vdb?capacity=2147483648&iodepth=8&iops=3000");
  EXPECT_EQ(w.kind, WalUri::Kind::kFile);
  EXPECT_EQ(w.path, "/dev/vdb");
  ASSERT_TRUE(w.capacity);
  EXPECT_EQ(*w.capacity, 2147483648u);
  EXPECT_EQ(w.ignored, (std::vector<std::string>{"iodepth", "iops"}));
}

TEST(WalUri, AutoMQS3WalLine) {
  WalUri w = parse(
      "0@s3://wal-bucket?region=us-east-1&endpoint=http://127.0.0.1:9000&batchInterval=100&"
      "maxBytesInBatch=4194304&maxUnflushedBytes=268435456&maxInflightUploadCount=50");
  EXPECT_EQ(w.kind, WalUri::Kind::kObject);
  ASSERT_TRUE(w.bucket);
  EXPECT_EQ(w.bucket->bucket, "wal-bucket");
  EXPECT_EQ(w.bucket->endpoint, "http://127.0.0.1:9000");
  EXPECT_EQ(w.bucket->region, "us-east-1");
  EXPECT_TRUE(w.bucket->params.empty());  // the WAL's own parameters were taken out
  EXPECT_EQ(*w.batch_interval_ms, 100);
  EXPECT_EQ(*w.batch_bytes, 4194304u);
  EXPECT_EQ(*w.max_unflushed, 268435456u);
  EXPECT_EQ(w.ignored, (std::vector<std::string>{"maxInflightUploadCount"}));
  EXPECT_TRUE(w.prefix.empty());
}

TEST(WalUri, ObjectWalInTheDataBucket) {
  WalUri w = parse("object://wal");
  EXPECT_EQ(w.kind, WalUri::Kind::kObject);
  EXPECT_FALSE(w.bucket);
  EXPECT_EQ(w.prefix, "wal");
}

TEST(WalUri, BadSpellingsNameTheProblem) {
  EXPECT_NE(error("").find("must not be empty"), std::string::npos);
  EXPECT_NE(error("object://").find("needs a prefix"), std::string::npos);
  EXPECT_NE(error("mem://").find("cannot hold a WAL"), std::string::npos);
  EXPECT_NE(error("0@ftp://x").find("unknown scheme"), std::string::npos);
  EXPECT_NE(error("0@file:///w?capacity=-1").find("'capacity'"), std::string::npos);
  EXPECT_NE(error("0@file:///w?flux=1").find("unknown parameter 'flux'"), std::string::npos);
  EXPECT_NE(error("0@s3://b?batchInterval=0").find("'batchInterval'"), std::string::npos);
  EXPECT_NE(error("file://rel/w?capacity=1").find("absolute path"), std::string::npos);
  EXPECT_NE(error("0@file://rel").find("absolute path"), std::string::npos);
}

}  // namespace
}  // namespace shale::app
