// The protobuf wire encoder: varints at every length boundary, fixed-width fields, and nested
// messages whose length prefix grows past one byte.
#include "otel/protobuf.h"

#include <gtest/gtest.h>

#include <cstring>

#include "proto_reader.h"

namespace toolbridge::otel::protobuf {
namespace {

std::string varint(std::uint64_t v) {
  std::string out;
  put_varint(out, v);
  return out;
}

TEST(Protobuf, VarintsAreLittleEndianGroupsOfSeven) {
  EXPECT_EQ(varint(0), std::string(1, '\0'));
  EXPECT_EQ(varint(1), "\x01");
  EXPECT_EQ(varint(127), "\x7f");
  EXPECT_EQ(varint(128), "\x80\x01");
  EXPECT_EQ(varint(300), "\xac\x02");
  EXPECT_EQ(varint(16383), "\xff\x7f");
  EXPECT_EQ(varint(16384), std::string("\x80\x80\x01", 3));
  EXPECT_EQ(varint(~std::uint64_t{0}).size(), 10u);
  EXPECT_EQ(static_cast<unsigned char>(varint(~std::uint64_t{0}).back()), 0x01);
}

TEST(Protobuf, FieldsCarryTheirNumberAndWireType) {
  std::string out;
  put_varint_field(out, 6, 2);
  put_fixed64_field(out, 7, 0x0102030405060708ull);
  put_bytes_field(out, 5, "tools/call");
  put_double_field(out, 4, 1.5);
  put_fixed32_field(out, 16, 0x01000000u);
  const auto fs = testing::fields(out);
  ASSERT_EQ(fs.size(), 5u);
  EXPECT_EQ(out.substr(0, 2), "\x30\x02");  // (6 << 3) | 0
  EXPECT_EQ(fs[0].number, 6u);
  EXPECT_EQ(fs[0].value, 2u);
  EXPECT_EQ(out[2], '\x39');  // (7 << 3) | 1
  EXPECT_EQ(out[3], '\x08');  // little-endian: the low byte first
  EXPECT_EQ(fs[1].value, 0x0102030405060708ull);
  EXPECT_EQ(fs[2].bytes, "tools/call");
  double d = 0;
  std::memcpy(&d, &fs[3].value, sizeof d);
  EXPECT_EQ(d, 1.5);
  EXPECT_EQ(fs[4].number, 16u);  // a field number past 15 takes a two-byte tag
  EXPECT_EQ(fs[4].wire, 5);
  EXPECT_EQ(fs[4].value, 0x01000000u);
}

TEST(Protobuf, NestedMessagesGetTheirLengthInFront) {
  for (std::size_t body : {0u, 1u, 127u, 128u, 16383u, 16384u, 70000u}) {
    std::string out = "x";
    {
      Nested n(out, 2);
      out.append(body, 'a');
    }
    ASSERT_EQ(out[0], 'x');
    const auto fs = testing::fields(std::string_view(out).substr(1));
    ASSERT_EQ(fs.size(), 1u) << body;
    EXPECT_EQ(fs[0].number, 2u);
    EXPECT_EQ(fs[0].bytes.size(), body);
  }
}

TEST(Protobuf, NestedInNested) {
  std::string out;
  {
    Nested outer(out, 1);
    put_varint_field(out, 1, 7);
    {
      Nested inner(out, 2);
      out.append(200, 'b');
    }
    put_varint_field(out, 3, 9);
  }
  const auto top = testing::fields(out);
  ASSERT_EQ(top.size(), 1u);
  const auto in = testing::fields(top[0].bytes);
  ASSERT_EQ(in.size(), 3u);
  EXPECT_EQ(in[0].value, 7u);
  EXPECT_EQ(in[1].bytes, std::string(200, 'b'));
  EXPECT_EQ(in[2].value, 9u);
}

}  // namespace
}  // namespace toolbridge::otel::protobuf
