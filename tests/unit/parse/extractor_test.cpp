// The extractor around every format: random mixes of every format's markers, braces, quotes,
// fences and text give the same result however they are cut into chunks, and never crash.
#include "parse/extractor.h"

#include <gtest/gtest.h>

#include <random>

#include "parse_support.h"

namespace toolbridge::parse {
namespace {

TEST(Extractor, RandomMixesOfMarkersAreSplitInvariant) {
  const std::vector<std::string> pieces{"<tool_call>",
                                        "</tool_call>",
                                        "<function=f>",
                                        "<parameter=p>",
                                        "</parameter>",
                                        "</function>",
                                        "<|python_tag|>",
                                        "[TOOL_CALLS]",
                                        "[ARGS]",
                                        "<｜tool▁calls▁begin｜>",
                                        "<｜tool▁call▁begin｜>",
                                        "<｜tool▁sep｜>",
                                        "<｜tool▁call▁end｜>",
                                        "<use_mcp_tool>",
                                        "<server_name>s</server_name>",
                                        "<tool_name>t</tool_name>",
                                        "<arguments>",
                                        "</arguments>",
                                        "</use_mcp_tool>",
                                        "<think>",
                                        "</think>",
                                        "```",
                                        "`",
                                        "{",
                                        "}",
                                        "[",
                                        "]",
                                        "\"",
                                        "\\",
                                        "\"name\":\"a\"",
                                        "\"arguments\":{}",
                                        ",",
                                        ";",
                                        "\n",
                                        " ",
                                        "text",
                                        "é"};
  std::mt19937 rng(17);
  for (const char* name :
       {"auto", "hermes", "qwen3_coder", "llama3_json", "mistral", "deepseek_v3", "use_mcp_tool"}) {
    for (int n = 0; n < 12; ++n) {
      std::string text;
      const int parts = 2 + static_cast<int>(rng() % 14);
      for (int i = 0; i < parts; ++i) text += pieces[rng() % pieces.size()];
      SCOPED_TRACE(std::string(name) + ": " + text);
      testing::expect_text_kept(text, testing::split_everywhere(name, text));
    }
  }
}

TEST(Extractor, FinishedExtractorIgnoresMoreText) {
  Extractor x(*find_format("hermes"));
  x.feed("<tool_call>{\"name\":\"a\"}");
  x.finish();
  EXPECT_EQ(x.result().calls.size(), 1u);
  x.feed("<tool_call>{\"name\":\"b\"}</tool_call>");
  x.finish();
  EXPECT_EQ(x.result().calls.size(), 1u);
  EXPECT_TRUE(x.finished());
}

}  // namespace
}  // namespace toolbridge::parse
