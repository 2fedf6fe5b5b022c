// The cassette's file format: sealed lines, and a torn or damaged line left out.
#include "replay/record_format.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <sstream>

#include "replay/cassette.h"
#include "replay/cassette_report.h"

namespace {

using namespace toolbridge::replay;

std::string call_line(std::string_view trajectory, std::string_view tool, std::string_view args,
                      int occurrence, std::string_view result) {
  return sealed_line(std::string(R"({"kind":"call","trajectory":")") + std::string(trajectory) +
                     R"(","server":"fx","tool":")" + std::string(tool) + R"(","arguments":)" +
                     std::string(args) + R"(,"occurrence":)" + std::to_string(occurrence) +
                     R"(,"duration_ms":1.5,"fingerprint":"00","result":)" + std::string(result));
}

TEST(RecordFormat, SealedLineVerifiesAndKeepsTheObject) {
  const std::string line = sealed_line(R"({"kind":"run","run":"r1")");
  ASSERT_EQ(line.back(), '\n');
  const std::string_view object = unsealed(std::string_view(line).substr(0, line.size() - 1));
  EXPECT_EQ(object, line.substr(0, line.size() - 1));
  EXPECT_TRUE(object.starts_with(R"({"kind":"run","run":"r1","sum":")"));
}

TEST(RecordFormat, SealInPlaceIsTheSealedLine) {
  std::string body = R"({"kind":"call","x":1)";
  const std::string expected = sealed_line(body);
  seal(body);
  EXPECT_EQ(body, expected);
}

TEST(RecordFormat, APlaceholderSealedLaterIsTheSealedLine) {
  // Lines built one after another and sealed afterwards, as the recorder's writer does, are the
  // lines sealed at once, each by its own bytes only.
  const std::vector<std::string> bodies{R"({"kind":"run","run":"r1")", R"({"kind":"call","x":1)",
                                        R"({"kind":"call","x":"\u00e9t\u00e9 \"q\""})"};
  std::string batch, expected;
  std::vector<std::size_t> ends;
  for (const auto& body : bodies) {
    batch += body;
    append_seal_placeholder(batch);
    ends.push_back(batch.size());
    expected += sealed_line(body);
  }
  ASSERT_EQ(batch.size(), expected.size());
  EXPECT_NE(batch, expected);  // not sealed yet: no line verifies
  EXPECT_EQ(read_log(batch).records.size(), 0u);
  std::size_t from = 0;
  for (std::size_t i = 0; i < ends.size(); ++i) {
    EXPECT_EQ(ends[i] - from, bodies[i].size() + kSealSize);
    seal_in_place(batch, from, ends[i]);
    from = ends[i];
  }
  EXPECT_EQ(batch, expected);
  EXPECT_EQ(read_log(batch).records.size(), bodies.size());
}

TEST(RecordFormat, SumIsTheCrc32OfZlib) {
  // The check value of CRC-32/ISO-HDLC (zlib.crc32(b"123456789")), and every length's tail.
  EXPECT_EQ(crc32("123456789"), 0xCBF43926u);
  EXPECT_EQ(crc32(""), 0u);
  EXPECT_EQ(crc32("The quick brown fox jumps over the lazy dog"), 0x414FA339u);
  const std::string text = "abcdefghijklmnopqrstuvwxyz0123456789";
  for (std::size_t cut = 0; cut <= text.size(); ++cut) {
    EXPECT_EQ(crc32(text.substr(cut), crc32(text.substr(0, cut))), crc32(text)) << cut;
  }
  const std::string line = sealed_line(R"({"kind":"run","run":"r1")");
  EXPECT_EQ(line, std::string(R"({"kind":"run","run":"r1","sum":")") +
                      fmt::format("{:08x}", crc32(R"({"kind":"run","run":"r1")")) + "\"}\n");
}

TEST(RecordFormat, LinesOfFormatOneStillVerify) {
  // Format 1 sealed a line with the FNV-1a 64-bit hash of its body, in 16 hex digits.
  const std::string body = R"({"kind":"run","format":1,"run":"old")";
  const std::string line = body + fmt::format(R"(,"sum":"{:016x}"}})", fnv1a(body));
  EXPECT_EQ(unsealed(line), line);
  std::string damaged = line;
  damaged[5] = 'X';
  EXPECT_TRUE(unsealed(damaged).empty());
  // A sum of another length, or not hex, is no sum.
  EXPECT_TRUE(unsealed(body + R"(,"sum":"0123456789"})").empty());
  EXPECT_TRUE(unsealed(body + R"(,"sum":"zzzzzzzz"})").empty());
}

TEST(RecordFormat, AChangedByteFailsTheSum) {
  std::string line = sealed_line(R"({"kind":"run","run":"r1")");
  line.pop_back();
  line[10] = 'X';
  EXPECT_TRUE(unsealed(line).empty());
  EXPECT_TRUE(unsealed("{}").empty());
  EXPECT_TRUE(unsealed("").empty());
}

TEST(RecordFormat, TornLastLineIsDroppedAndEarlierOnesKept) {
  const std::string a = call_line("t", "counter", "{}", 1, R"({"n":1})");
  const std::string b = call_line("t", "counter", "{}", 2, R"({"n":2})");
  // Cut anywhere inside the last line: the first stays, the second goes.
  for (std::size_t cut = 1; cut < b.size(); ++cut) {
    const LogRead r = read_log(a + b.substr(0, cut));
    ASSERT_EQ(r.records.size(), 1u) << cut;
    EXPECT_TRUE(r.torn_tail) << cut;
  }
  const LogRead whole = read_log(a + b);
  EXPECT_EQ(whole.records.size(), 2u);
  EXPECT_FALSE(whole.torn_tail);
}

TEST(RecordFormat, DamagedMiddleLineIsSkippedAndCounted) {
  std::string a = call_line("t", "counter", "{}", 1, R"({"n":1})");
  a[20] = 'Z';
  const LogRead r = read_log(call_line("t", "x", "{}", 1, "{}") + a +
                             call_line("t", "counter", "{}", 2, "{}"));
  EXPECT_EQ(r.records.size(), 2u);
  EXPECT_EQ(r.damaged, 1u);
  EXPECT_FALSE(r.torn_tail);
}

TEST(Cassette, IndexesByKeyAndCanonicalArguments) {
  const std::string text = sealed_line(R"({"kind":"run","run":"r1")") +
                           call_line("t1", "add", R"({"b":2, "a":1})", 1, R"({"sum":3})") +
                           call_line("t1", "add", R"({"a":1,"b":2})", 2, R"({"sum":30})") +
                           call_line("t2", "add", R"({"a":1,"b":2})", 1, R"({"sum":300})");
  auto parsed = Cassette::parse(text, "/runs/r1");
  ASSERT_TRUE(parsed) << parsed.error();
  const auto& c = *parsed;
  EXPECT_EQ(c->run(), "r1");
  ASSERT_EQ(c->calls().size(), 3u);
  EXPECT_EQ((c->trajectories()), (std::vector<std::string>{"t1", "t2"}));
  const CallRecord* second = c->find("t1", "fx", "add", R"({"a":1,"b":2})", 2);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->payload, R"({"sum":30})");
  EXPECT_FALSE(c->find("t1", "fx", "add", R"({"a":1,"b":2})", 3));
  const CallRecord* near = c->nearest("t2", "fx", "add", R"({"a":1,"b":3})");
  ASSERT_TRUE(near);
  EXPECT_EQ(near->trajectory, "t2");
}

TEST(Cassette, ACallRecordWithoutAResultIsAnError) {
  auto c = Cassette::parse(sealed_line(R"({"kind":"call","server":"fx","tool":"a")"), "/d");
  EXPECT_FALSE(c);
  const std::string& error = c.error();
  EXPECT_NE(error.find("needs server, tool, occurrence"), std::string::npos) << error;
}

TEST(CassetteDiff, FindsTheFirstDivergencePerTrajectoryAndCountsChangedResults) {
  const std::string head = sealed_line(R"({"kind":"run","run":"r")");
  const std::string a = head + call_line("t1", "counter", "{}", 1, R"({"n":1})") +
                        call_line("t1", "echo", R"({"m":"x"})", 1, R"({"m":"x"})") +
                        call_line("t2", "echo", R"({"m":"y"})", 1, R"({"m":"y"})");
  const std::string b = head + call_line("t1", "counter", "{}", 1, R"({"n":7})") +
                        call_line("t1", "echo", R"({"m":"x"})", 1, R"({"m":"x"})") +
                        call_line("t2", "echo", R"({"m":"z"})", 1, R"({"m":"z"})");
  auto ca = Cassette::parse(a, "/a");
  auto cb = Cassette::parse(b, "/b");
  ASSERT_TRUE(ca && cb) << ca.error() << cb.error();
  std::ostringstream out;
  EXPECT_EQ(diff(**ca, **cb, out), 2u);
  const std::string text = out.str();
  EXPECT_NE(text.find("trajectory t1: diverges at call 1: fx/counter {}: different result"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("trajectory t2: diverges at call 1: fx/echo: different arguments"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("fx/counter: 1 / 1"), std::string::npos) << text;
  EXPECT_NE(text.find("fx/echo: 0 / 1"), std::string::npos) << text;
  std::ostringstream same;
  EXPECT_EQ(diff(**ca, **ca, same), 0u);
}

}  // namespace
