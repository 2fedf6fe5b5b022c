#include "json/utf8.h"

#include <gtest/gtest.h>

using namespace toolbridge::json;

TEST(Utf8, WellFormedSequences) {
  EXPECT_EQ(utf8_sequence_length("a"), 1u);
  EXPECT_EQ(utf8_sequence_length("\xC3\xA9"), 2u);          // é
  EXPECT_EQ(utf8_sequence_length("\xE2\x82\xAC"), 3u);      // €
  EXPECT_EQ(utf8_sequence_length("\xF0\x9F\x98\x80"), 4u);  // 😀
  EXPECT_TRUE(is_valid_utf8("caf\xC3\xA9 \xE2\x82\xAC"));
}

TEST(Utf8, IllFormedSequences) {
  for (std::string_view bad :
       {"\xFF", "\xC0\xAF", "\xE0\x80\xAF", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\xC3", "\xE2\x82",
        "\x80", "\xF5\x80\x80\x80"}) {
    EXPECT_EQ(utf8_sequence_length(bad), 0u) << testing::PrintToString(bad);
    EXPECT_FALSE(is_valid_utf8(bad));
  }
}

TEST(Utf8, ReplacesEachBadByteAndKeepsTheRest) {
  EXPECT_EQ(replace_invalid_utf8("caf\xE9!"), "caf\xEF\xBF\xBD!");
  EXPECT_EQ(replace_invalid_utf8("\xFF\xFE"), "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(replace_invalid_utf8("ok \xC3\xA9"), "ok \xC3\xA9");
  EXPECT_EQ(replace_invalid_utf8("\xE2\x82"), "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_TRUE(is_valid_utf8(replace_invalid_utf8("\x80\xC3(\xF0\x9F\x98")));
}

TEST(Utf8, RepairStringsReplacesLoneSurrogateEscapesInsideStringsOnly) {
  EXPECT_EQ(repair_strings(R"({"a":"x\ud800y"})"), R"({"a":"x\ufffdy"})");
  EXPECT_EQ(repair_strings(R"(["\udc00","\ud83d\ude00"])"), R"(["\ufffd","\ud83d\ude00"])");
  EXPECT_EQ(repair_strings(R"(["\ud800\ud800\udc00"])"), R"(["\ufffd\ud800\udc00"])");
  EXPECT_EQ(repair_strings(R"(["\\ud800"])"), R"(["\\ud800"])");          // an escaped backslash
  EXPECT_EQ(repair_strings("[\"\xff\\ud800"), "[\"\xEF\xBF\xBD\\ufffd");  // truncated
  EXPECT_EQ(repair_strings(R"(["\ud80"])"), R"(["\ud80"])");  // not an escape: left to the parser
}

TEST(Utf8, Hex4) {
  EXPECT_EQ(hex4("00e9"), 0xE9u);
  EXPECT_EQ(hex4("DBFF"), 0xDBFFu);
  EXPECT_FALSE(hex4("00g9"));
  EXPECT_FALSE(hex4("123"));
}
