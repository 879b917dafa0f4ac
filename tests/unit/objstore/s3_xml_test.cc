#include <gtest/gtest.h>

#include "objstore/s3_xml.h"

namespace shale::objstore::s3xml {
namespace {

constexpr const char* kListPage1 = R"(<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Name>bucket</Name><Prefix>a/</Prefix><KeyCount>2</KeyCount><MaxKeys>2</MaxKeys>
  <IsTruncated>true</IsTruncated>
  <Contents><Key>a/1</Key><LastModified>2009-10-12T17:50:30.000Z</LastModified>
    <ETag>"fba9dede5f27731c9771645a39863328"</ETag><Size>434234</Size>
    <StorageClass>STANDARD</StorageClass></Contents>
  <Contents><Key>a/&amp;2</Key><LastModified>2009-10-12T17:50:31Z</LastModified><Size>0</Size></Contents>
  <NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>
</ListBucketResult>)";

TEST(S3Xml, ParsesListObjectsV2) {
  auto p = parse_list_objects_v2(kListPage1);
  ASSERT_TRUE(p.ok()) << p.error().to_string();
  ASSERT_EQ(p->objects.size(), 2u);
  EXPECT_EQ(p->objects[0].key, "a/1");
  EXPECT_EQ(p->objects[0].size, 434234u);
  EXPECT_EQ(p->objects[0].mtime_ms, 1255369830000);
  EXPECT_EQ(p->objects[1].key, "a/&2");
  EXPECT_EQ(p->objects[1].mtime_ms, 1255369831000);
  EXPECT_TRUE(p->truncated);
  EXPECT_EQ(p->next_token, "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=");

  // No namespace, last page, no objects.
  auto last = parse_list_objects_v2(
      "<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>");
  ASSERT_TRUE(last.ok());
  EXPECT_FALSE(last->truncated);
  EXPECT_TRUE(last->objects.empty());
}

TEST(S3Xml, RejectsMalformedListings) {
  std::string full = kListPage1;
  for (size_t cut : {0ul, 10ul, full.size() / 2, full.size() - 3}) {
    auto r = parse_list_objects_v2(full.substr(0, cut));
    ASSERT_FALSE(r.ok()) << cut;
    EXPECT_EQ(r.error().code, Errc::kCorruption);
    EXPECT_TRUE(r.error().retryable);
  }
  for (const char* bad : {
           "<Other/>",
           "not xml at all",
           "<ListBucketResult><Contents><Key>k</Key></Contents></ListBucketResult>",
           "<ListBucketResult><Contents><Key>k</Key><Size>-1</Size></Contents></ListBucketResult>",
           "<ListBucketResult><Contents><Key>k</Key><Size>12x</Size></Contents></ListBucketResult>",
           "<ListBucketResult><Contents><Key></Key><Size>1</Size></Contents></ListBucketResult>",
           "<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>",
           "<!DOCTYPE x [<!ENTITY e SYSTEM \"file:///etc/passwd\">]><ListBucketResult>"
           "<Contents><Key>&e;</Key><Size>1</Size></Contents></ListBucketResult>",
       }) {
    EXPECT_FALSE(parse_list_objects_v2(bad).ok()) << bad;
  }
}

TEST(S3Xml, ParsesErrors) {
  auto e = parse_error(R"(<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>SignatureDoesNotMatch</Code><Message>The request signature we calculated does not match</Message><RequestId>4442587FB7D0A2F9</RequestId></Error>)");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->code, "SignatureDoesNotMatch");
  EXPECT_EQ(e->message, "The request signature we calculated does not match");
  EXPECT_TRUE(is_error_document("<Error><Code>InternalError</Code></Error>"));
  EXPECT_FALSE(is_error_document("<CompleteMultipartUploadResult/>"));
  EXPECT_FALSE(is_error_document(""));
  EXPECT_FALSE(parse_error("<Error><Message>no code</Message></Error>").ok());
  EXPECT_FALSE(parse_error("<Error><Code>Trunc").ok());
  EXPECT_FALSE(parse_error("").ok());
}

TEST(S3Xml, ParsesInitiateMultipart) {
  auto id = parse_initiate_multipart(
      R"(<InitiateMultipartUploadResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Bucket>b</Bucket><Key>k</Key><UploadId>VXBsb2FkIElEIGZvciA2aWWpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA</UploadId>
</InitiateMultipartUploadResult>)");
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(*id, "VXBsb2FkIElEIGZvciA2aWWpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA");
  EXPECT_FALSE(parse_initiate_multipart("<InitiateMultipartUploadResult/>").ok());
  EXPECT_FALSE(parse_initiate_multipart("<InitiateMultipartUploadResult><UploadId>x").ok());
  EXPECT_FALSE(parse_initiate_multipart("<Error><Code>x</Code></Error>").ok());
}

TEST(S3Xml, ParsesDeleteResult) {
  auto r = parse_delete_result(R"(<DeleteResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Deleted><Key>a</Key></Deleted>
  <Error><Key>b</Key><Code>AccessDenied</Code><Message>Access Denied</Message></Error>
</DeleteResult>)");
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].key, "b");
  EXPECT_EQ((*r)[0].code, "AccessDenied");
  EXPECT_TRUE(parse_delete_result("<DeleteResult/>")->empty());
  EXPECT_FALSE(parse_delete_result("<DeleteResult>").ok());
}

TEST(S3Xml, BuildsEscapedRequestBodies) {
  std::string d = build_delete_request({"a<b", "c&d"});
  EXPECT_NE(d.find("<Quiet>true</Quiet>"), std::string::npos);
  EXPECT_NE(d.find("<Key>a&lt;b</Key>"), std::string::npos);
  EXPECT_NE(d.find("<Key>c&amp;d</Key>"), std::string::npos);
  std::string c = build_complete_multipart({{1, "\"e1\""}, {2, "\"e2\""}});
  EXPECT_NE(c.find("<Part><PartNumber>1</PartNumber><ETag>&quot;e1&quot;</ETag></Part>"),
            std::string::npos);
  EXPECT_LT(c.find("<PartNumber>1<"), c.find("<PartNumber>2<"));
}

TEST(S3Xml, ParsesTimestamps) {
  EXPECT_EQ(parse_iso8601_ms("1970-01-01T00:00:00.000Z"), 0);
  EXPECT_EQ(parse_iso8601_ms("2009-10-12T17:50:30.123Z"), 1255369830123);
  EXPECT_EQ(parse_iso8601_ms("garbage"), -1);
  EXPECT_EQ(parse_iso8601_ms("2009-13-12T17:50:30.000Z"), -1);
}

}  // namespace
}  // namespace shale::objstore::s3xml
