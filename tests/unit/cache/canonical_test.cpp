#include "cache/canonical.h"

#include <gtest/gtest.h>

#include <string>

#include "cache/entry.h"

namespace toolbridge::cache {
namespace {

std::string canon(std::string_view text) {
  auto c = canonical_json(text);
  return c ? *c : std::string("<none>");
}

TEST(CacheCanonical, ObjectKeysAreSortedAtEveryDepth) {
  EXPECT_EQ(canon(R"({"b":1,"a":{"d":2,"c":3}})"), R"({"a":{"c":3,"d":2},"b":1})");
  EXPECT_EQ(canon(R"({"a":{"c":3,"d":2},"b":1})"), canon(R"({"b":1,"a":{"d":2,"c":3}})"));
  // Byte order of the UTF-8 names: "B" < "a" < "é".
  EXPECT_EQ(canon(R"({"é":1,"a":2,"B":3})"), R"({"B":3,"a":2,"é":1})");
}

TEST(CacheCanonical, WhitespaceDoesNotMatter) {
  EXPECT_EQ(canon(" {\n\t\"q\" :  [ 1 , 2 ] ,\r\n \"x\": null } "), R"({"q":[1,2],"x":null})");
}

TEST(CacheCanonical, IntegralNumbersAreIntegers) {
  EXPECT_EQ(canon(R"({"n":1})"), canon(R"({"n":1.0})"));
  EXPECT_EQ(canon(R"({"n":1.0})"), R"({"n":1})");
  EXPECT_EQ(canon("1e0"), "1");
  EXPECT_EQ(canon("10E-1"), "1");
  EXPECT_EQ(canon("100e-2"), "1");
  EXPECT_EQ(canon("-0"), "0");
  EXPECT_EQ(canon("-0.0"), "0");
  EXPECT_EQ(canon("9007199254740992"), "9007199254740992");
  EXPECT_EQ(canon("-12.000"), "-12");
}

TEST(CacheCanonical, OtherNumbersAreTheShortestRoundTrip) {
  EXPECT_EQ(canon("1.50"), "1.5");
  EXPECT_EQ(canon("0.1"), canon("1e-1"));
  EXPECT_EQ(canon("2.5E+3"), "2500");
  EXPECT_EQ(canon("1e300"), "1e+300");
  EXPECT_NE(canon("1.5"), canon("1.25"));
}

TEST(CacheCanonical, NumbersTooPreciseForADoubleHaveNoCanonicalForm) {
  // Two texts that read as the same double must not share a key.
  EXPECT_EQ(canon("0.1000000000000000055511151231257827"), "<none>");
  EXPECT_EQ(canon("12345678901234567890123"), "<none>");
  // Trailing zeros add no precision.
  EXPECT_EQ(canon("0.500000000000000000000"), "0.5");
  // Integers beyond 2^53 that Boost.JSON reads exactly (int64/uint64) stay exact.
  EXPECT_EQ(canon("9007199254740993"), "9007199254740993");
  EXPECT_EQ(canon("18446744073709551615"), "18446744073709551615");
}

TEST(CacheCanonical, UnicodeEscapesAreDecoded) {
  EXPECT_EQ(canon(R"({"q":"caf\u00e9"})"), canon(R"({"q":"café"})"));
  EXPECT_EQ(canon(R"("caf\u00e9")"), "\"café\"");
  EXPECT_EQ(canon(R"("\ud83d\ude00")"), "\"\xF0\x9F\x98\x80\"");
  EXPECT_EQ(canon(R"({"\u0061":1})"), R"({"a":1})");
  // Only what must be escaped is; \/ is just '/'.
  EXPECT_EQ(canon(R"("a\/b\"c\\d\n\u0001")"), R"("a/b\"c\\d\n\u0001")");
}

TEST(CacheCanonical, NestedArraysKeepTheirOrder) {
  EXPECT_EQ(canon(R"([[1,2],[3,[4,5]]])"), "[[1,2],[3,[4,5]]]");
  EXPECT_NE(canon(R"([[1,2],[3]])"), canon(R"([[3],[1,2]])"));
  EXPECT_NE(canon(R"([1,2])"), canon(R"([2,1])"));
  EXPECT_EQ(canon(R"([{"b":1,"a":2},[]])"), R"([{"a":2,"b":1},[]])");
  EXPECT_EQ(canon("[]"), "[]");
  EXPECT_EQ(canon("{}"), "{}");
}

TEST(CacheCanonical, TypesStayApart) {
  EXPECT_NE(canon(R"({"n":1})"), canon(R"({"n":"1"})"));
  EXPECT_NE(canon(R"({"n":true})"), canon(R"({"n":1})"));
  EXPECT_NE(canon(R"({"n":null})"), canon(R"({})"));
}

TEST(CacheCanonical, InvalidInputHasNoCanonicalForm) {
  EXPECT_EQ(canon(""), "<none>");
  EXPECT_EQ(canon("{"), "<none>");
  EXPECT_EQ(canon(R"({"a":1} x)"), "<none>");
  EXPECT_EQ(canon("\"\xff\""), "<none>");                                     // invalid UTF-8
  EXPECT_EQ(canon(std::string(200, '[') + std::string(200, ']')), "<none>");  // too deep
  EXPECT_EQ(canon("1e999"), "<none>");
}

TEST(CacheCanonical, EveryPrefixOfAValidDocumentIsRejectedOrComplete) {
  const std::string doc = R"({"q":"caf\u00e9","n":[1.0,{"b":true,"a":null}],"s":"x\ty"})";
  const std::string whole = canon(doc);
  ASSERT_NE(whole, "<none>");
  for (std::size_t i = 0; i < doc.size(); ++i) {
    EXPECT_EQ(canon(doc.substr(0, i)), "<none>") << i;
  }
}

TEST(CacheKey, PartsCannotRunIntoEachOther) {
  const auto a = make_key("ab", "c", Scope::kGlobal, "", "", "{}");
  const auto b = make_key("a", "bc", Scope::kGlobal, "", "", "{}");
  EXPECT_NE(a, b);
  EXPECT_EQ(a, make_key("ab", "c", Scope::kGlobal, "t1", "s1", "{}"));
}

TEST(CacheKey, ScopeAddsTheTenantOrTheTrajectory) {
  const auto t1 = make_key("s", "t", Scope::kTenant, "run1", "x", "{}");
  const auto t2 = make_key("s", "t", Scope::kTenant, "run2", "x", "{}");
  EXPECT_NE(t1, t2);
  EXPECT_EQ(t1, make_key("s", "t", Scope::kTenant, "run1", "y", "{}"));
  const auto j1 = make_key("s", "t", Scope::kTrajectory, "run1", "a", "{}");
  const auto j2 = make_key("s", "t", Scope::kTrajectory, "run1", "b", "{}");
  EXPECT_NE(j1, j2);
  EXPECT_NE(t1, make_key("s", "t", Scope::kGlobal, "run1", "x", "{}"));
}

TEST(CacheRecord, RoundTripsAndChecksItsKey) {
  Entry e{R"({"content":[]})", 1000, 2000, 1.25};
  const std::string rec = encode_record("k1", e);
  auto back = decode_record(rec, "k1");
  ASSERT_TRUE(back);
  EXPECT_EQ(back->result, e.result);
  EXPECT_EQ(back->stored_ms, 1000);
  EXPECT_EQ(back->expires_ms, 2000);
  EXPECT_DOUBLE_EQ(back->upstream_seconds, 1.25);
  EXPECT_FALSE(decode_record(rec, "k2"));  // a digest collision is a miss, never a wrong hit
  for (std::size_t i = 0; i < rec.size(); ++i) {
    auto cut = decode_record(rec.substr(0, i), "k1");
    EXPECT_TRUE(!cut || cut->result.size() < e.result.size()) << i;
  }
  EXPECT_EQ(key_digest("k1").size(), 64u);
  EXPECT_NE(key_digest("k1"), key_digest("k2"));
}

}  // namespace
}  // namespace toolbridge::cache
