#include "cache/cache_meta.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "json/envelope.h"

namespace toolbridge::cache {
namespace {

// Results and what a hit answers with, `I` standing for the hit's info.
const std::vector<std::pair<std::string, std::string>> kCases = {
    {R"({"content":[],"isError":false})",
     R"({"content":[],"isError":false,"_meta":{"toolbridge/cache":I}})"},
    {R"({"content":[],"_meta":{"a":1}})", R"({"content":[],"_meta":{"a":1,"toolbridge/cache":I}})"},
    {R"({"_meta":{"toolbridge/cache":false,"a":1}})", R"({"_meta":{"toolbridge/cache":I,"a":1}})"},
    {R"({"_meta":3,"x":1})", R"({"_meta":{"toolbridge/cache":I},"x":1})"},
    {R"({})", R"({"_meta":{"toolbridge/cache":I}})"},
    {R"({"_meta":{}})", R"({"_meta":{"toolbridge/cache":I}})"},
    // Names are written as json::quote writes them, without whitespace between members.
    {R"({ "\u0061" : 1 , "_meta" : { "b" : [1, 2] } } )",
     R"({"a":1,"_meta":{"b":[1, 2],"toolbridge/cache":I}})"},
};

std::string fill(const MetaLayout& layout, std::string_view info) {
  std::string out = layout.text;
  for (auto it = layout.holes.rbegin(); it != layout.holes.rend(); ++it) out.insert(*it, info);
  return out;
}

TEST(CacheMeta, AHitSaysSoInTheResultsMeta) {
  for (const auto& [result, answer] : kCases) {
    EXPECT_EQ(with_cache_meta(result, "I"), answer) << result;
    const auto layout = cache_meta_layout(result);
    ASSERT_TRUE(layout) << result;
    ASSERT_EQ(layout->holes.size(), 1u) << result;
    EXPECT_EQ(fill(*layout, "I"), answer) << result;
  }
}

TEST(CacheMeta, EveryMetaOfTheNameIsReplaced) {
  // As json::rewrite_object does: each member of the name gets the value; the last _meta is kept.
  const std::string twice = R"({"_meta":{"x":1},"c":2,"_meta":{"y":2}})";
  const std::string want =
      R"({"_meta":{"y":2,"toolbridge/cache":I},"c":2,"_meta":{"y":2,"toolbridge/cache":I}})";
  EXPECT_EQ(with_cache_meta(twice, "I"), want);
  const auto layout = cache_meta_layout(twice);
  ASSERT_TRUE(layout);
  EXPECT_EQ(layout->holes.size(), 2u);
  EXPECT_EQ(fill(*layout, "I"), want);
  EXPECT_EQ(with_cache_meta(R"({"_meta":{"toolbridge/cache":1,"toolbridge/cache":2}})", "I"),
            R"({"_meta":{"toolbridge/cache":I,"toolbridge/cache":I}})");
}

TEST(CacheMeta, AResultThatIsNotAnObjectComesBackAsIs) {
  for (const char* result : {"[1]", "", "{", R"({"a":1} x)"}) {
    EXPECT_EQ(with_cache_meta(result, "I"), result);
    EXPECT_FALSE(cache_meta_layout(result));
  }
}

TEST(CacheMeta, AHitResponseIsTheResultWithItsInfo) {
  for (const auto& [result, answer] : kCases) {
    const auto layout = cache_meta_layout(result);
    ASSERT_TRUE(layout);
    for (const std::int64_t age : {std::int64_t{0}, std::int64_t{7}, std::int64_t{1234567890123}}) {
      std::string info;
      append_hit_info(info, "memory", age);
      EXPECT_EQ(info, R"({"hit":true,"tier":"memory","age_ms":)" + std::to_string(age) + "}");
      for (const char* id : {"1", R"("abc")", ""}) {
        EXPECT_EQ(hit_response(id, layout->text, layout->holes.front(), "memory", age),
                  json::make_result(id, with_cache_meta(result, info)));
      }
    }
  }
}

TEST(CacheMeta, TheResultSpanFramesTheResultAHitAnswersWith) {
  for (const auto& [result, answer] : kCases) {
    const auto layout = cache_meta_layout(result);
    ASSERT_TRUE(layout);
    std::string info;
    append_hit_info(info, "memory", 42);
    const std::string full = with_cache_meta(result, info);
    for (const char* id : {"1", R"("abc")", ""}) {
      const std::string hit = hit_response(id, layout->text, layout->holes.front(), "memory", 42);
      EXPECT_EQ(result_span(id, hit).in(hit), full);
      const std::string as_sent = json::make_result(id, full);
      EXPECT_EQ(result_span(id, as_sent).in(as_sent),
                json::parse_envelope(as_sent).result.in(as_sent));
    }
  }
}

}  // namespace
}  // namespace toolbridge::cache
