#include "transport/line_framer.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace toolbridge::transport {
namespace {

using Lines = std::vector<std::string>;

// Feeds `chunks` in order; returns the lines seen and whether every feed succeeded.
struct Fed {
  Lines lines;
  bool ok = true;
};
Fed feed_all(LineFramer& framer, const std::vector<std::string_view>& chunks) {
  Fed out;
  for (std::string_view c : chunks) {
    out.ok = framer.feed(c, [&](std::string_view l) { out.lines.emplace_back(l); }) && out.ok;
  }
  return out;
}

// A stream with LF and CRLF terminators, blank and whitespace-only lines, and a line whose
// content includes '\r' in the middle and spaces at the ends.
const std::string kStream =
    "{\"id\":1}\n"
    "\n"
    "{\"id\":2,\"s\":\"a b\"}\r\n"
    "   \t \n"
    "\r\n"
    "x\ry\n"
    "  padded  \n"
    "{\"id\":3}\n";
const Lines kExpected = {"{\"id\":1}", "{\"id\":2,\"s\":\"a b\"}", "x\ry", "  padded  ",
                         "{\"id\":3}"};

TEST(LineFramer, WholeStreamAtOnce) {
  LineFramer f(1024);
  const Fed r = feed_all(f, {kStream});
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(r.lines, kExpected);
  EXPECT_EQ(f.buffered(), 0u);
}

TEST(LineFramer, ByteByByte) {
  LineFramer f(1024);
  std::vector<std::string_view> chunks;
  for (std::size_t i = 0; i < kStream.size(); ++i) chunks.push_back(std::string_view(kStream).substr(i, 1));
  const Fed r = feed_all(f, chunks);
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(r.lines, kExpected);
  EXPECT_EQ(f.buffered(), 0u);
}

TEST(LineFramer, SplitAtEveryByteBoundary) {
  const std::string_view s = kStream;
  for (std::size_t i = 0; i <= s.size(); ++i) {
    LineFramer f(1024);
    const Fed r = feed_all(f, {s.substr(0, i), s.substr(i)});
    EXPECT_TRUE(r.ok) << "split at " << i;
    EXPECT_EQ(r.lines, kExpected) << "split at " << i;
  }
}

TEST(LineFramer, SplitAtEveryPairOfBoundaries) {
  const std::string_view s = kStream;
  for (std::size_t i = 0; i <= s.size(); ++i) {
    for (std::size_t j = i; j <= s.size(); ++j) {
      LineFramer f(1024);
      const Fed r = feed_all(f, {s.substr(0, i), s.substr(i, j - i), s.substr(j)});
      ASSERT_TRUE(r.ok) << "split at " << i << ", " << j;
      ASSERT_EQ(r.lines, kExpected) << "split at " << i << ", " << j;
    }
  }
}

TEST(LineFramer, PartialLineWaitsForItsNewline) {
  LineFramer f(1024);
  Lines seen;
  auto collect = [&](std::string_view l) { seen.emplace_back(l); };
  EXPECT_TRUE(f.feed("{\"a\":", collect));
  EXPECT_TRUE(seen.empty());
  EXPECT_EQ(f.buffered(), 5u);
  EXPECT_TRUE(f.feed("1}", collect));
  EXPECT_TRUE(seen.empty());
  EXPECT_TRUE(f.feed("\n{\"b\"", collect));
  EXPECT_EQ(seen, Lines{"{\"a\":1}"});
  EXPECT_EQ(f.buffered(), 4u);
}

TEST(LineFramer, EmptyFeedIsHarmless) {
  LineFramer f(8);
  int calls = 0;
  EXPECT_TRUE(f.feed("", [&](std::string_view) { ++calls; }));
  EXPECT_TRUE(f.feed("\n\n\r\n", [&](std::string_view) { ++calls; }));
  EXPECT_EQ(calls, 0);
}

TEST(LineFramer, LineExactlyAtTheCapIsAcceptedHoweverItArrives) {
  constexpr std::size_t kCap = 16;
  const std::string line(kCap, 'x');
  const std::string stream = line + "\n" + line + "\n";
  for (std::size_t i = 0; i <= stream.size(); ++i) {
    LineFramer f(kCap);
    const Fed r = feed_all(f, {std::string_view(stream).substr(0, i), std::string_view(stream).substr(i)});
    EXPECT_TRUE(r.ok) << "split at " << i;
    EXPECT_EQ(r.lines, (Lines{line, line})) << "split at " << i;
  }
}

TEST(LineFramer, OverflowReturnsFalseAndStaysFalse) {
  LineFramer f(16);
  int calls = 0;
  auto count = [&](std::string_view) { ++calls; };
  EXPECT_TRUE(f.feed("ok\n", count));
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(f.feed(std::string(16, 'a'), count));  // at the cap, no newline yet
  EXPECT_FALSE(f.feed("a", count));                  // one byte over
  EXPECT_EQ(f.buffered(), 0u);                       // nothing is kept once poisoned
  EXPECT_FALSE(f.feed("\n", count));
  EXPECT_FALSE(f.feed("short\n", count));
  EXPECT_FALSE(f.feed("", count));
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(f.max_line_bytes(), 16u);
}

TEST(LineFramer, OverflowWhenFedByteByByte) {
  LineFramer f(16);
  const std::string too_long(17, 'z');
  bool ok = true;
  std::size_t fed = 0;
  for (char c : too_long) {
    ok = f.feed(std::string_view(&c, 1), [](std::string_view) { FAIL() << "no line expected"; });
    ++fed;
    if (!ok) break;
  }
  EXPECT_FALSE(ok);
  EXPECT_EQ(fed, 17u);  // exactly the byte that crossed the cap
}

TEST(LineFramer, CompleteLinesInOneChunkDoNotCountAgainstTheCap) {
  // Complete lines never count against the cap; only the unterminated tail does.
  LineFramer f(8);
  std::string chunk;
  for (int i = 0; i < 100; ++i) chunk += "1234567\n";
  Lines seen;
  EXPECT_TRUE(f.feed(chunk + "1234567", [&](std::string_view l) { seen.emplace_back(l); }));
  EXPECT_EQ(seen.size(), 100u);
  EXPECT_EQ(f.buffered(), 7u);
}

// BUG (src/transport/line_framer.h): the cap is checked only against what is left buffered
// after the chunk's complete lines were delivered, so a line longer than max_line_bytes that
// arrives together with its '\n' in one read is delivered instead of poisoning the framer.
// Whether a server's oversized message is rejected then depends on how the kernel chunked
// the pipe (Instance reads 256 KiB at a time, so any max_line_bytes below that is not
// enforced for lines that fit in one read). Fed byte by byte the same line is rejected.
TEST(LineFramer, LineOverTheCapIsRejectedEvenInOneChunk) {
  LineFramer f(16);
  Lines seen;
  const bool ok = f.feed(std::string(100, 'a') + "\n", [&](std::string_view l) { seen.emplace_back(l); });
  EXPECT_FALSE(ok);
  EXPECT_TRUE(seen.empty()) << "a 100-byte line passed a 16-byte cap";
}

// BUG (src/transport/line_framer.h): the '\r' of a CRLF terminator is counted against the cap
// while the line waits for its '\n'. A line of exactly max_line_bytes ending in CRLF is
// accepted when "\r\n" arrives in one chunk but poisons the framer when the split falls
// between '\r' and '\n', so the result depends on chunk boundaries.
TEST(LineFramer, CrlfLineAtTheCapDoesNotDependOnTheSplit) {
  constexpr std::size_t kCap = 16;
  const std::string stream = std::string(kCap, 'x') + "\r\n";
  for (std::size_t i = 0; i <= stream.size(); ++i) {
    LineFramer f(kCap);
    const Fed r = feed_all(f, {std::string_view(stream).substr(0, i), std::string_view(stream).substr(i)});
    EXPECT_TRUE(r.ok) << "split at " << i;
    EXPECT_EQ(r.lines, Lines{std::string(kCap, 'x')}) << "split at " << i;
  }
}

}  // namespace
}  // namespace toolbridge::transport

TEST(LineFramer, GivesBackTheBufferOfALongLine) {
  using toolbridge::transport::LineFramer;
  LineFramer f(64 * 1024 * 1024);
  std::size_t lines = 0;
  const std::string big(8 * 1024 * 1024, 'x');
  EXPECT_TRUE(f.feed(big, [&](std::string_view) { ++lines; }));
  EXPECT_TRUE(f.feed("\n{}\n", [&](std::string_view) { ++lines; }));
  EXPECT_EQ(lines, 2u);
  EXPECT_LE(f.capacity(), LineFramer::kKeptCapacity);
}
