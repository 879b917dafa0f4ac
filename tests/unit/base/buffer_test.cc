#include "base/buffer.h"

#include <gtest/gtest.h>

namespace shale {
namespace {

TEST(Buffer, SliceSharesOwnerAndClamps) {
  Buffer b = Buffer::copy("hello world");
  Buffer s = b.slice(6, 100);
  EXPECT_EQ(s.view(), "world");
  EXPECT_EQ(s.owner(), b.owner());
  EXPECT_TRUE(b.slice(50, 2).empty());
}

TEST(Buffer, SliceOutlivesOriginal) {
  Buffer s;
  {
    Buffer b = Buffer::copy("abcdef");
    s = b.slice(2, 2);
  }
  EXPECT_EQ(s.view(), "cd");
}

TEST(Buffer, BuilderFreezeDoesNotCopy) {
  BufferBuilder bb;
  bb.append("xyz", 3);
  const uint8_t* p = bb.data();
  Buffer b = std::move(bb).freeze();
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(b.view(), "xyz");
}

TEST(BufferChain, FlattenJoinsParts) {
  BufferChain c;
  c.push_back(Buffer::copy("ab"));
  c.push_back(Buffer::copy("cde"));
  EXPECT_EQ(c.size(), 5u);
  EXPECT_EQ(c.flatten().view(), "abcde");
}

}  // namespace
}  // namespace shale
