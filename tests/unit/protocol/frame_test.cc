#include "protocol/frame.h"

#include <gtest/gtest.h>

#include "base/endian.h"
#include "protocol/generated/api_versions_request.h"
#include "protocol/generated/api_versions_response.h"
#include "protocol/generated/fetch_response.h"
#include "protocol/generated/metadata_request.h"

namespace shale::protocol {
namespace {

TEST(Frame, RequestFrameRoundTrip) {
  MetadataRequest m;
  m.topics->emplace_back().name = "orders";
  auto frame = encode_request_frame(17, std::string("cli"), 12, m);
  ASSERT_TRUE(frame.ok());
  ASSERT_GE(frame->size(), 4u);
  EXPECT_EQ(be::load32(frame->data()), frame->size() - 4);
  Reader r(frame->slice(4, frame->size()));
  RequestHeader h;
  ASSERT_TRUE(decode_request_header(r, h).ok());
  EXPECT_EQ(h.request_api_key, 3);
  EXPECT_EQ(h.request_api_version, 12);
  EXPECT_EQ(h.correlation_id, 17);
  EXPECT_EQ(h.client_id, "cli");
  MetadataRequest out;
  ASSERT_TRUE(out.decode(r, h.request_api_version).ok());
  EXPECT_EQ(out, m);
  EXPECT_EQ(r.remaining(), 0u);
}

TEST(Frame, UnknownApiKeyKeepsCorrelationId) {
  Buffer b = Buffer::take({0x03, 0xe8, 0, 0, 0, 0, 0, 42, 0xff, 0xff});
  Reader r(b);
  RequestHeader h;
  Status st = decode_request_header(r, h);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, Errc::kUnsupported);
  EXPECT_EQ(h.correlation_id, 42);
}

TEST(Frame, UnsupportedVersionKeepsCorrelationId) {
  // ApiVersions v99 from a newer client: header v2 (flexible, like every newer version).
  Buffer b = Buffer::take({0, 18, 0, 99, 0, 0, 0, 5, 0, 0, 0});
  Reader r(b);
  RequestHeader h;
  Status st = decode_request_header(r, h);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, Errc::kUnsupported);
  EXPECT_EQ(h.correlation_id, 5);
  EXPECT_EQ(h.request_api_version, 99);
}

TEST(Frame, TruncatedHeaderFails) {
  Buffer b = Buffer::take({0, 18, 0});
  Reader r(b);
  RequestHeader h;
  EXPECT_FALSE(decode_request_header(r, h).ok());
}

TEST(Frame, ApiVersionsResponseUsesHeaderV0) {
  ApiVersionsResponse resp;
  auto frame = encode_response_frame(9, 3, resp);
  ASSERT_TRUE(frame.ok());
  Reader r(frame->slice(4, frame->size()));
  ResponseHeader h;
  ASSERT_TRUE(decode_response_header(r, ApiKey::kApiVersions, 3, h).ok());
  EXPECT_EQ(h.correlation_id, 9);
  // With header v0 the body starts right after the correlation id: error_code first.
  EXPECT_EQ(r.position(), 4u);
  ApiVersionsResponse out;
  ASSERT_TRUE(out.decode(r, 3).ok());
}

TEST(Frame, FlexibleResponseHeaderHasTaggedSection) {
  MetadataRequest m;
  Writer c = Writer::counter();
  encode_response_header(c, ApiKey::kMetadata, 9, 1);
  EXPECT_EQ(c.size(), 5u);
  Writer c0 = Writer::counter();
  encode_response_header(c0, ApiKey::kMetadata, 8, 1);
  EXPECT_EQ(c0.size(), 4u);
}

TEST(Frame, ZeroCopyResponseSharesRecordBatches) {
  FetchResponse f;
  auto& t = f.responses.emplace_back();
  t.topic = "t";
  Buffer big = Buffer::copy(std::string(64 * 1024, 'r'));
  Buffer small = Buffer::copy(std::string(100, 's'));
  t.partitions.emplace_back().records = big;
  t.partitions.emplace_back().records = small;
  auto chain = encode_response_chain(3, 12, f);
  ASSERT_TRUE(chain.ok());
  auto flat = encode_response_frame(3, 12, f);
  ASSERT_TRUE(flat.ok());
  EXPECT_EQ(chain->flatten().view(), flat->view());
  bool shared = false;
  for (const Buffer& part : chain->parts()) {
    if (part.data() == big.data()) shared = true;
    EXPECT_NE(part.data(), small.data());  // below the threshold: copied
  }
  EXPECT_TRUE(shared);
  EXPECT_EQ(chain->size(), flat->size());
}

}  // namespace
}  // namespace shale::protocol
