#include <gtest/gtest.h>

#include "parse_support.h"

namespace toolbridge::parse {
namespace {

using testing::split_everywhere;
using testing::summary;
using V = std::vector<std::string>;

TEST(UseMcpTool, OneCall) {
  const auto x = split_everywhere(
      "use_mcp_tool",
      "I'll search.\n<use_mcp_tool>\n<server_name>search</server_name>\n<tool_name>web_search"
      "</tool_name>\n<arguments>\n{\"query\": \"x\", \"page\": null}\n</arguments>\n"
      "</use_mcp_tool>");
  EXPECT_EQ(summary(x), (V{"web_search|search|{\"query\": \"x\", \"page\": null}"}));
  EXPECT_TRUE(x.calls[0].drop_nulls);
  EXPECT_EQ(x.content, "I'll search.");
}

TEST(UseMcpTool, MissingPartsAndCutOff) {
  const auto x = split_everywhere(
      "use_mcp_tool",
      "<use_mcp_tool><tool_name>t</tool_name></use_mcp_tool><use_mcp_tool><server_name>s"
      "</server_name><tool_name>t</tool_name><arguments>{\"a\":");
  EXPECT_EQ(summary(x), (V{"!no <server_name>", "!cut off inside the call"}));
}

TEST(UseMcpTool, MentionIsContent) {
  const auto x = split_everywhere("use_mcp_tool", "The <use_mcp_tool> block is how I call tools.");
  EXPECT_TRUE(x.calls.empty());
  EXPECT_TRUE(x.unparsed.empty());
  EXPECT_EQ(x.content, "The <use_mcp_tool> block is how I call tools.");
}

TEST(AutoFormat, PicksTheFormatOfEachCall) {
  const auto h =
      split_everywhere("auto", "<tool_call>{\"name\":\"a\",\"arguments\":{}}</tool_call>");
  EXPECT_EQ(summary(h), (V{"a||{}"}));
  EXPECT_EQ(h.detected->name(), "hermes");
  const auto q = split_everywhere("auto", "<tool_call><function=a></function></tool_call>");
  EXPECT_EQ(summary(q), (V{"a||"}));
  EXPECT_EQ(q.detected->name(), "qwen3_coder");
  const auto m = split_everywhere("auto", "[TOOL_CALLS]a{}");
  EXPECT_EQ(m.detected->name(), "mistral");
  const auto u = split_everywhere(
      "auto", "<use_mcp_tool><server_name>s</server_name><tool_name>t</tool_name></use_mcp_tool>");
  EXPECT_EQ(u.detected->name(), "use_mcp_tool");
  const auto none = split_everywhere("auto", "Just an answer with `code` and {braces}.");
  EXPECT_EQ(none.detected, nullptr);
  EXPECT_EQ(none.content, "Just an answer with `code` and {braces}.");
}

TEST(Registry, NamesAndUnknown) {
  for (const char* name : {"hermes", "qwen3_coder", "llama3_json", "mistral", "deepseek_v3",
                           "deepseek_v31", "deepseek_v3.1", "use_mcp_tool", "auto"}) {
    EXPECT_NE(find_format(name), nullptr) << name;
  }
  EXPECT_EQ(find_format("hermes2"), nullptr);
  EXPECT_NE(format_names().find("qwen3_coder"), std::string::npos);
}

}  // namespace
}  // namespace toolbridge::parse
