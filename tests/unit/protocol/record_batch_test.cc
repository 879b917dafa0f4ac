#include "protocol/record_batch.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/crc32c.h"
#include "base/endian.h"

namespace shale::protocol {
namespace {

Buffer sample_batch(int n = 3) {
  RecordBatchBuilder b;
  b.base_offset(0).producer(42, 1, 5);
  for (int i = 0; i < n; ++i) {
    std::string v = "value-" + std::to_string(i);
    b.add(1000 + i, i == 0 ? std::nullopt : std::optional<std::string_view>("k"), v,
          {{"h1", "x"}, {"h2", std::nullopt}});
  }
  return b.build();
}

std::vector<uint8_t> mutable_copy(const Buffer& b) { return {b.begin(), b.end()}; }

TEST(RecordBatch, BuilderOutputParsesAndValidates) {
  Buffer raw = sample_batch();
  auto b = RecordBatch::parse(raw);
  ASSERT_TRUE(b.ok()) << b.error().to_string();
  const BatchHeader& h = b->header();
  EXPECT_EQ(h.magic, 2);
  EXPECT_EQ(h.record_count, 3);
  EXPECT_EQ(h.last_offset_delta, 2);
  EXPECT_EQ(h.base_timestamp, 1000);
  EXPECT_EQ(h.max_timestamp, 1002);
  EXPECT_EQ(h.producer_id, 42);
  EXPECT_EQ(h.base_sequence, 5);
  EXPECT_EQ(h.compression(), Compression::kNone);
  EXPECT_EQ(h.total_size(), raw.size());
  EXPECT_TRUE(b->validate(OffsetCheck::kProduce).ok());
  EXPECT_EQ(b->compute_crc(), h.crc);
}

TEST(RecordBatch, IteratesRecordsAndHeadersWithoutCopying) {
  Buffer raw = sample_batch();
  auto b = RecordBatch::parse(raw);
  ASSERT_TRUE(b.ok());
  std::vector<std::string> values;
  int headers = 0;
  Status st = b->for_each_record([&](const RecordView& r) {
    values.emplace_back(*r.value);
    EXPECT_GE(reinterpret_cast<const uint8_t*>(r.value->data()), raw.data());
    EXPECT_LT(reinterpret_cast<const uint8_t*>(r.value->data()), raw.data() + raw.size());
    EXPECT_EQ(r.header_count, 2);
    Status hs = r.for_each_header([&](const RecordHeaderView& h) {
      ++headers;
      if (h.key == "h2") {
        EXPECT_FALSE(h.value.has_value());
      }
    });
    EXPECT_TRUE(hs.ok());
  });
  ASSERT_TRUE(st.ok()) << st.error().to_string();
  EXPECT_EQ(values, (std::vector<std::string>{"value-0", "value-1", "value-2"}));
  EXPECT_EQ(headers, 6);
}

TEST(RecordBatch, NullKeyIsPreserved) {
  auto b = RecordBatch::parse(sample_batch());
  ASSERT_TRUE(b.ok());
  int i = 0;
  ASSERT_TRUE(b->for_each_record([&](const RecordView& r) {
                 EXPECT_EQ(r.key.has_value(), i != 0);
                 EXPECT_EQ(r.offset_delta, i);
                 EXPECT_EQ(r.timestamp_delta, i);
                 ++i;
               }).ok());
}

TEST(RecordBatch, CorruptCrcIsCorruptMessage) {
  auto bytes = mutable_copy(sample_batch());
  bytes.back() ^= 0x01;
  auto b = RecordBatch::parse(Buffer::take(std::move(bytes)));
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().code, Errc::kCorruption);
  EXPECT_EQ(batch_error_code(b.error()), ErrorCode::kCorruptMessage);
}

TEST(RecordBatch, CrcCanBeSkipped) {
  auto bytes = mutable_copy(sample_batch());
  bytes[17] ^= 0xff;
  EXPECT_TRUE(RecordBatch::parse(Buffer::take(std::move(bytes)), /*verify_crc=*/false).ok());
}

TEST(RecordBatch, WrongMagicIsUnsupportedForMessageFormat) {
  for (uint8_t magic : {0, 1, 3}) {
    auto bytes = mutable_copy(sample_batch());
    bytes[16] = magic;
    auto b = RecordBatch::parse(Buffer::take(std::move(bytes)));
    ASSERT_FALSE(b.ok());
    EXPECT_EQ(b.error().code, Errc::kUnsupported);
    EXPECT_EQ(batch_error_code(b.error()), ErrorCode::kUnsupportedForMessageFormat);
  }
}

TEST(RecordBatch, EveryTruncationFails) {
  Buffer raw = sample_batch();
  for (size_t n = 0; n < raw.size(); ++n) {
    auto b = RecordBatch::parse(raw.slice(0, n));
    ASSERT_FALSE(b.ok()) << n;
    if (n > 16) {
      EXPECT_EQ(b.error().code, Errc::kCorruption) << n;
    }
  }
}

TEST(RecordBatch, BatchLengthBelowHeaderFails) {
  auto bytes = mutable_copy(sample_batch());
  be::store32(bytes.data() + 8, 10);
  EXPECT_FALSE(RecordBatch::parse(Buffer::take(std::move(bytes)), false).ok());
}

// Recomputes the CRC so that only the inconsistency under test remains.
Buffer with_fixed_crc(std::vector<uint8_t> bytes) {
  be::store32(bytes.data() + 17, crc32c::value(bytes.data() + 21, bytes.size() - 21));
  return Buffer::take(std::move(bytes));
}

TEST(RecordBatch, RecordCountMismatchIsCorrupt) {
  for (int32_t count : {2, 4, -1, 1000000}) {
    auto bytes = mutable_copy(sample_batch());
    be::store32(bytes.data() + 57, static_cast<uint32_t>(count));
    auto b = RecordBatch::parse(with_fixed_crc(std::move(bytes)));
    if (!b.ok()) {
      EXPECT_EQ(b.error().code, Errc::kCorruption);
      continue;
    }
    Status st = b->validate(OffsetCheck::kMonotonic);
    ASSERT_FALSE(st.ok()) << count;
    EXPECT_EQ(st.error().code, Errc::kCorruption);
  }
}

TEST(RecordBatch, LastOffsetDeltaMismatchFailsProduceCheck) {
  auto bytes = mutable_copy(sample_batch());
  be::store32(bytes.data() + 23, 5);
  auto b = RecordBatch::parse(with_fixed_crc(std::move(bytes)));
  ASSERT_TRUE(b.ok());
  EXPECT_FALSE(b->validate(OffsetCheck::kProduce).ok());
  EXPECT_TRUE(b->validate(OffsetCheck::kMonotonic).ok());  // compaction may leave gaps
}

TEST(RecordBatch, RecordLengthOverrunIsCorrupt) {
  auto bytes = mutable_copy(sample_batch(1));
  bytes[61] = 0x7e;  // first record's length varint: 63 bytes, more than remain
  auto b = RecordBatch::parse(with_fixed_crc(std::move(bytes)));
  ASSERT_TRUE(b.ok());
  EXPECT_FALSE(b->validate(OffsetCheck::kMonotonic).ok());
}

TEST(RecordBatch, MultipleBatchesInOneFrame) {
  Buffer a = sample_batch(2);
  Buffer c = sample_batch(5);
  BufferBuilder frame;
  frame.append(a.data(), a.size());
  frame.append(c.data(), c.size());
  Buffer f = std::move(frame).freeze();
  BatchReader reader(f);
  std::vector<int32_t> counts;
  while (true) {
    auto b = reader.next();
    ASSERT_TRUE(b.ok()) << b.error().to_string();
    if (!b->has_value()) break;
    counts.push_back((*b)->header().record_count);
  }
  EXPECT_EQ(counts, (std::vector<int32_t>{2, 5}));
  EXPECT_EQ(reader.position(), f.size());
}

TEST(RecordBatch, PartialTailBatch) {
  Buffer a = sample_batch(2);
  Buffer c = sample_batch(5);
  BufferBuilder frame;
  frame.append(a.data(), a.size());
  frame.append(c.data(), c.size() - 3);
  Buffer f = std::move(frame).freeze();
  BatchReader strict(f);
  ASSERT_TRUE(strict.next().ok());
  EXPECT_FALSE(strict.next().ok());
  BatchReader lenient(f, /*allow_partial_tail=*/true);
  auto first = lenient.next();
  ASSERT_TRUE(first.ok() && first->has_value());
  auto second = lenient.next();
  ASSERT_TRUE(second.ok());
  EXPECT_FALSE(second->has_value());
}

TEST(RecordBatch, OffsetAndEpochRewriteKeepsCrcAndRecords) {
  Buffer raw = sample_batch();
  auto b = RecordBatch::parse(raw);
  ASSERT_TRUE(b.ok());
  RecordBatch::Rewrite rw;
  rw.base_offset = 1234567;
  rw.partition_leader_epoch = 9;
  BufferChain out = b->rewrite(rw);
  ASSERT_EQ(out.parts().size(), 2u);
  // The record area is the original slice, not a copy.
  EXPECT_EQ(out.parts()[1].data(), raw.data() + kBatchHeaderSize);
  EXPECT_EQ(out.parts()[1].size(), raw.size() - kBatchHeaderSize);
  auto again = RecordBatch::parse(out.flatten());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->header().base_offset, 1234567);
  EXPECT_EQ(again->header().partition_leader_epoch, 9);
  EXPECT_EQ(again->header().crc, b->header().crc);  // not covered by the CRC
  Buffer flat = out.flatten();
  EXPECT_EQ(flat.view().substr(kBatchHeaderSize), raw.view().substr(kBatchHeaderSize));
  EXPECT_EQ(flat.view().substr(16), raw.view().substr(16));
}

TEST(RecordBatch, LogAppendTimeRewriteRecomputesCrc) {
  Buffer raw = sample_batch();
  auto b = RecordBatch::parse(raw);
  ASSERT_TRUE(b.ok());
  RecordBatch::Rewrite rw;
  rw.log_append_time = 99999;
  Buffer flat = b->rewrite(rw).flatten();
  auto again = RecordBatch::parse(flat);
  ASSERT_TRUE(again.ok()) << again.error().to_string();
  EXPECT_EQ(again->header().timestamp_type(), TimestampType::kLogAppendTime);
  EXPECT_EQ(again->header().max_timestamp, 99999);
  EXPECT_NE(again->header().crc, b->header().crc);
  EXPECT_EQ(flat.view().substr(kBatchHeaderSize), raw.view().substr(kBatchHeaderSize));
}

TEST(RecordBatch, RewriteInPlaceOnMutableHeader) {
  Buffer raw = sample_batch();
  auto b = RecordBatch::parse(raw);
  ASSERT_TRUE(b.ok());
  uint8_t header[kBatchHeaderSize];
  RecordBatch::Rewrite rw;
  rw.base_offset = 77;
  BatchHeader h = b->rewrite_header(rw, header);
  EXPECT_EQ(h.base_offset, 77);
  EXPECT_EQ(decode_batch_header(header), h);
}

TEST(RecordBatch, HeaderEncodeDecodeRoundTrip) {
  BatchHeader h;
  h.base_offset = -5;
  h.batch_length = 100;
  h.attributes = 0x1b;
  h.crc = 0xdeadbeef;
  h.record_count = 3;
  uint8_t buf[kBatchHeaderSize];
  encode_batch_header(h, buf);
  EXPECT_EQ(decode_batch_header(buf), h);
  EXPECT_EQ(h.compression(), Compression::kLz4);
  EXPECT_TRUE(h.is_transactional());
  EXPECT_EQ(h.timestamp_type(), TimestampType::kLogAppendTime);
}

TEST(RecordBatch, EmptyBatchIsValid) {
  RecordBatchBuilder bb;
  auto b = RecordBatch::parse(bb.build());
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->header().record_count, 0);
  EXPECT_TRUE(b->validate(OffsetCheck::kMonotonic).ok());
}

TEST(Compression, CorruptPayloadsAreRejected) {
  const uint8_t junk[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17};
  for (auto c : {Compression::kGzip, Compression::kSnappy, Compression::kLz4, Compression::kZstd}) {
    auto r = decompress(c, junk, sizeof junk, 1 << 20);
    EXPECT_FALSE(r.ok()) << compression_name(c);
  }
  auto none = decompress(Compression::kNone, junk, sizeof junk, 1 << 20);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->size(), sizeof junk);
  EXPECT_FALSE(decompress(Compression::kNone, junk, sizeof junk, 4).ok());
}

TEST(Compression, EveryCodecRoundTrips) {
  std::string text;
  for (int i = 0; i < 5000; ++i) text += "record " + std::to_string(i % 97) + ";";  // > 32 KiB
  const auto* in = reinterpret_cast<const uint8_t*>(text.data());
  for (auto c : {Compression::kNone, Compression::kGzip, Compression::kSnappy, Compression::kLz4,
                 Compression::kZstd}) {
    auto packed = compress(c, in, text.size());
    ASSERT_TRUE(packed.ok()) << compression_name(c);
    if (c != Compression::kNone) {
      EXPECT_LT(packed->size(), text.size()) << compression_name(c);
    }
    auto back = decompress(c, packed->data(), packed->size(), 1 << 20);
    ASSERT_TRUE(back.ok()) << compression_name(c) << ": " << back.error().to_string();
    EXPECT_EQ(back->view(), text) << compression_name(c);
    auto empty = compress(c, in, 0);
    ASSERT_TRUE(empty.ok());
    auto none = decompress(c, empty->data(), empty->size(), 1 << 20);
    ASSERT_TRUE(none.ok()) << compression_name(c);
    EXPECT_EQ(none->size(), 0u);
  }
}

// A topic's compression.type: the broker recompresses a batch, keeping every header field but
// the codec bits, the length and the CRC.
TEST(RecordBatch, RecompressedKeepsRecordsAndHeader) {
  auto orig = RecordBatch::parse(sample_batch(50));
  ASSERT_TRUE(orig.ok());
  std::vector<std::string> want;
  ASSERT_TRUE(
      orig->for_each_record([&](const RecordView& r) { want.emplace_back(*r.value); }).ok());
  Compression chain[] = {Compression::kZstd, Compression::kSnappy, Compression::kGzip,
                         Compression::kLz4, Compression::kNone};
  RecordBatch cur = *orig;
  for (Compression c : chain) {
    auto re = cur.recompressed(c);
    ASSERT_TRUE(re.ok()) << compression_name(c) << ": " << re.error().to_string();
    const BatchHeader& h = re->header();
    EXPECT_EQ(h.compression(), c);
    EXPECT_EQ(h.record_count, 50);
    EXPECT_EQ(h.last_offset_delta, 49);
    EXPECT_EQ(h.producer_id, 42);
    EXPECT_EQ(h.base_sequence, 5);
    EXPECT_EQ(h.base_timestamp, orig->header().base_timestamp);
    EXPECT_EQ(h.max_timestamp, orig->header().max_timestamp);
    EXPECT_EQ(h.total_size(), re->bytes().size());
    EXPECT_EQ(re->compute_crc(), h.crc);
    EXPECT_TRUE(re->validate(OffsetCheck::kProduce).ok());
    std::vector<std::string> got;
    ASSERT_TRUE(re->for_each_record([&](const RecordView& r) { got.emplace_back(*r.value); }).ok());
    EXPECT_EQ(got, want) << compression_name(c);
    cur = *re;
  }
  EXPECT_EQ(cur.bytes().view(), orig->bytes().view());  // back to uncompressed: the same bytes
}

}  // namespace
}  // namespace shale::protocol
