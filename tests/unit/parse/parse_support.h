#pragma once
// Helpers for the format tests: the one-shot result as a comparable summary, and the check that
// every way of cutting the text into chunks (at every byte, at every pair of bytes, byte by
// byte) gives the same result.
#include <gtest/gtest.h>

#include <array>
#include <cctype>
#include <string>
#include <string_view>
#include <vector>

#include "parse/extractor.h"

namespace toolbridge::parse::testing {

// name|server|arguments|params per call, then "!" reason per unparsed entry.
inline std::vector<std::string> summary(const Extraction& x) {
  std::vector<std::string> out;
  for (const auto& c : x.calls) {
    std::string s = c.name + "|" + c.server + "|" + c.arguments;
    for (const auto& [k, v] : c.parameters) s += "|" + k + "=" + v;
    out.push_back(s);
  }
  for (const auto& u : x.unparsed) out.push_back("!" + u.reason);
  return out;
}

inline const Format& format(std::string_view name) {
  const Format* f = find_format(name);
  EXPECT_NE(f, nullptr) << name;
  return *f;
}

inline Extraction chunked(const Format& f, std::string_view text,
                          const std::vector<std::size_t>& cuts) {
  Extractor x(f);
  std::size_t from = 0;
  for (std::size_t cut : cuts) {
    x.feed(text.substr(from, cut - from));
    from = cut;
  }
  x.feed(text.substr(from));
  x.finish();
  return x.result();
}

inline void expect_same(const Extraction& want, const Extraction& got, const std::string& how) {
  EXPECT_EQ(summary(want), summary(got)) << how;
  EXPECT_EQ(want.content, got.content) << how;
  EXPECT_EQ(want.reasoning, got.reasoning) << how;
  EXPECT_EQ(want.has_reasoning, got.has_reasoning) << how;
}

// The one-shot result, after checking that every split gives it too.
inline Extraction split_everywhere(std::string_view name, std::string_view text) {
  const Format& f = format(name);
  const Extraction whole = extract(f, text);
  for (std::size_t i = 0; i <= text.size(); ++i) {
    expect_same(whole, chunked(f, text, {i}), "split at " + std::to_string(i));
  }
  if (text.size() <= 160) {
    for (std::size_t i = 0; i <= text.size(); ++i) {
      for (std::size_t j = i; j <= text.size(); ++j) {
        expect_same(whole, chunked(f, text, {i, j}),
                    "split at " + std::to_string(i) + " and " + std::to_string(j));
      }
    }
  }
  std::vector<std::size_t> every;
  for (std::size_t i = 1; i < text.size(); ++i) every.push_back(i);
  expect_same(whole, chunked(f, text, every), "byte by byte");
  return whole;
}

// Nothing the model wrote is lost when no call is read from it: every letter and digit of `text`
// is in the content, the reasoning or an unparsed entry, as often as in `text` — but for the
// models' special tokens (a calls section's markers, the <think> tags), which are syntax and may
// go when the section they open holds nothing.
inline void expect_text_kept(std::string_view text, const Extraction& x) {
  if (!x.calls.empty()) return;
  std::string in(text);
  for (const std::string_view tag :
       {"</think>", "<think>", "[TOOL_CALLS]", "<|python_tag|>", "<｜tool▁calls▁begin｜>",
        "<｜tool▁calls▁end｜>", "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁sep｜>"}) {
    for (std::size_t at; (at = in.find(tag)) != std::string::npos;) in.erase(at, tag.size());
  }
  std::string out = x.content + x.reasoning;
  for (const auto& u : x.unparsed) out += u.text;
  std::array<int, 256> count{};
  for (const char c : in) {
    if (std::isalnum(static_cast<unsigned char>(c))) ++count[static_cast<unsigned char>(c)];
  }
  for (const char c : out) --count[static_cast<unsigned char>(c)];
  for (std::size_t c = 0; c < count.size(); ++c) {
    EXPECT_LE(count[c], 0) << "'" << static_cast<char>(c) << "' lost from: " << text
                           << "\ncontent: " << x.content << "\nreasoning: " << x.reasoning;
  }
}

// Feeding byte by byte, the number of calls reported once the first `prefix` bytes are in.
inline std::size_t calls_after(std::string_view name, std::string_view text, std::size_t prefix) {
  Extractor x(format(name));
  for (std::size_t i = 0; i < prefix; ++i) x.feed(text.substr(i, 1));
  return x.result().calls.size();
}

}  // namespace toolbridge::parse::testing
