#include "transport/sse_reader.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace toolbridge::transport {
namespace {

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

}  // namespace
}  // namespace toolbridge::transport
