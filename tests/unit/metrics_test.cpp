#include "telemetry/metrics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace toolbridge::telemetry {
namespace {

// A strict reader of the Prometheus text exposition format (0.0.4), enough to check what the
// gateway writes: comments, TYPE before samples, label syntax with escapes, numeric values.
struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;  // unescaped values
  std::string value;
};
struct Exposition {
  std::map<std::string, std::string> types;
  std::map<std::string, std::string> help;
  std::vector<Sample> samples;
  std::vector<std::string> errors;

  const Sample* find(const std::string& name, const std::map<std::string, std::string>& labels) const {
    for (const auto& s : samples) {
      if (s.name == name && s.labels == labels) return &s;
    }
    return nullptr;
  }
};

// [a-zA-Z_:][a-zA-Z0-9_:]* (written out: std::regex trips GCC 12 warnings in sanitizer builds).
bool is_name(const std::string& s) {
  auto head = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':'; };
  return !s.empty() && head(s[0]) &&
         std::all_of(s.begin() + 1, s.end(), [&](char c) { return head(c) || (c >= '0' && c <= '9'); });
}

// NaN, +Inf, -Inf, or a decimal number with optional sign, fraction and exponent.
bool is_value(const std::string& s) {
  if (s == "NaN" || s == "+Inf" || s == "-Inf") return true;
  std::size_t p = 0;
  auto digits = [&] {
    const std::size_t start = p;
    while (p < s.size() && s[p] >= '0' && s[p] <= '9') ++p;
    return p - start;
  };
  if (p < s.size() && (s[p] == '+' || s[p] == '-')) ++p;
  std::size_t n = digits();
  if (p < s.size() && s[p] == '.') {
    ++p;
    n += digits();
  }
  if (n == 0) return false;
  if (p < s.size() && (s[p] == 'e' || s[p] == 'E')) {
    ++p;
    if (p < s.size() && (s[p] == '+' || s[p] == '-')) ++p;
    if (digits() == 0) return false;
  }
  return p == s.size();
}

// The family a sample belongs to: histogram series carry _bucket/_sum/_count suffixes.
std::string family(const std::string& name, const std::map<std::string, std::string>& types) {
  for (const char* suffix : {"_bucket", "_sum", "_count"}) {
    const std::string sfx = suffix;
    if (name.size() > sfx.size() && name.compare(name.size() - sfx.size(), sfx.size(), sfx) == 0) {
      const std::string base = name.substr(0, name.size() - sfx.size());
      auto it = types.find(base);
      if (it != types.end() && it->second == "histogram") return base;
    }
  }
  return name;
}

Exposition read_exposition(const std::string& text) {
  Exposition out;
  if (!text.empty() && text.back() != '\n') out.errors.push_back("does not end with a newline");
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) {
      out.errors.push_back("empty line");
      continue;
    }
    if (line.rfind("# TYPE ", 0) == 0) {
      std::istringstream l(line.substr(7));
      std::string name, type, extra;
      l >> name >> type;
      if (!is_name(name)) out.errors.push_back("bad name in: " + line);
      if (type != "counter" && type != "gauge" && type != "histogram" && type != "summary" &&
          type != "untyped") {
        out.errors.push_back("bad type in: " + line);
      }
      if (l >> extra) out.errors.push_back("extra text in: " + line);
      if (out.types.contains(name)) out.errors.push_back("second TYPE for " + name);
      out.types[name] = type;
      continue;
    }
    if (line.rfind("# HELP ", 0) == 0) {
      const std::string rest = line.substr(7);
      const auto sp = rest.find(' ');
      out.help[rest.substr(0, sp)] = sp == std::string::npos ? "" : rest.substr(sp + 1);
      continue;
    }
    if (line[0] == '#') continue;
    Sample s;
    std::size_t p = 0;
    while (p < line.size() && line[p] != '{' && line[p] != ' ') ++p;
    s.name = line.substr(0, p);
    if (!is_name(s.name)) out.errors.push_back("bad metric name in: " + line);
    if (p < line.size() && line[p] == '{') {
      ++p;
      while (p < line.size() && line[p] != '}') {
        std::size_t eq = line.find('=', p);
        if (eq == std::string::npos) break;
        const std::string key = line.substr(p, eq - p);
        if (!is_name(key) || key.find(':') != std::string::npos) {
          out.errors.push_back("bad label name '" + key + "' in: " + line);
        }
        p = eq + 1;
        if (p >= line.size() || line[p] != '"') {
          out.errors.push_back("label value not quoted in: " + line);
          break;
        }
        ++p;
        std::string value;
        bool closed = false;
        while (p < line.size()) {
          const char c = line[p++];
          if (c == '"') {
            closed = true;
            break;
          }
          if (c == '\\') {
            if (p >= line.size()) break;
            const char e = line[p++];
            if (e == 'n') value += '\n';
            else if (e == '\\' || e == '"') value += e;
            else out.errors.push_back(std::string("bad escape \\") + e + " in: " + line);
          } else {
            value += c;
          }
        }
        if (!closed) out.errors.push_back("unterminated label value in: " + line);
        if (s.labels.contains(key)) out.errors.push_back("repeated label in: " + line);
        s.labels[key] = value;
        if (p < line.size() && line[p] == ',') ++p;
      }
      if (p >= line.size() || line[p] != '}') {
        out.errors.push_back("unterminated label set in: " + line);
        continue;
      }
      ++p;
    }
    if (p >= line.size() || line[p] != ' ') {
      out.errors.push_back("no value in: " + line);
      continue;
    }
    s.value = line.substr(p + 1);
    if (!is_value(s.value)) out.errors.push_back("bad value '" + s.value + "' in: " + line);
    if (!out.types.contains(family(s.name, out.types))) {
      out.errors.push_back("sample before its TYPE line: " + line);
    }
    out.samples.push_back(std::move(s));
  }
  return out;
}

TEST(Metrics, LabelsAreRenderedAndEscaped) {
  EXPECT_EQ(labels({}), "");
  EXPECT_EQ(labels({{"server", "a"}}), R"(server="a")");
  EXPECT_EQ(labels({{"server", "a"}, {"tool", "b"}}), R"(server="a",tool="b")");
  EXPECT_EQ(labels({{"v", "q\"b\\n\nz"}}), R"(v="q\"b\\n\nz")");
}

TEST(Metrics, CountersRender) {
  Metrics m;
  m.describe("toolbridge_calls_total", "counter", "Tool calls forwarded.");
  m.add("toolbridge_calls_total", labels({{"server", "a"}}));
  m.add("toolbridge_calls_total", labels({{"server", "a"}}), 4);
  m.add("toolbridge_calls_total", labels({{"server", "b"}}));
  m.add("toolbridge_unlabelled_total", "");
  EXPECT_EQ(m.counter("toolbridge_calls_total", labels({{"server", "a"}})), 5u);
  EXPECT_EQ(m.counter("toolbridge_calls_total", labels({{"server", "c"}})), 0u);
  EXPECT_EQ(m.counter("nope", ""), 0u);

  const std::string text = m.render();
  const Exposition e = read_exposition(text);
  EXPECT_TRUE(e.errors.empty()) << ::testing::PrintToString(e.errors) << "\n" << text;
  EXPECT_EQ(e.types.at("toolbridge_calls_total"), "counter");
  EXPECT_EQ(e.help.at("toolbridge_calls_total"), "Tool calls forwarded.");
  EXPECT_EQ(e.types.at("toolbridge_unlabelled_total"), "counter");
  ASSERT_NE(e.find("toolbridge_calls_total", {{"server", "a"}}), nullptr) << text;
  EXPECT_EQ(e.find("toolbridge_calls_total", {{"server", "a"}})->value, "5");
  EXPECT_EQ(e.find("toolbridge_calls_total", {{"server", "b"}})->value, "1");
  EXPECT_EQ(e.find("toolbridge_unlabelled_total", {})->value, "1");
  EXPECT_NE(text.find("toolbridge_unlabelled_total 1\n"), std::string::npos) << text;
}

TEST(Metrics, DeclaredCounterWithoutSamplesStillHasItsType) {
  Metrics m;
  m.describe("toolbridge_restarts_total", "counter", "Restarts.");
  const Exposition e = read_exposition(m.render());
  EXPECT_TRUE(e.errors.empty()) << ::testing::PrintToString(e.errors);
  EXPECT_EQ(e.types.at("toolbridge_restarts_total"), "counter");
  EXPECT_TRUE(e.samples.empty());
}

TEST(Metrics, HostileLabelValuesStayParseable) {
  Metrics m;
  const std::string nasty = "he said \"hi\"\\\nnext line } { ,=";
  m.add("toolbridge_calls_total", labels({{"tool", nasty}, {"server", "s"}}));
  m.observe("toolbridge_call_seconds", labels({{"tool", nasty}}), 0.2);
  const std::string text = m.render();
  const Exposition e = read_exposition(text);
  EXPECT_TRUE(e.errors.empty()) << ::testing::PrintToString(e.errors) << "\n" << text;
  ASSERT_NE(e.find("toolbridge_calls_total", {{"tool", nasty}, {"server", "s"}}), nullptr) << text;
  ASSERT_NE(e.find("toolbridge_call_seconds_count", {{"tool", nasty}}), nullptr) << text;
  // One sample per physical line: the newline in the value is escaped.
  std::size_t lines = std::count(text.begin(), text.end(), '\n');
  EXPECT_EQ(lines, e.samples.size() + e.types.size() + e.help.size());
}

TEST(Metrics, HistogramBucketsAreCumulative) {
  Metrics m;
  m.describe("toolbridge_call_seconds", "histogram", "Call latency.");
  const std::string l = labels({{"server", "a"}});
  for (double v : {0.0001, 0.0005, 0.003, 0.2, 0.2, 1.0, 7.0, 60.0}) m.observe("toolbridge_call_seconds", l, v);

  const std::string text = m.render();
  const Exposition e = read_exposition(text);
  ASSERT_TRUE(e.errors.empty()) << ::testing::PrintToString(e.errors) << "\n" << text;
  EXPECT_EQ(e.types.at("toolbridge_call_seconds"), "histogram");

  // Expected cumulative count at each bound, computed independently.
  const std::vector<double> observed = {0.0001, 0.0005, 0.003, 0.2, 0.2, 1.0, 7.0, 60.0};
  std::uint64_t previous = 0;
  int buckets = 0;
  for (double bound : Histogram::kBuckets) {
    std::uint64_t expected = 0;
    for (double v : observed) expected += v <= bound ? 1 : 0;
    const Sample* le = nullptr;
    for (const auto& s : e.samples) {
      if (s.name == "toolbridge_call_seconds_bucket" && s.labels.at("server") == "a" &&
          s.labels.contains("le") && s.labels.at("le") != "+Inf" &&
          std::stod(s.labels.at("le")) == bound) {
        le = &s;
      }
    }
    ASSERT_NE(le, nullptr) << "no bucket for le=" << bound << "\n" << text;
    const std::uint64_t got = std::stoull(le->value);
    EXPECT_EQ(got, expected) << "le=" << bound;
    EXPECT_GE(got, previous);
    previous = got;
    ++buckets;
  }
  EXPECT_EQ(buckets, 14);
  const Sample* inf = e.find("toolbridge_call_seconds_bucket", {{"server", "a"}, {"le", "+Inf"}});
  ASSERT_NE(inf, nullptr) << text;
  EXPECT_EQ(inf->value, "8");
  const Sample* count = e.find("toolbridge_call_seconds_count", {{"server", "a"}});
  ASSERT_NE(count, nullptr);
  EXPECT_EQ(count->value, "8");
  const Sample* sum = e.find("toolbridge_call_seconds_sum", {{"server", "a"}});
  ASSERT_NE(sum, nullptr);
  EXPECT_NEAR(std::stod(sum->value), 0.0001 + 0.0005 + 0.003 + 0.2 + 0.2 + 1.0 + 7.0 + 60.0, 1e-9);

  // Bucket lines come in increasing order of le, +Inf last.
  const auto first = text.find("toolbridge_call_seconds_bucket{server=\"a\",le=\"0.0005\"}");
  const auto last = text.find("le=\"10\"}");
  const auto plus_inf = text.find("le=\"+Inf\"}");
  EXPECT_NE(first, std::string::npos) << text;
  EXPECT_LT(first, last);
  EXPECT_LT(last, plus_inf);
}

TEST(Metrics, HistogramWithoutLabels) {
  Metrics m;
  m.observe("toolbridge_start_seconds", "", 0.01);
  const std::string text = m.render();
  const Exposition e = read_exposition(text);
  EXPECT_TRUE(e.errors.empty()) << ::testing::PrintToString(e.errors) << "\n" << text;
  EXPECT_EQ(e.types.at("toolbridge_start_seconds"), "histogram");
  EXPECT_NE(text.find("toolbridge_start_seconds_bucket{le=\"+Inf\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("toolbridge_start_seconds_count 1\n"), std::string::npos) << text;
  ASSERT_NE(e.find("toolbridge_start_seconds_bucket", {{"le", "0.01"}}), nullptr) << text;
  EXPECT_EQ(e.find("toolbridge_start_seconds_bucket", {{"le", "0.01"}})->value, "1");  // le is inclusive
  EXPECT_EQ(e.find("toolbridge_start_seconds_bucket", {{"le", "0.005"}})->value, "0");
}

TEST(Metrics, HistogramObserveDirectly) {
  Histogram h;
  h.observe(0.001);
  h.observe(100);
  EXPECT_EQ(h.count, 2u);
  EXPECT_DOUBLE_EQ(h.sum, 100.001);
  EXPECT_EQ(h.counts[0], 0u);   // 0.0005
  EXPECT_EQ(h.counts[1], 1u);   // 0.001
  EXPECT_EQ(h.counts.back(), 1u);  // 10: 100 falls only in +Inf
}

TEST(Metrics, GaugesAreReadAtRenderTime) {
  Metrics m;
  double live = 3;
  m.gauge("toolbridge_instances", "Running instances.", [&](auto& out) {
    out.emplace_back(labels({{"server", "a"}}), live);
    out.emplace_back(labels({{"server", "b\"x"}}), 0.5);
  });
  m.gauge("toolbridge_sessions", "", [](auto& out) { out.emplace_back("", 12); });

  Exposition e = read_exposition(m.render());
  ASSERT_TRUE(e.errors.empty()) << ::testing::PrintToString(e.errors);
  EXPECT_EQ(e.types.at("toolbridge_instances"), "gauge");
  EXPECT_EQ(e.help.at("toolbridge_instances"), "Running instances.");
  EXPECT_FALSE(e.help.contains("toolbridge_sessions"));
  EXPECT_EQ(e.types.at("toolbridge_sessions"), "gauge");
  EXPECT_EQ(e.find("toolbridge_instances", {{"server", "a"}})->value, "3");
  EXPECT_EQ(e.find("toolbridge_instances", {{"server", "b\"x"}})->value, "0.5");
  EXPECT_EQ(e.find("toolbridge_sessions", {})->value, "12");

  live = 7;
  e = read_exposition(m.render());
  EXPECT_EQ(e.find("toolbridge_instances", {{"server", "a"}})->value, "7");
}

TEST(Metrics, EverythingTogetherIsOneValidExposition) {
  Metrics m;
  m.describe("toolbridge_calls_total", "counter", "Calls.");
  m.describe("toolbridge_errors_total", "counter", "Errors.");
  m.describe("toolbridge_call_seconds", "histogram", "Latency.");
  m.add("toolbridge_calls_total", labels({{"server", "a"}, {"tool", "echo"}}));
  m.observe("toolbridge_call_seconds", labels({{"server", "a"}}), 0.02);
  m.observe("toolbridge_call_seconds", labels({{"server", "b"}}), 2);
  m.gauge("toolbridge_in_flight", "In flight.", [](auto& out) { out.emplace_back("", 0); });
  const std::string text = m.render();
  const Exposition e = read_exposition(text);
  EXPECT_TRUE(e.errors.empty()) << ::testing::PrintToString(e.errors) << "\n" << text;
  EXPECT_EQ(e.types.size(), 4u);
  // 1 counter + 2 x (14 buckets + +Inf + sum + count) + 1 gauge.
  EXPECT_EQ(e.samples.size(), 1u + 2 * 17 + 1);
}

}  // namespace
}  // namespace toolbridge::telemetry
