#include "transport/sse_reader.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace toolbridge::transport {
namespace {

using namespace std::string_literals;

// Message events with LF and CRLF endings, a multi-line data field, a comment, an id and retry
// field, an `endpoint` event (skipped), and data without the optional space.
const std::string kStream =
    ": stream open\n\n"
    "event: message\ndata: {\"id\":1}\n\n"
    "id: 7\r\nretry: 100\r\ndata: {\"a\":\r\ndata: 2}\r\n\r\n"
    "event: endpoint\ndata: /messages?sessionId=x\n\n"
    "data:{\"tight\":true}\n\n";
const std::vector<std::string> kEvents = {R"({"id":1})", "{\"a\":\n2}", R"({"tight":true})"};

std::vector<std::string> parse(const std::vector<std::string_view>& pieces) {
  SseReader reader;
  std::vector<std::string> out;
  for (auto p : pieces) reader.feed(p, [&](std::string e) { out.push_back(std::move(e)); });
  return out;
}

TEST(SseReader, WholeStream) {
  EXPECT_EQ(parse({kStream}), kEvents);
}

TEST(SseReader, SplitAtEveryByteBoundary) {
  for (std::size_t i = 0; i <= kStream.size(); ++i) {
    const std::string_view s(kStream);
    EXPECT_EQ(parse({s.substr(0, i), s.substr(i)}), kEvents) << "split at " << i;
  }
}

TEST(SseReader, OneByteAtATime) {
  std::vector<std::string_view> bytes;
  for (std::size_t i = 0; i < kStream.size(); ++i)
    bytes.push_back(std::string_view(kStream).substr(i, 1));
  EXPECT_EQ(parse(bytes), kEvents);
}

TEST(SseReader, IncompleteEventIsHeldBack) {
  EXPECT_TRUE(parse({"data: {\"x\":1}\n"}).empty());
  EXPECT_TRUE(parse({"data: no blank line yet"}).empty());
}

// Every event (type, data) and the reader's id and retry at the end, for `pieces` fed in order.
struct Seen {
  std::vector<std::pair<std::string, std::string>> events;
  std::string last_id;
  long retry_ms = -1;
  bool operator==(const Seen&) const = default;
};
Seen feed_all(const std::vector<std::string_view>& pieces) {
  SseReader reader;
  Seen seen;
  for (auto p : pieces) {
    reader.feed_events(p, [&](std::string_view type, std::string data) {
      seen.events.emplace_back(std::string(type), std::move(data));
    });
  }
  seen.last_id = reader.last_id();
  seen.retry_ms = reader.retry_ms();
  return seen;
}

// Lone CR line ends, a BOM, a field without a colon, an empty data field, an id with NUL
// (ignored), a bad retry (ignored), a type that must not leak into the next event, and an id
// that arrives in an event the stream never finishes (not yet the last id).
const std::string kTricky =
    "\xEF\xBB\xBF"
    "event: endpoint\rdata: /post\r\r"
    "data\n\n"
    "data:\ndata:x\n\n"
    "id: 5\nretry: 250\nretry: 3s\ndata: five\n\n"
    "id: a\0b\ndata: still five\r\n\r\n"
    ": only a comment\n\n"
    "unknown: field\nid: 6\ndata: unfinished"s;
const Seen kTrickySeen = {
    {{"endpoint", "/post"}, {"", ""}, {"", "\nx"}, {"", "five"}, {"", "still five"}}, "5", 250};

TEST(SseReader, FollowsTheEventStreamRules) {
  EXPECT_EQ(feed_all({kTricky}), kTrickySeen);
}

TEST(SseReader, TrickyStreamSplitAtEveryPairOfBoundaries) {
  const std::string_view s(kTricky);
  for (std::size_t i = 0; i <= s.size(); ++i) {
    for (std::size_t j = i; j <= s.size(); ++j) {
      ASSERT_EQ(feed_all({s.substr(0, i), s.substr(i, j - i), s.substr(j)}), kTrickySeen)
          << "split at " << i << " and " << j;
    }
  }
}

TEST(SseReader, CarriageReturnAndLineFeedInSeparatePieces) {
  // CR ends the line; the LF that follows in the next piece must not end another (empty) one.
  const Seen seen = feed_all({"data: a\r", "\ndata: b\r", "\n\r", "\n"});
  EXPECT_EQ(seen.events, (std::vector<std::pair<std::string, std::string>>{{"", "a\nb"}}));
}

TEST(SseReader, ALargeEventInSmallPieces) {
  const std::string payload(1 << 20, 'x');
  const std::string stream = "data: " + payload + "\n\n";
  SseReader reader;
  std::vector<std::string> out;
  for (std::size_t at = 0; at < stream.size(); at += 16 * 1024) {
    reader.feed(std::string_view(stream).substr(at, 16 * 1024),
                [&](std::string e) { out.push_back(std::move(e)); });
    if (out.empty()) {
      EXPECT_GT(reader.buffered(), 0u);
    }
  }
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0], payload);
  EXPECT_EQ(reader.buffered(), 0u);
}

}  // namespace
}  // namespace toolbridge::transport
