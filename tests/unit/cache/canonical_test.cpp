#include "cache/canonical.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "cache/entry.h"
#include "json/envelope.h"

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

TEST(CacheCanonical, LargeExponentsReadAsTheNearestDoubleAndTheFormIsItsOwn) {
  // Boost.JSON, which read these before, lands one ULP off (9.009999999999999e+189).
  EXPECT_EQ(canon("9.01e189"), "9.01e+189");
  EXPECT_EQ(canon("0.901e190"), "9.01e+189");
  // Found by fuzz/canonical_fuzz.cpp: the form of the form was 5.9000000000000005e+190.
  EXPECT_EQ(canon("[5.900e190,{}]"), "[5.9e+190,{}]");
  EXPECT_EQ(canon(canon("[5.900e190,{}]")), "[5.9e+190,{}]");
  // Too large for a double: no form; too small: 0, as it always was.
  EXPECT_EQ(canon("1e400"), "<none>");
  EXPECT_EQ(canon("-1e-400"), "0");
  EXPECT_EQ(canon("1" + std::string(400, '0') + "e-5"), "<none>");  // large despite "e-"
  EXPECT_EQ(canon("4.9e-324"), "5e-324");                             // the least subnormal
}

TEST(CacheCanonical, NumbersTooPreciseForADoubleHaveNoCanonicalForm) {
  // Two texts that read as the same double must not share a key.
  EXPECT_EQ(canon("0.1000000000000000055511151231257827"), "<none>");
  EXPECT_EQ(canon("12345678901234567890123"), "<none>");
  // Trailing zeros add no precision.
  EXPECT_EQ(canon("0.500000000000000000000"), "0.5");
  // Integers beyond 2^53 that fit 64 bits stay exact.
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

TEST(CacheCanonical, MembersWithTheSameNameKeepTheirOrder) {
  EXPECT_EQ(canon(R"({"b":1,"a":2,"b":3,"a":4})"), R"({"a":2,"a":4,"b":1,"b":3})");
  EXPECT_NE(canon(R"({"a":1,"a":2})"), canon(R"({"a":2,"a":1})"));
  // The same name written two ways is one name.
  EXPECT_EQ(canon(R"({"\u0061":1,"b":0,"a":2})"), R"({"a":1,"a":2,"b":0})");
}

TEST(CacheCanonical, NamesAreOrderedByTheirDecodedBytes) {
  // '"' (0x22) sorts before '#' (0x23) though its escape starts with '\\' (0x5c).
  EXPECT_EQ(canon(R"({"a#":1,"a\"":2})"), R"({"a\"":2,"a#":1})");
  EXPECT_EQ(canon(R"({"a\n":1,"a\u0001":2,"a":3})"), R"({"a":3,"a\u0001":2,"a\n":1})");
  EXPECT_EQ(canon(R"({"\ud83d\ude00":1,"\u00e9":2,"z":3})"),
            "{\"z\":3,\"\xC3\xA9\":2,\"\xF0\x9F\x98\x80\":1}");
}

TEST(CacheCanonical, LargeObjectsAreSortedStably) {
  std::vector<std::string> names;
  for (int i = 0; i < 100; ++i) names.push_back("k" + std::to_string(i));
  std::string in = "{";
  for (auto it = names.rbegin(); it != names.rend(); ++it) in += "\"" + *it + "\":1,";
  in += R"("k50":2})";
  std::sort(names.begin(), names.end());
  std::string want = "{";
  for (const auto& name : names) {
    want += "\"" + name + "\":1,";
    if (name == "k50") want += R"("k50":2,)";
  }
  want.back() = '}';
  EXPECT_EQ(canon(in), want);
}

TEST(CacheCanonical, NumbersThatGrowWhenWritten) {
  // "1E5" is "100000": the output may be longer than the text.
  std::string in = "[", want = "[";
  for (int i = 0; i < 200; ++i) {
    in += i ? ",1E5,1e300" : "1E5,1e300";
    want += i ? ",100000,1e+300" : "100000,1e+300";
  }
  EXPECT_EQ(canon(in + "]"), want + "]");
}

TEST(CacheCanonical, IntegersAreExactUpTo64Bits) {
  EXPECT_EQ(canon("-9223372036854775808"), "-9223372036854775808");
  EXPECT_EQ(canon("9223372036854775808"), "9223372036854775808");
  // Past 64 bits a number is a double: beyond 2^53 with more than 15 digits, no form.
  EXPECT_EQ(canon("-9223372036854775809"), "<none>");
  EXPECT_EQ(canon("18446744073709551616"), "<none>");
  EXPECT_EQ(canon("100000000000000000000000"), "1e+23");
  EXPECT_EQ(canon("[0,-0,10,-10]"), "[0,0,10,-10]");
}

// Found by fuzz/canonical_fuzz.cpp (issue 32): past 2^64 the integer was read as a double whose
// shortest fixed text is its exact value, 40000000000000598016, which has no form of its own.
TEST(CacheCanonical, LargeIntegersPast64BitsAreScientific) {
  EXPECT_EQ(canon("[0,40000000000000600000,{}]"), "[0,4.00000000000006e+19,{}]");
  EXPECT_EQ(canon("[0,4.00000000000006e+19,{}]"), "[0,4.00000000000006e+19,{}]");
  EXPECT_EQ(canon("4.00000000000006E19"), "4.00000000000006e+19");
  EXPECT_EQ(canon("-40000000000000600000"), "-4.00000000000006e+19");
  EXPECT_EQ(canon("18446744073709600000"), "1.84467440737096e+19");  // just past 2^64
  // Past 2^63 a negative integer is a double; a positive one still fits 64 bits, exactly.
  EXPECT_EQ(canon("-9223372036854780000"), "-9.22337203685478e+18");
  EXPECT_EQ(canon("9223372036854780000"), "9223372036854780000");
  EXPECT_EQ(canon("9.22337203685478e18"), "9.22337203685478e+18");
}

TEST(CacheCanonical, AroundTwoToThe53) {
  EXPECT_EQ(canon("9007199254740992"), "9007199254740992");
  EXPECT_EQ(canon("9007199254740993"), "9007199254740993");  // a literal integer: exact
  EXPECT_EQ(canon("9.00719925474099e15"), "9007199254740990");
  EXPECT_EQ(canon("9.00719925474099e16"), "9.00719925474099e+16");
  // 16 digits that read as the double 2^53 must not share its key.
  EXPECT_EQ(canon("9.007199254740993e15"), "<none>");
  EXPECT_EQ(canon("9007199254740993.0"), "<none>");
}

// Every number of 16 to 21 digits with at most 15 significant ones, around 2^53, 2^63 and 2^64,
// both signs, as an integer and with exponents: its form is its own, and the texts of one
// value that is not a 64-bit integer literal share one form.
TEST(CacheCanonical, TheFormOfEveryLargeNumberIsItsOwn) {
  const std::vector<std::string> mantissas = {
      "1",         "4",          "400000000000006", "900719925474099", "922337203685477",
      "922337203685478", "184467440737095", "184467440737096", "999999999999999",
      "123456789012345", "5",     "17",         "9223372036854775807", "18446744073709551615"};
  int checked = 0;
  for (const auto& m : mantissas) {
    for (std::size_t digits = 16; digits <= 21; ++digits) {
      if (m.size() > digits) continue;
      const std::size_t zeros = digits - m.size();
      for (const char* sign : {"", "-"}) {
        const std::string integer = sign + m + std::string(zeros, '0');
        const std::string scientific =
            std::string(sign) + m.substr(0, 1) + (m.size() > 1 ? "." + m.substr(1) : "") + "e" +
            std::to_string(digits - 1);
        const std::string exponent = std::string(sign) + m + "e" + std::to_string(zeros);
        for (const auto& text : {integer, scientific, exponent}) {
          const auto form = canonical_json(text);
          if (!form) continue;
          EXPECT_EQ(canon(*form), *form) << text;
          ++checked;
        }
        const auto from_scientific = canonical_json(scientific);
        EXPECT_EQ(canonical_json(exponent), from_scientific) << exponent;
        const bool fits = canonical_json(integer) == integer;
        if (!fits) {
          EXPECT_EQ(canonical_json(integer), from_scientific) << integer;
        }
        if (m.size() <= 15) {
          EXPECT_TRUE(from_scientific.has_value()) << scientific;
        }
      }
    }
  }
  EXPECT_GT(checked, 300);
}

TEST(CacheCanonical, NumbersAreCheckedAsJson) {
  for (const char* bad : {"01", "-", "1.", ".5", "+1", "1e", "1e+", "--1", "-01", "0x1", "NaN",
                          "Infinity", "[1 2]", "1e2147483648"}) {
    EXPECT_EQ(canon(bad), "<none>") << bad;
  }
  EXPECT_EQ(canon("1e-999"), "0");  // underflows to zero, as it always did
  // Exponents near INT_MAX are not JSON to the gateway's parser, however small the number, and
  // where its limit falls depends on the digits around them: an exponent of ten digits has no form.
  EXPECT_EQ(canon("1e-999999999"), "0");
  EXPECT_EQ(canon("1e-0000999999999"), "0");
  EXPECT_EQ(canon("1e-1000000000"), "<none>");
  EXPECT_EQ(canon("1e-2147483647"), "<none>");
  EXPECT_EQ(canon("1e-2147483648"), "<none>");
  // Found by fuzz/canonical_fuzz.cpp: the parser refuses this one (it accepts "0.00e-2147483647").
  EXPECT_EQ(canon("[0.00e-0002147483647]"), "<none>");
  EXPECT_EQ(canon("[0,1e-7000000000000000000000000000000000000000,{}]"), "<none>");
  EXPECT_EQ(canon("12.5e-3"), "0.0125");
  EXPECT_EQ(canon("1.5e-300"), "1.5e-300");
}

TEST(CacheCanonical, EscapesAreCheckedAsJson) {
  EXPECT_EQ(canon(R"("\u00E9")"), "\"\xC3\xA9\"");  // upper-case hex
  EXPECT_EQ(canon(R"("\uD83D\uDE00")"), "\"\xF0\x9F\x98\x80\"");
  EXPECT_EQ(canon(R"("\u0000")"), R"("\u0000")");
  EXPECT_EQ(canon(R"("\u001F\u007f")"), "\"\\u001f\x7F\"");
  for (const char* bad : {R"("\ud83d")", R"("\ude00")", R"("\ud83d\u0041")", R"("\ud83dx")",
                          R"("\u12")", R"("\uzzzz")", R"("\x")", "\"\\", "\"a\tb\""}) {
    EXPECT_EQ(canon(bad), "<none>") << bad;
  }
}

TEST(CacheCanonical, InvalidUtf8HasNoCanonicalForm) {
  for (const char* bad : {"\"\xC0\xAF\"",           // overlong
                          "\"\xE0\x80\x80\"",       // overlong
                          "\"\xED\xA0\x80\"",       // a surrogate
                          "\"\xF4\x90\x80\x80\"",   // past U+10FFFF
                          "\"\xC3\"",               // cut short
                          "{\"\xFF\":1}"}) {        // in a name
    EXPECT_EQ(canon(bad), "<none>") << bad;
  }
  EXPECT_EQ(canon("\"\xF4\x8F\xBF\xBF\""), "\"\xF4\x8F\xBF\xBF\"");  // U+10FFFF
}

TEST(CacheCanonical, NestingUpToTheLimitIsAllowed) {
  const auto nested = [](std::size_t depth) {
    std::string s;
    for (std::size_t i = 0; i < depth; ++i) s += i % 2 ? R"({"k":)" : "[";
    s += "0";
    for (std::size_t i = depth; i-- > 0;) s += i % 2 ? "}" : "]";
    return s;
  };
  EXPECT_EQ(canon(nested(json::kMaxDepth)), nested(json::kMaxDepth));
  EXPECT_EQ(canon(nested(json::kMaxDepth + 1)), "<none>");
}

TEST(CacheCanonical, AppendsAfterWhatTheOutputHolds) {
  std::string out = "prefix:";
  EXPECT_TRUE(append_canonical_json(out, R"({"b":[1.0],"a":"x"})"));
  EXPECT_EQ(out, R"(prefix:{"a":"x","b":[1]})");
  EXPECT_FALSE(append_canonical_json(out, R"({"b":[1.0],"a":)"));
  EXPECT_EQ(out, R"(prefix:{"a":"x","b":[1]})");
}

TEST(CacheKey, OfArgumentsIsTheKeyOfTheirCanonicalForm) {
  const std::string args = R"({"query":"cpu", "delay_ms":0.0})";
  for (Scope scope : {Scope::kGlobal, Scope::kTenant, Scope::kTrajectory}) {
    EXPECT_EQ(make_key_of_arguments("srv", "tool", scope, "run1", "traj", args),
              make_key("srv", "tool", scope, "run1", "traj", *canonical_json(args)));
  }
  const std::string big = R"({"q":")" + std::string(5000, 'x') + R"("})";
  EXPECT_EQ(make_key_of_arguments("s", "t", Scope::kGlobal, "", "", big),
            make_key("s", "t", Scope::kGlobal, "", "", big));
  EXPECT_EQ(make_key_of_arguments("s", "t", Scope::kGlobal, "", "", R"({"q":)"), "");
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
