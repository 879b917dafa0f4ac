// Stored value formats, MetaStore key layout, MetaGroupStore and ConsumerProtocol parsing.
#include <gtest/gtest.h>

#include "fake_meta_store.h"
#include "group/consumer_protocol.h"
#include "group/meta_group_store.h"
#include "group/record_codec.h"
#include "harness.h"

namespace shale::group::testing {
namespace {

GroupRecord sample_group() {
  GroupRecord g;
  g.group_id = "g/with%odd chars\xc3\xa9";
  g.protocol_type = "consumer";
  g.generation = 7;
  g.protocol_name = "range";
  g.leader = "m1";
  g.state_timestamp_ms = 1234567;
  g.members.push_back(StoredMember{"m1", std::nullopt, "c1", "/1.2.3.4", 30000, 10000,
                                   std::string("sub\0bytes", 9), "assign1"});
  g.members.push_back(StoredMember{"m2", "inst", "c2", "/5.6.7.8", 60000, 45000, "", ""});
  return g;
}

TEST(Codec, GroupRoundTrip) {
  GroupRecord g = sample_group();
  auto back = codec::decode_group(g.group_id, codec::encode_group(g));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, g);
  GroupRecord empty;
  empty.group_id = "e";
  auto e = codec::decode_group("e", codec::encode_group(empty));
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(*e, empty);
  EXPECT_FALSE(e->protocol_type.has_value());
}

TEST(Codec, TruncatedOrTrailingBytesAreCorruption) {
  std::string bytes = codec::encode_group(sample_group());
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto r = codec::decode_group("g", bytes.substr(0, n));
    ASSERT_FALSE(r.ok()) << n;
    EXPECT_EQ(r.error().code, Errc::kCorruption);
  }
  EXPECT_FALSE(codec::decode_group("g", bytes + "x").ok());
  std::string future = bytes;
  future[1] = 9;  // an unknown format version
  EXPECT_FALSE(codec::decode_group("g", future).ok());
}

TEST(Codec, OffsetRoundTrip) {
  OffsetValue v{42, 3, "meta", 999, std::nullopt};
  auto back = codec::decode_offset(codec::encode_offset(v));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, v);
  v.expire_timestamp_ms = 5000;
  back = codec::decode_offset(codec::encode_offset(v));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, v);
  std::string bytes = codec::encode_offset(v);
  EXPECT_FALSE(codec::decode_offset(bytes.substr(0, bytes.size() - 1)).ok());
}

TEST(Codec, KeysEscapeEverythingButSafeCharacters) {
  EXPECT_EQ(codec::escape("my-group_1.x"), "my-group_1.x");
  EXPECT_EQ(codec::escape("a/b%c d"), "a%2Fb%25c%20d");
  const std::string odd("g/\0%\xff", 5);
  auto k = codec::parse_key("groups/", codec::offset_key("groups/", odd, "to/pic", -1));
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(k->group_id, odd);
  EXPECT_FALSE(k->is_meta);
  EXPECT_EQ(k->topic, "to/pic");
  EXPECT_EQ(k->partition, -1);
  auto m = codec::parse_key("groups/", codec::meta_key("groups/", odd));
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(m->is_meta);
  EXPECT_EQ(m->group_id, odd);
  // A group id that is a prefix of another never shares its key prefix.
  EXPECT_NE(codec::group_prefix("r/", "a").substr(0, 4),
            codec::group_prefix("r/", "a/b").substr(0, 4));
  for (const char* bad :
       {"groups/g", "groups/g/other", "groups/g/offsets/t", "groups/g/offsets/t/x",
        "groups/%zz/meta", "groups/%4/meta", "other/g/meta"}) {
    EXPECT_FALSE(codec::parse_key("groups/", bad).ok()) << bad;
  }
}

TEST(MetaGroupStore, SaveLoadDelete) {
  FakeMetaStore meta;
  MetaGroupStore store(&meta, "shale/groups/");
  GroupRecord g = sample_group();
  ASSERT_TRUE(store.save_group(g).ok());
  ASSERT_TRUE(store
                  .save_offsets(g.group_id,
                                {OffsetRecord{"t", 0, OffsetValue{1, -1, "", 10, std::nullopt}},
                                 OffsetRecord{"t", 1, OffsetValue{2, -1, "", 10, std::nullopt}}},
                                {})
                  .ok());
  ASSERT_TRUE(
      store.save_offsets("only-offsets", {OffsetRecord{"u", 5, OffsetValue{9, 1, "x", 11, 99}}}, {})
          .ok());
  ASSERT_TRUE(store.save_offsets(g.group_id, {}, {TopicPartition{"t", 0}}).ok());
  auto all = store.load_all();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);
  const StoredGroup& a = (*all)[0].group_id == g.group_id ? (*all)[0] : (*all)[1];
  const StoredGroup& b = (*all)[0].group_id == g.group_id ? (*all)[1] : (*all)[0];
  ASSERT_TRUE(a.metadata.has_value());
  EXPECT_EQ(*a.metadata, g);
  ASSERT_EQ(a.offsets.size(), 1u);
  EXPECT_EQ(a.offsets[0].partition, 1);
  EXPECT_FALSE(b.metadata.has_value());
  ASSERT_EQ(b.offsets.size(), 1u);
  EXPECT_EQ(b.offsets[0].value.expire_timestamp_ms, 99);

  ASSERT_TRUE(store.delete_group(g.group_id).ok());
  all = store.load_all();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].group_id, "only-offsets");
}

TEST(MetaGroupStore, AnOffsetCommitIsOneTransaction) {
  FakeMetaStore meta;
  MetaGroupStore store(&meta);
  std::vector<OffsetRecord> many;
  for (int p = 0; p < 100; ++p) many.push_back(OffsetRecord{"t", p, OffsetValue{p, -1, "", 1, {}}});
  ASSERT_TRUE(store.save_offsets("g", many, {}).ok());
  EXPECT_EQ(meta.commits(), 1);
  meta.fail_next_commits(1);
  EXPECT_FALSE(store.save_offsets("g", many, {}).ok());
  EXPECT_EQ(meta.size(), 100u);
}

TEST(MetaGroupStore, AnOffsetCommitOverTheStoresLimitIsSplit) {
  FakeMetaStore meta;
  meta.set_max_txn_ops(32);  // etcd's --max-txn-ops
  MetaGroupStore store(&meta);
  std::vector<OffsetRecord> many;
  for (int p = 0; p < 100; ++p) many.push_back(OffsetRecord{"t", p, OffsetValue{p, -1, "", 1, {}}});
  ASSERT_TRUE(store.save_offsets("g", many, {}).ok());
  EXPECT_EQ(meta.commits(), 4);
  EXPECT_EQ(meta.size(), 100u);
}

TEST(ConsumerProtocol, ReadsTopicsOfEveryVersion) {
  for (int16_t v = 0; v <= 5; ++v) {
    auto t = subscription_topics(subscription({"a", "bb"}, v));
    ASSERT_TRUE(t.ok()) << v;
    EXPECT_EQ(*t, (std::vector<std::string>{"a", "bb"}));
  }
}

TEST(ConsumerProtocol, RejectsMalformedBytes) {
  std::string ok = subscription({"a", "bb"});
  for (size_t n = 0; n < 13; ++n) {
    EXPECT_FALSE(subscription_topics(ok.substr(0, n)).ok()) << n;
  }
  std::string negative = ok;
  negative[0] = '\xff';  // version -1
  EXPECT_FALSE(subscription_topics(negative).ok());
}

}  // namespace
}  // namespace shale::group::testing
