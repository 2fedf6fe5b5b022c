#include "json/envelope.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace toolbridge::json {
namespace {

namespace bj = boost::json;

bj::value parse_json(std::string_view text) {
  boost::system::error_code ec;
  bj::value v = bj::parse(text, ec);
  EXPECT_FALSE(ec) << "not valid JSON: " << text;
  return v;
}

// ---------------------------------------------------------------------------------------------
// The depth limit and invalid UTF-8: what Boost.JSON would reject is flagged, never let through

std::string nested_result(std::size_t depth, std::string_view id = "7") {
  // depth counts every array and object, the message's own object included.
  return R"({"jsonrpc":"2.0","id":)" + std::string(id) + R"(,"result":)" +
         std::string(depth - 1, '[') + std::string(depth - 1, ']') + "}";
}

TEST(Envelope, NestedUpToTheLimitIsAccepted) {
  const std::string m = nested_result(kMaxDepth);
  const Envelope e = parse_envelope(m);
  EXPECT_EQ(e.kind, Kind::kResponse) << e.problem;
  EXPECT_FALSE(e.too_deep);
}

TEST(Envelope, NestedPastTheLimitIsRejectedButItsIdIsRead) {
  for (std::size_t depth : {kMaxDepth + 1, std::size_t{300}, std::size_t{200000}}) {
    const std::string m = nested_result(depth, "\"abc\"");
    const Envelope e = parse_envelope(m);
    EXPECT_EQ(e.kind, Kind::kInvalid);
    EXPECT_TRUE(e.too_deep);
    EXPECT_EQ(e.id.in(m), "\"abc\"");
    EXPECT_NE(e.problem.find("nested deeper than 128"), std::string::npos) << e.problem;
  }
  // The id after the deep member is found too.
  const std::string late = R"({"jsonrpc":"2.0","result":)" + std::string(150, '[') +
                           std::string(150, ']') + R"(,"id":9})";
  const Envelope e = parse_envelope(late);
  EXPECT_TRUE(e.too_deep);
  EXPECT_EQ(e.id.in(late), "9");
}

TEST(Envelope, BatchNestedPastTheLimitIsRefused) {
  const auto deep = split_batch(std::string(600, '[') + std::string(600, ']'));
  EXPECT_FALSE(deep);
  EXPECT_NE(deep.error().find("nested deeper than 128"), std::string::npos) << deep.error();
  const std::string inner = R"({"jsonrpc":"2.0","id":1,"result":)" +
                            std::string(kMaxDepth - 3, '[') + std::string(kMaxDepth - 3, ']') + "}";
  const auto fine = split_batch("[" + inner + "]");
  EXPECT_TRUE(fine) << fine.error();
}

TEST(Envelope, TooDeepAndTruncatedIsNotJson) {
  const std::string m = R"({"jsonrpc":"2.0","id":1,"result":)" + std::string(100, '[');
  const Envelope e = parse_envelope(m);
  EXPECT_EQ(e.kind, Kind::kInvalid);
  EXPECT_EQ(e.problem.rfind("not JSON", 0), 0u) << e.problem;
}

TEST(Envelope, InvalidUtf8InStringsIsFlaggedAndMethodsComeOutRepaired) {
  const std::string m =
      "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":1,\"message\":\"no \xff way\"}}";
  const Envelope e = parse_envelope(m);
  EXPECT_EQ(e.kind, Kind::kResponse);
  EXPECT_TRUE(e.needs_repair);
  const std::string ok = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"caf\xc3\xa9\"}";
  EXPECT_FALSE(parse_envelope(ok).needs_repair);
  const std::string method = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/\xff\"}";
  const Envelope r = parse_envelope(method);
  EXPECT_TRUE(r.needs_repair);
  EXPECT_EQ(r.method, "tools/\xEF\xBF\xBD");
}

TEST(Envelope, LoneSurrogateEscapesAreFlaggedAndPairsAreNot) {
  const auto flagged = [](std::string_view value) {
    const std::string m =
        R"({"jsonrpc":"2.0","id":1,"result":{"text":")" + std::string(value) + R"("}})";
    const Envelope e = parse_envelope(m);
    EXPECT_EQ(e.kind, Kind::kResponse) << value;
    return e.needs_repair;
  };
  EXPECT_TRUE(flagged(R"(cut \ud83d)"));
  EXPECT_TRUE(flagged(R"(\ude00 alone)"));
  EXPECT_TRUE(flagged(R"(\ud83d\u0041)"));
  EXPECT_TRUE(flagged(R"(\ud83d\ud83d\ude00)"));
  EXPECT_FALSE(flagged(R"(\ud83d\ude00 \u00e9 \\ud800)"));  // a pair; an escaped backslash
  EXPECT_FALSE(parse_envelope(R"({"jsonrpc":"2.0","id":1,"result":"\uD83D"})").kind ==
               Kind::kInvalid);
}

TEST(Envelope, ExponentsPastTheLimitAreRefusedWithTheirOwnReason) {
  const auto result = [](std::string_view number) {
    return parse_envelope(R"({"jsonrpc":"2.0","id":1,"result":)" + std::string(number) + "}");
  };
  EXPECT_EQ(result("1e999999999").kind, Kind::kResponse);
  EXPECT_EQ(result("1e0000000000000999999999").kind, Kind::kResponse);  // leading zeros
  EXPECT_EQ(result("-2.5E+0").kind, Kind::kResponse);
  const Envelope big = result("1e9999999999");
  EXPECT_EQ(big.kind, Kind::kInvalid);
  EXPECT_NE(big.problem.find("exponent"), std::string::npos) << big.problem;
  EXPECT_EQ(big.problem.rfind("not JSON", 0), std::string::npos) << big.problem;
  EXPECT_NE(parse_envelope("[1e2147483648]").problem.find("exponent"), std::string::npos);
  for (std::string_view bad : {"1e", "1e+", "1E-", "1.e5", "01"}) {
    EXPECT_EQ(result(bad).kind, Kind::kInvalid) << bad;
  }
}

TEST(Envelope, HighBytesOutsideStringsAreNotJson) {
  const Envelope e = parse_envelope("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\xff}");
  EXPECT_EQ(e.kind, Kind::kInvalid);
}

// ---------------------------------------------------------------------------------------------
// Classification

TEST(Envelope, RequestWithNumericId) {
  const std::string m = R"({"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"x"}})";
  const Envelope e = parse_envelope(m);
  ASSERT_EQ(e.kind, Kind::kRequest) << e.problem;
  EXPECT_EQ(e.id.in(m), "42");
  EXPECT_EQ(e.method, "tools/call");
  EXPECT_EQ(e.params.in(m), R"({"name":"x"})");
  EXPECT_TRUE(e.result.empty());
  EXPECT_TRUE(e.error.empty());
  EXPECT_TRUE(e.problem.empty());
}

TEST(Envelope, RequestWithStringIdKeepsQuotesInSpan) {
  const std::string m = R"({"jsonrpc":"2.0","id":"abc-\"1\"","method":"ping"})";
  const Envelope e = parse_envelope(m);
  ASSERT_EQ(e.kind, Kind::kRequest) << e.problem;
  EXPECT_EQ(e.id.in(m), R"("abc-\"1\"")");
  EXPECT_EQ(e.method, "ping");
  EXPECT_TRUE(e.params.empty());
}

TEST(Envelope, NumericIdForms) {
  for (std::string id : {"0", "-1", "7", "1.5", "1e3", "-0.25E-2", "18446744073709551616"}) {
    const std::string m = R"({"jsonrpc":"2.0","id":)" + id + R"(,"method":"m"})";
    const Envelope e = parse_envelope(m);
    EXPECT_EQ(e.kind, Kind::kRequest) << m << ": " << e.problem;
    EXPECT_EQ(e.id.in(m), id);
  }
}

TEST(Envelope, Notification) {
  const std::string m =
      R"({"method":"notifications/progress","jsonrpc":"2.0","params":{"progress":1}})";
  const Envelope e = parse_envelope(m);
  ASSERT_EQ(e.kind, Kind::kNotification) << e.problem;
  EXPECT_TRUE(e.id.empty());
  EXPECT_EQ(e.method, "notifications/progress");
  EXPECT_EQ(e.params.in(m), R"({"progress":1})");
}

TEST(Envelope, ResultResponse) {
  const std::string m = R"({"jsonrpc":"2.0","id":"r1","result":{"content":[{"type":"text"}]}})";
  const Envelope e = parse_envelope(m);
  ASSERT_EQ(e.kind, Kind::kResponse) << e.problem;
  EXPECT_EQ(e.id.in(m), R"("r1")");
  EXPECT_EQ(e.result.in(m), R"({"content":[{"type":"text"}]})");
  EXPECT_TRUE(e.error.empty());
  EXPECT_TRUE(e.method.empty());
}

TEST(Envelope, NullResultIsStillAResponse) {
  const std::string m = R"({"jsonrpc":"2.0","id":3,"result":null})";
  const Envelope e = parse_envelope(m);
  ASSERT_EQ(e.kind, Kind::kResponse) << e.problem;
  EXPECT_EQ(e.result.in(m), "null");
}

TEST(Envelope, ErrorResponse) {
  const std::string m = R"({"jsonrpc":"2.0","id":9,"error":{"code":-32601,"message":"no"}})";
  const Envelope e = parse_envelope(m);
  ASSERT_EQ(e.kind, Kind::kResponse) << e.problem;
  EXPECT_EQ(e.id.in(m), "9");
  EXPECT_EQ(e.error.in(m), R"({"code":-32601,"message":"no"})");
  EXPECT_TRUE(e.result.empty());
}

TEST(Envelope, ErrorResponseWithNullId) {
  const std::string m = R"({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse"}})";
  const Envelope e = parse_envelope(m);
  ASSERT_EQ(e.kind, Kind::kResponse) << e.problem;
  EXPECT_TRUE(e.id.empty());
}

TEST(Envelope, EscapedMethodNameIsUnescaped) {
  const std::string m = R"({"jsonrpc":"2.0","id":1,"method":"tools\/c\u0061ll"})";
  const Envelope e = parse_envelope(m);
  ASSERT_EQ(e.kind, Kind::kRequest) << e.problem;
  EXPECT_EQ(e.method, "tools/call");
}

TEST(Envelope, EscapedMemberNamesAreRecognised) {
  const std::string m = R"({"json\u0072pc":"2.0","\u0069d":5,"met\u0068od":"x"})";
  const Envelope e = parse_envelope(m);
  ASSERT_EQ(e.kind, Kind::kRequest) << e.problem;
  EXPECT_EQ(e.id.in(m), "5");
  EXPECT_EQ(e.method, "x");
}

TEST(Envelope, WhitespaceEverywhere) {
  const std::string m =
      " \r\n\t{ \"jsonrpc\" :\t\"2.0\" ,\n \"id\" : 1 , \"method\" : \"m\" ,"
      " \"params\" : [ 1 , 2 ] }\r\n ";
  const Envelope e = parse_envelope(m);
  ASSERT_EQ(e.kind, Kind::kRequest) << e.problem;
  EXPECT_EQ(e.id.in(m), "1");
  EXPECT_EQ(e.params.in(m), "[ 1 , 2 ]");
}

TEST(Envelope, NestedParamsWithTrickyStringsAreOneExactSpan) {
  const std::string params =
      R"({"a":{"b":["}","]","{\"x\":1}","\\","\"",",",":"],"c":"\\\"}"},"d":[[],{},[{}]],)"
      R"("e":"\u00e9\n\t\/","f":-1.5e+10,"g":true,"h":false,"i":null})";
  const std::string m = R"({"jsonrpc":"2.0","id":"q","method":"tools/call","params":)" + params +
                        R"(,"extra":{"method":"not-this"}})";
  const Envelope e = parse_envelope(m);
  ASSERT_EQ(e.kind, Kind::kRequest) << e.problem;
  EXPECT_EQ(e.params.in(m), params);
  EXPECT_EQ(e.method, "tools/call");
  // The span is what boost::json sees as "params".
  EXPECT_EQ(parse_json(e.params.in(m)), parse_json(m).at("params"));
}

TEST(Envelope, UnknownMembersAreSkipped) {
  const std::string m =
      R"({"x":[1,{"id":99,"result":1}],"jsonrpc":"2.0","y":"id","id":2,"z":{},"result":7})";
  const Envelope e = parse_envelope(m);
  ASSERT_EQ(e.kind, Kind::kResponse) << e.problem;
  EXPECT_EQ(e.id.in(m), "2");
  EXPECT_EQ(e.result.in(m), "7");
}

// ---------------------------------------------------------------------------------------------
// Invalid input: always kInvalid with a reason, never a crash

struct InvalidCase {
  const char* text;
  const char* problem_contains;
};

TEST(Envelope, InvalidInputsAreClassifiedWithAReason) {
  const std::vector<InvalidCase> cases = {
      {"", "empty"},
      {"   \n", "empty"},
      {"hello", "not JSON"},
      {"{", "not JSON"},
      {"}", "not JSON"},
      {"[1,2]", "must be a JSON object"},
      {"\"str\"", "must be a JSON object"},
      {"42", "must be a JSON object"},
      {"null", "must be a JSON object"},
      {"{}", "jsonrpc"},
      {R"({"id":1,"method":"m"})", "jsonrpc"},
      {R"({"jsonrpc":"1.0","id":1,"method":"m"})", "2.0"},
      {R"({"jsonrpc":2.0,"id":1,"method":"m"})", "2.0"},
      {R"({"jsonrpc":"2.0","id":1})", "neither"},
      {R"({"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}})", "both"},
      {R"({"jsonrpc":"2.0","id":{"a":1},"method":"m"})", "\"id\""},
      {R"({"jsonrpc":"2.0","id":[1],"method":"m"})", "\"id\""},
      {R"({"jsonrpc":"2.0","id":true,"method":"m"})", "\"id\""},
      {R"({"jsonrpc":"2.0","id":false,"result":1})", "\"id\""},
      {R"({"jsonrpc":"2.0","id":1,"method":7})", "\"method\""},
      {R"({"jsonrpc":"2.0","id":1,"method":null})", "\"method\""},
      {R"({"jsonrpc":"2.0","id":1,"method":"m"} x)", "trailing"},
      {R"({"jsonrpc":"2.0","id":1,"method":"m"}{})", "trailing"},
      {R"({"jsonrpc":"2.0","id":1,"method":"m"},)", "trailing"},
      {R"({"jsonrpc":"2.0","id":1,"method":"m",})", "not JSON"},
      {R"({"jsonrpc":"2.0" "id":1,"method":"m"})", "not JSON"},
      {R"({"jsonrpc":"2.0","id" 1,"method":"m"})", "not JSON"},
      {R"({jsonrpc:"2.0"})", "not JSON"},
      {R"({'jsonrpc':'2.0'})", "not JSON"},
      {R"({"jsonrpc":"2.0","id":01,"method":"m"})", "not JSON"},
      {R"({"jsonrpc":"2.0","id":1.,"method":"m"})", "not JSON"},
      {R"({"jsonrpc":"2.0","id":-,"method":"m"})", "not JSON"},
      {R"({"jsonrpc":"2.0","id":1e,"method":"m"})", "not JSON"},
      {R"({"jsonrpc":"2.0","id":+1,"method":"m"})", "not JSON"},
      {R"({"jsonrpc":"2.0","id":1,"method":"m","params":[1,]})", "not JSON"},
      {R"({"jsonrpc":"2.0","id":1,"method":"m","params":tru})", "not JSON"},
      {R"({"jsonrpc":"2.0","id":1,"method":"m","params":"\x"})", "not JSON"},
      {R"({"jsonrpc":"2.0","id":1,"method":"m","params":"\u12G4"})", "not JSON"},
      {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\nb\"}", "not JSON"},  // raw control char
  };
  for (const auto& c : cases) {
    const Envelope e = parse_envelope(c.text);
    EXPECT_EQ(e.kind, Kind::kInvalid) << c.text;
    EXPECT_NE(e.problem.find(c.problem_contains), std::string::npos)
        << c.text << " -> problem: " << e.problem;
  }
}

const std::vector<std::string>& valid_messages() {
  static const std::vector<std::string> messages = {
      R"({"jsonrpc":"2.0","id":123,"method":"tools/call","params":{"name":"a\"}b","arguments":{"x":[1,-2.5e3,true,null]}}})",
      R"({"jsonrpc":"2.0","id":"s\\1","result":{"content":[{"type":"text","text":"{\"]\\u0041"}]}})",
      R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"x"}})",
      R"({"jsonrpc":"2.0","id":-4,"error":{"code":-32000,"message":"m","data":{"k":"\u00e9"}}})",
  };
  return messages;
}

TEST(Envelope, EveryTruncationOfAValidMessageIsInvalid) {
  for (const std::string& m : valid_messages()) {
    ASSERT_NE(parse_envelope(m).kind, Kind::kInvalid) << m;
    for (std::size_t n = 0; n < m.size(); ++n) {
      const std::string prefix = m.substr(0, n);
      const Envelope e = parse_envelope(prefix);
      EXPECT_EQ(e.kind, Kind::kInvalid) << "prefix of " << n << " bytes: " << prefix;
      EXPECT_FALSE(e.problem.empty());
    }
  }
}

// A scanner earns trust by never calling something valid that a real parser rejects. Every
// single-byte substitution of valid messages with JSON's structural characters is checked.
TEST(Envelope, AcceptsNothingThatIsNotJson) {
  const std::string replacements = "{}[]\":,\\ 0-eEx.tn\n";
  int checked = 0;
  for (const std::string& m : valid_messages()) {
    for (std::size_t i = 0; i < m.size(); ++i) {
      for (char r : replacements) {
        std::string mutated = m;
        mutated[i] = r;
        const Envelope e = parse_envelope(mutated);
        ++checked;
        if (e.kind == Kind::kInvalid) continue;
        boost::system::error_code ec;
        bj::value v = bj::parse(mutated, ec);
        EXPECT_FALSE(ec) << "scanner accepted invalid JSON: " << mutated;
        if (!ec) {
          EXPECT_TRUE(v.is_object()) << mutated;
        }
      }
    }
  }
  EXPECT_GT(checked, 1000);
}

TEST(Envelope, DeepNestingIsRejectedWithoutExhaustingTheStack) {
  const std::string deep = R"({"jsonrpc":"2.0","method":"m","params":)" +
                           std::string(200'000, '[') + std::string(200'000, ']') + "}";
  EXPECT_EQ(parse_envelope(deep).kind, Kind::kInvalid);
  EXPECT_FALSE(split_batch("[" + std::string(200'000, '{')).ok());

  // Moderate nesting, as real tool schemas have, is fine.
  const std::string ok = R"({"jsonrpc":"2.0","method":"m","params":)" + std::string(100, '[') +
                         std::string(100, ']') + "}";
  EXPECT_EQ(parse_envelope(ok).kind, Kind::kNotification);
}

TEST(Envelope, ArbitraryBytesNeverCrash) {
  // Deterministic pseudo-random inputs built from JSON-ish tokens.
  const std::vector<std::string> tokens = {
      "{",    "}",           "[",       "]",      "\"", ":",    ",",
      "\\",   "\"jsonrpc\"", "\"2.0\"", "\"id\"", "1",  "-",    "\"method\"",
      "null", "\"result\"",  " ",       "\\u",    "e",  "\x01", "\xff"};
  std::uint32_t state = 12345;
  for (int i = 0; i < 5000; ++i) {
    std::string text;
    const int len = static_cast<int>(state % 24);
    for (int j = 0; j < len; ++j) {
      state = state * 1103515245u + 12345u;
      text += tokens[(state >> 16) % tokens.size()];
    }
    state = state * 1103515245u + 12345u;
    const Envelope e = parse_envelope(text);
    if (e.kind == Kind::kInvalid) {
      EXPECT_FALSE(e.problem.empty()) << text;
    } else {
      EXPECT_LE(e.id.offset + e.id.length, text.size());
      EXPECT_LE(e.params.offset + e.params.length, text.size());
    }
    (void)split_batch(text);
  }
}

// ---------------------------------------------------------------------------------------------
// with_id

TEST(Envelope, WithIdReplacesOnlyTheId) {
  const std::string m = R"({"jsonrpc":"2.0","id":17,"result":{"id":17,"text":"17"}})";
  const Envelope e = parse_envelope(m);
  ASSERT_EQ(e.kind, Kind::kResponse);
  const std::string out = with_id(m, e.id, R"("caller-\"a\"")");
  EXPECT_EQ(out, R"({"jsonrpc":"2.0","id":"caller-\"a\"","result":{"id":17,"text":"17"}})");
  const Envelope again = parse_envelope(out);
  ASSERT_EQ(again.kind, Kind::kResponse) << again.problem;
  EXPECT_EQ(again.id.in(out), R"("caller-\"a\"")");
}

TEST(Envelope, WithIdOnAMegabyteResultIsByteIdenticalExceptTheId) {
  std::string text;
  text.reserve(1 << 20);
  for (std::size_t i = 0; text.size() < (1u << 20); ++i) {
    text += "line " + std::to_string(i) + R"( {"x":"\"}\\"} )";
  }
  const std::string result = R"({"content":[{"type":"text","text":)" + quote(text) + "}]}";
  const std::string m = R"({"jsonrpc":"2.0","id":1234567,"result":)" + result + "}";
  const Envelope e = parse_envelope(m);
  ASSERT_EQ(e.kind, Kind::kResponse) << e.problem;
  ASSERT_EQ(e.result.in(m), result);

  const std::string out = with_id(m, e.id, "1");
  EXPECT_EQ(out.size(), m.size() - std::string_view("1234567").size() + 1);
  const Envelope back = parse_envelope(out);
  ASSERT_EQ(back.kind, Kind::kResponse) << back.problem;
  EXPECT_EQ(back.id.in(out), "1");
  EXPECT_TRUE(back.result.in(out) == result);  // not EXPECT_EQ: a failure would print 1 MB
  EXPECT_EQ(out.substr(0, e.id.offset), m.substr(0, e.id.offset));
}

TEST(Envelope, WithIdAtStringId) {
  const std::string m = R"({"id":"up-1","jsonrpc":"2.0","error":{"code":1,"message":"x"}})";
  const Envelope e = parse_envelope(m);
  ASSERT_EQ(e.kind, Kind::kResponse);
  EXPECT_EQ(with_id(m, e.id, "5"), R"({"id":5,"jsonrpc":"2.0","error":{"code":1,"message":"x"}})");
}

// ---------------------------------------------------------------------------------------------
// Batches

TEST(Envelope, IsBatch) {
  EXPECT_TRUE(is_batch("[]"));
  EXPECT_TRUE(is_batch(" \r\n\t[{}]"));
  EXPECT_FALSE(is_batch("{}"));
  EXPECT_FALSE(is_batch("  {\"a\":[1]}"));
  EXPECT_FALSE(is_batch(""));
  EXPECT_FALSE(is_batch("   "));
}

TEST(Envelope, SplitBatchReturnsRawElements) {
  const std::string a = R"({"jsonrpc":"2.0","id":1,"method":"a","params":{"s":"],[,"}})";
  const std::string b = R"({"jsonrpc":"2.0","method":"b"})";
  const std::string c = R"([1,"]"])";
  auto parts = split_batch(" [ " + a + " ,\n" + b + "," + c + ",7,\"x\" ] \n");
  ASSERT_TRUE(parts.ok()) << parts.error();
  EXPECT_EQ(*parts, (std::vector<std::string>{a, b, c, "7", "\"x\""}));
}

TEST(Envelope, SplitBatchEmptyArray) {
  auto parts = split_batch(" [ ] ");
  ASSERT_TRUE(parts.ok()) << parts.error();
  EXPECT_TRUE(parts->empty());
}

TEST(Envelope, SplitBatchRejectsMalformedArrays) {
  for (std::string bad : {"", "{}", "[", "[1,]", "[,1]", "[1 2]", "[1]x", "[1][2]", "[{]",
                          "[\"unterminated]", "[1,{\"a\":}]"}) {
    const auto parts = split_batch(bad);
    EXPECT_FALSE(parts.ok()) << bad;
    EXPECT_FALSE(parts.error().empty()) << bad;
  }
}

TEST(Envelope, SplitBatchTruncatedAtEveryByteFails) {
  const std::string batch =
      R"([{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"b"}])";
  ASSERT_TRUE(split_batch(batch).ok());
  for (std::size_t n = 0; n < batch.size(); ++n) {
    const auto parts = split_batch(batch.substr(0, n));
    EXPECT_FALSE(parts.ok()) << n;
    EXPECT_FALSE(parts.error().empty());
  }
}

// ---------------------------------------------------------------------------------------------
// Builders

TEST(Envelope, MakeRequest) {
  const std::string m = make_request("7", "tools/\"call\"", R"({"name":"x"})");
  const bj::value v = parse_json(m);
  EXPECT_EQ(v.at("jsonrpc"), "2.0");
  EXPECT_EQ(v.at("id"), 7);
  EXPECT_EQ(v.at("method"), "tools/\"call\"");
  EXPECT_EQ(v.at("params").at("name"), "x");
  const Envelope e = parse_envelope(m);
  EXPECT_EQ(e.kind, Kind::kRequest);
  EXPECT_EQ(e.method, "tools/\"call\"");

  const bj::value bare = parse_json(make_request("\"s\"", "ping", {}));
  EXPECT_EQ(bare.at("id"), "s");
  EXPECT_FALSE(bare.as_object().contains("params"));
}

TEST(Envelope, MakeNotification) {
  const bj::value v = parse_json(make_notification("notifications/initialized", {}));
  EXPECT_EQ(v.at("jsonrpc"), "2.0");
  EXPECT_EQ(v.at("method"), "notifications/initialized");
  EXPECT_FALSE(v.as_object().contains("id"));
  EXPECT_FALSE(v.as_object().contains("params"));

  const bj::value p = parse_json(make_notification("n", R"({"a":[1]})"));
  EXPECT_EQ(p.at("params").at("a").at(0), 1);
}

TEST(Envelope, MakeResult) {
  const bj::value v = parse_json(make_result("\"x\"", R"({"tools":[]})"));
  EXPECT_EQ(v.at("jsonrpc"), "2.0");
  EXPECT_EQ(v.at("id"), "x");
  EXPECT_TRUE(v.at("result").at("tools").as_array().empty());
  EXPECT_TRUE(parse_json(make_result({}, "{}")).at("id").is_null());
}

TEST(Envelope, MakeError) {
  const bj::value v = parse_json(make_error("3", kInvalidParams, "bad \"arg\"\n\\", R"({"k":1})"));
  EXPECT_EQ(v.at("jsonrpc"), "2.0");
  EXPECT_EQ(v.at("id"), 3);
  EXPECT_EQ(v.at("error").at("code"), -32602);
  EXPECT_EQ(v.at("error").at("message"), "bad \"arg\"\n\\");
  EXPECT_EQ(v.at("error").at("data").at("k"), 1);

  const bj::value no_id = parse_json(make_error({}, kParseError, "parse error"));
  EXPECT_TRUE(no_id.at("id").is_null());
  EXPECT_FALSE(no_id.at("error").as_object().contains("data"));
  EXPECT_EQ(parse_envelope(make_error({}, kParseError, "x")).kind, Kind::kResponse);
}

TEST(Envelope, QuoteEscapesEveryAsciiCharacterReversibly) {
  std::string all;
  for (int c = 0; c < 128; ++c) all += static_cast<char>(c);
  all += "\xc3\xa9 \xe2\x82\xac";  // é €: UTF-8 passes through
  const std::string q = quote(all);
  ASSERT_GE(q.size(), 2u);
  EXPECT_EQ(q.front(), '"');
  EXPECT_EQ(q.back(), '"');
  for (char c : q) EXPECT_GE(static_cast<unsigned char>(c), 0x20) << "raw control character";
  const bj::value v = parse_json(q);
  ASSERT_TRUE(v.is_string());
  EXPECT_EQ(std::string(v.as_string()), all);
}

TEST(Envelope, QuoteSimpleCases) {
  EXPECT_EQ(quote(""), "\"\"");
  EXPECT_EQ(quote("abc"), "\"abc\"");
  EXPECT_EQ(quote("a\"b"), R"("a\"b")");
  EXPECT_EQ(quote("a\\b"), R"("a\\b")");
  EXPECT_EQ(quote("a\nb\tc"), R"("a\nb\tc")");
}

TEST(ObjectMembers, NamesAndRawValueSpansInOrder) {
  const std::string text =
      R"( {"name" : "fixture__echo", "arguments":{"a":[1,{"b":"}"}]},"_meta":{"x":1} } )";
  const auto members = object_members(text);
  ASSERT_TRUE(members.has_value());
  ASSERT_EQ(members->size(), 3u);
  EXPECT_EQ((*members)[0].name, "name");
  EXPECT_EQ((*members)[0].value.in(text), "\"fixture__echo\"");
  EXPECT_EQ((*members)[1].value.in(text), R"({"a":[1,{"b":"}"}]})");
  EXPECT_EQ((*members)[2].name, "_meta");
  EXPECT_EQ(object_members("{}")->size(), 0u);
  EXPECT_EQ((*object_members(R"({"n\u0061me":1})"))[0].name, "name");
}

TEST(ObjectMembers, AnythingButOneObjectIsRefused) {
  for (const char* bad : {"", "[]", "1", "{", R"({"a":})", R"({"a":1,})", R"({"a":1} {})",
                          R"({"a" 1})", "{\"a\":\"\x01\"}"}) {
    EXPECT_FALSE(object_members(bad).has_value()) << bad;
  }
}

TEST(ObjectMembers, EveryTruncationOfAValidObjectIsRefused) {
  const std::string text = R"({"name":"t","arguments":{"q":"a\"b","n":[1.5e3,true,null]}})";
  ASSERT_TRUE(object_members(text).has_value());
  for (std::size_t n = 0; n < text.size(); ++n) {
    EXPECT_FALSE(object_members(text.substr(0, n)).has_value()) << n;
  }
}

TEST(RewriteObject, ReplacesDropsAndAppendsWithoutTouchingOtherValues) {
  const std::string text =
      R"({"name":"srv__t","arguments":{"a" : [1, 2]},"_meta":{"toolbridge/session":"x"}})";
  const auto members = *object_members(text);
  EXPECT_EQ(rewrite_object(text, members, {{"name", quote("t")}}, {"_meta"}),
            R"({"name":"t","arguments":{"a" : [1, 2]}})");
  EXPECT_EQ(rewrite_object(text, members, {{"_meta", "{}"}, {"extra", "1"}}, {}),
            R"({"name":"srv__t","arguments":{"a" : [1, 2]},"_meta":{},"extra":1})");
  EXPECT_EQ(rewrite_object("{}", {}, {{"name", quote("t")}}, {}), R"({"name":"t"})");
  const std::string dup = R"({"name":"a","name":"b"})";
  EXPECT_EQ(rewrite_object(dup, *object_members(dup), {{"name", quote("c")}}, {}),
            R"({"name":"c","name":"c"})");
}

TEST(WithMemberValue, SplicesEveryMemberOfTheNameAndKeepsTheRestByteForByte) {
  const std::string text = R"({ "name" : "srv__t", "arguments":{"a" : [1, 2]}, "n\u0061me":"x"})";
  const auto members = *object_members(text);
  EXPECT_EQ(with_member_value(text, members, "name", quote("t")),
            R"({ "name" : "t", "arguments":{"a" : [1, 2]}, "n\u0061me":"t"})");
  EXPECT_EQ(with_member_value(text, members, "missing", "1"), std::nullopt);
  EXPECT_EQ(with_member_value("{}", {}, "name", quote("t")), std::nullopt);
}

TEST(SpanAfterId, SpansAfterTheIdMoveByItsChangeInLength) {
  for (const std::string& message : {std::string(R"({"jsonrpc":"2.0","id":7,"result":{"a":1}})"),
                                     std::string(R"({"result":{"a":1},"jsonrpc":"2.0","id":7})"),
                                     std::string(R"({"id":12345,"error":{"code":1}})")}) {
    const Envelope env = parse_envelope(message);
    for (const std::string_view new_id : {"1", R"("a longer caller id")"}) {
      const std::string rewritten = with_id(message, env.id, new_id);
      const Envelope expected = parse_envelope(rewritten);
      const Span result = span_after_id(env.result, env.id, new_id.size());
      const Span error = span_after_id(env.error, env.id, new_id.size());
      EXPECT_EQ(result.in(rewritten), expected.result.in(rewritten)) << message << " " << new_id;
      EXPECT_EQ(result.offset, expected.result.offset) << message << " " << new_id;
      EXPECT_EQ(error.in(rewritten), expected.error.in(rewritten)) << message << " " << new_id;
      EXPECT_EQ(error.offset, expected.error.offset) << message << " " << new_id;
    }
  }
}

}  // namespace
}  // namespace toolbridge::json
