// read_parse_turns: a /v1/parse body with `turns`, the keys beside it as every turn's defaults.
#include "frontend/parse_turn.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace toolbridge::frontend {
namespace {

namespace bj = boost::json;

BatchRefusal read(std::string_view body, std::vector<ParseOptions>& out, std::size_t max = 8) {
  return read_parse_turns(bj::parse(body), out, max);
}

TEST(ParseTurns, TurnKeysOverrideTheRequestDefaults) {
  std::vector<ParseOptions> turns;
  const BatchRefusal r = read(R"({"format": "hermes", "execute": true, "timeout_ms": 500,
      "turns": [{"text": "a", "trajectory": "t-1"},
                {"text": "b", "format": "mistral", "execute": false}]})",
                              turns);
  ASSERT_TRUE(r.empty()) << r.message;
  ASSERT_EQ(turns.size(), 2u);
  EXPECT_EQ(turns[0].text, "a");
  EXPECT_EQ(turns[0].format->name(), "hermes");
  EXPECT_TRUE(turns[0].execute);
  EXPECT_EQ(turns[0].trajectory, "t-1");
  EXPECT_EQ(turns[0].timeout, std::chrono::milliseconds(500));
  EXPECT_EQ(turns[1].text, "b");
  EXPECT_EQ(turns[1].format->name(), "mistral");
  EXPECT_FALSE(turns[1].execute);
  EXPECT_TRUE(turns[1].trajectory.empty());  // not carried over from another turn
}

TEST(ParseTurns, AFormatIsAutoUnlessNamed) {
  std::vector<ParseOptions> turns;
  ASSERT_TRUE(read(R"({"turns": [{"text": "a"}]})", turns).empty());
  EXPECT_EQ(turns[0].format->name(), "auto");
}

TEST(ParseTurns, WrongRequestsNameTheTurnAndTheKey) {
  const std::vector<std::pair<std::string_view, std::string_view>> cases = {
      {R"({"turns": []})", "turns must be a non-empty array"},
      {R"({"turns": {"text": "a"}})", "turns must be a non-empty array"},
      {R"({"turns": [{"text": "a"}, 7]})", "turns[1]: a turn must be an object"},
      {R"({"turns": [{"text": "a"}, {}]})", "turns[1]: text is missing"},
      {R"({"turns": [{"text": 5}]})", "turns[0]: text must be a string"},
      {R"({"turns": [{"text": "a", "colour": 1}]})", "turns[0]: unknown key 'colour'"},
      {R"({"turns": [{"text": "a", "turns": []}]})", "turns[0]: a turn cannot hold turns"},
      {R"({"turns": [{"text": "a"}], "text": "b"})", "with turns, text goes in each turn"},
      {R"({"turns": [{"text": "a"}], "format": "gpt"})", "format must be one of"},
  };
  for (const auto& [body, words] : cases) {
    std::vector<ParseOptions> turns;
    const BatchRefusal r = read(body, turns);
    EXPECT_EQ(r.status, 400) << body;
    EXPECT_NE(r.message.find(words), std::string::npos) << body << " -> " << r.message;
  }
}

TEST(ParseTurns, MoreThanTheLimitIs413NamingTheKey) {
  std::string body = R"({"turns": [)";
  for (int i = 0; i < 9; ++i) body += std::string(i ? "," : "") + R"({"text": "x"})";
  body += "]}";
  std::vector<ParseOptions> turns;
  const BatchRefusal r = read(body, turns, 8);
  EXPECT_EQ(r.status, 413);
  EXPECT_EQ(r.code, "too_many_turns");
  EXPECT_EQ(r.message, "9 turns; a request holds at most 8 (gateway.parse_max_turns)");
  EXPECT_TRUE(read(body, turns, 9).empty());
}

}  // namespace
}  // namespace toolbridge::frontend
