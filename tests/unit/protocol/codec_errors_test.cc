// Error paths of the generated decoders/encoders: truncation at every byte, hostile lengths
// and counts, nulls where a version forbids them, unknown tagged fields, version-gated fields.
#include <gtest/gtest.h>

#include <vector>

#include "protocol/generated/api_versions_request.h"
#include "protocol/generated/fetch_response.h"
#include "protocol/generated/join_group_request.h"
#include "protocol/generated/metadata_request.h"
#include "protocol/generated/produce_request.h"
#include "protocol/generated/request_header.h"

namespace shale::protocol {
namespace {

template <typename T>
Buffer encode(const T& m, int16_t v) {
  BufferBuilder b;
  Writer w(b);
  Status st = m.encode(w, v);
  EXPECT_TRUE(st.ok()) << st.error().to_string();
  return std::move(b).freeze();
}

template <typename T>
Status decode(T& m, const Buffer& b, int16_t v) {
  Reader r(b);
  return m.decode(r, v);
}

ProduceRequest sample_produce() {
  ProduceRequest p;
  p.transactional_id = "txn";
  p.acks = -1;
  p.timeout_ms = 30000;
  auto& t = p.topic_data.emplace_back();
  t.name = "topic";
  auto& part = t.partition_data.emplace_back();
  part.index = 3;
  part.records = Buffer::copy("0123456789");
  return p;
}

TEST(CodecErrors, EveryTruncationOfProduceFails) {
  ProduceRequest p = sample_produce();
  for (int16_t v = 3; v <= ProduceRequest::kMaxVersion; ++v) {
    if (v >= 13) {  // v13 names topics by id only
      p.topic_data[0].name.clear();
      p.topic_data[0].topic_id.bytes[15] = 7;
    }
    Buffer full = encode(p, v);
    for (size_t n = 0; n < full.size(); ++n) {
      ProduceRequest out;
      EXPECT_FALSE(decode(out, full.slice(0, n), v).ok()) << "v" << v << " prefix " << n;
    }
    ProduceRequest out;
    ASSERT_TRUE(decode(out, full, v).ok());
    EXPECT_TRUE(out == p);
  }
}

TEST(CodecErrors, EveryTruncationOfFetchResponseFails) {
  FetchResponse f;
  f.session_id = 9;
  auto& t = f.responses.emplace_back();
  t.topic = "t";
  auto& part = t.partitions.emplace_back();
  part.high_watermark = 100;
  part.current_leader.leader_id = 4;  // a tagged field in v12+
  part.records = Buffer::copy("abc");
  for (int16_t v = 12; v <= FetchResponse::kMaxVersion; ++v) {
    Buffer full = encode(f, v);
    for (size_t n = 0; n < full.size(); ++n) {
      FetchResponse out;
      EXPECT_FALSE(decode(out, full.slice(0, n), v).ok()) << "v" << v << " prefix " << n;
    }
  }
}

TEST(CodecErrors, RecordsDecodeAsSliceOfTheFrame) {
  ProduceRequest p = sample_produce();
  Buffer full = encode(p, 9);
  ProduceRequest out;
  ASSERT_TRUE(decode(out, full, 9).ok());
  const Buffer& rec = *out.topic_data[0].partition_data[0].records;
  EXPECT_EQ(rec.view(), "0123456789");
  EXPECT_GE(rec.data(), full.data());
  EXPECT_LE(rec.data() + rec.size(), full.data() + full.size());
}

TEST(CodecErrors, NegativeArrayCountFails) {
  // MetadataRequest v1: topics int32 count, nullable from v1: -1 is null, -5 is garbage.
  Buffer b = Buffer::take({0xff, 0xff, 0xff, 0xfb});
  MetadataRequest m;
  EXPECT_FALSE(decode(m, b, 1).ok());
  Buffer null_topics = Buffer::take({0xff, 0xff, 0xff, 0xff});
  ASSERT_TRUE(decode(m, null_topics, 1).ok());
  EXPECT_FALSE(m.topics.has_value());
  // v0 does not allow a null topic list.
  EXPECT_FALSE(decode(m, null_topics, 0).ok());
}

TEST(CodecErrors, OversizeArrayCountFails) {
  Buffer b = Buffer::take({0x3b, 0x9a, 0xca, 0x00, 0, 1, 'a'});  // 1e9 topics
  MetadataRequest m;
  Status st = decode(m, b, 1);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, Errc::kCorruption);
}

TEST(CodecErrors, NullStringInNonNullableFieldFails) {
  // ProduceRequest v2: acks, timeout, 1 topic whose name is null.
  Buffer b = Buffer::take({0, 1, 0, 0, 0, 10, 0, 0, 0, 1, 0xff, 0xff, 0, 0, 0, 0});
  ProduceRequest p;
  EXPECT_FALSE(decode(p, b, 2).ok());
}

TEST(CodecErrors, UnknownTaggedFieldsAreSkipped) {
  // ApiVersionsRequest v3: two compact strings, then a tagged section with tag 99 (3 bytes).
  Buffer b = Buffer::take({2, 'c', 4, '1', '.', '0', 1, 99, 3, 'x', 'y', 'z'});
  ApiVersionsRequest a;
  ASSERT_TRUE(decode(a, b, 3).ok());
  EXPECT_EQ(a.client_software_name, "c");
  EXPECT_EQ(a.client_software_version, "1.0");
}

TEST(CodecErrors, TaggedFieldSizeBeyondFrameFails) {
  Buffer b = Buffer::take({2, 'c', 4, '1', '.', '0', 1, 99, 30, 'x'});
  ApiVersionsRequest a;
  EXPECT_FALSE(decode(a, b, 3).ok());
}

TEST(CodecErrors, TruncatedTagInsideItsSizeFails) {
  // FetchResponse v12 partition with tagged CurrentLeader (tag 1) whose declared size is 2 but
  // whose struct needs 9 bytes: the sub-reader must stop at the declared size.
  FetchResponse f;
  auto& part = f.responses.emplace_back().partitions.emplace_back();
  part.current_leader.leader_id = 1;
  Buffer good = encode(f, 12);
  std::vector<uint8_t> bytes(good.begin(), good.end());
  // Find the tag/size pair "1, 9" that precedes the LeaderIdAndEpoch value.
  bool patched = false;
  for (size_t i = 0; i + 1 < bytes.size(); ++i) {
    if (bytes[i] == 1 && bytes[i + 1] == 9 && i > 0 && bytes[i - 1] == 1) {
      bytes[i + 1] = 2;
      patched = true;
      break;
    }
  }
  ASSERT_TRUE(patched);
  FetchResponse out;
  EXPECT_FALSE(decode(out, Buffer::take(std::move(bytes)), 12).ok());
}

TEST(CodecErrors, KnownTaggedFieldsRoundTrip) {
  FetchResponse f;
  auto& part = f.responses.emplace_back().partitions.emplace_back();
  part.current_leader.leader_id = 7;
  part.current_leader.leader_epoch = 3;
  Buffer b = encode(f, 16);
  FetchResponse out;
  ASSERT_TRUE(decode(out, b, 16).ok());
  EXPECT_EQ(out.responses[0].partitions[0].current_leader.leader_id, 7);
  EXPECT_EQ(out.responses[0].partitions[0].current_leader.leader_epoch, 3);
  // A default tagged value is not written at all.
  FetchResponse plain;
  plain.responses.emplace_back().partitions.emplace_back();
  EXPECT_LT(plain.encoded_size(16), f.encoded_size(16));
}

TEST(CodecErrors, NonDefaultFieldAbsentInVersionFailsToEncode) {
  JoinGroupRequest j;
  j.group_instance_id = "static-1";  // GroupInstanceId exists from v5 and is not ignorable
  BufferBuilder b;
  Writer w(b);
  Status st = j.encode(w, 4);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("GroupInstanceId"), std::string::npos);
  j.group_instance_id.reset();
  BufferBuilder b2;
  Writer w2(b2);
  EXPECT_TRUE(j.encode(w2, 4).ok());
}

TEST(CodecErrors, IgnorableFieldIsDroppedSilently) {
  JoinGroupRequest plain;
  JoinGroupRequest j;
  j.reason = "dropped";  // ignorable; absent before v8
  BufferBuilder b;
  Writer w(b);
  ASSERT_TRUE(j.encode(w, 7).ok());
  EXPECT_EQ(b.size(), encode(plain, 7).size());
}

TEST(CodecErrors, RequestHeaderClientIdIsNeverCompact) {
  RequestHeader h;
  h.request_api_key = 18;
  h.request_api_version = 3;
  h.correlation_id = 1;
  h.client_id = "ab";
  Buffer b = encode(h, 2);
  const std::vector<uint8_t> want = {0, 18, 0, 3, 0, 0, 0, 1, 0, 2, 'a', 'b', 0};
  EXPECT_EQ(std::vector<uint8_t>(b.begin(), b.end()), want);
}

TEST(CodecErrors, NullNonNullableValueFailsToEncode) {
  MetadataRequest m;
  m.topics.reset();  // nullable from v1 only
  BufferBuilder b;
  Writer w(b);
  EXPECT_FALSE(m.encode(w, 0).ok());
  BufferBuilder b1;
  Writer w1(b1);
  EXPECT_TRUE(m.encode(w1, 1).ok());
}

TEST(CodecErrors, UnsupportedVersionIsRejected) {
  ProduceRequest p;
  Buffer b = Buffer::copy("");
  Status st = decode(p, b, ProduceRequest::kMaxVersion + 1);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, Errc::kUnsupported);
  st = decode(p, b, 2);  // KIP-896: Kafka 4 removed Produce v0-2
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, Errc::kUnsupported);
  BufferBuilder out;
  Writer w(out);
  EXPECT_FALSE(p.encode(w, -1).ok());
}

TEST(CodecErrors, SchemaDefaultsAreInitialised) {
  MetadataRequest m;
  EXPECT_TRUE(m.allow_auto_topic_creation);
  FetchResponse::PartitionData pd;
  EXPECT_EQ(pd.last_stable_offset, -1);
  EXPECT_EQ(pd.preferred_read_replica, -1);
  EXPECT_FALSE(pd.records.has_value());
  ProduceRequest p;
  EXPECT_FALSE(p.transactional_id.has_value());
}

TEST(CodecErrors, DecodeResetsPreviousContents) {
  ProduceRequest p = sample_produce();
  Buffer b = encode(ProduceRequest(), 3);
  ASSERT_TRUE(decode(p, b, 3).ok());
  EXPECT_TRUE(p.topic_data.empty());
  EXPECT_FALSE(p.transactional_id.has_value());
}

}  // namespace
}  // namespace shale::protocol
