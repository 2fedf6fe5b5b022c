#include "mcp/server.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <string>
#include <vector>

namespace toolbridge::mcp {
namespace {

namespace asio = boost::asio;
namespace bj = boost::json;

struct Sent {
  std::string message;
  std::string related;
  bool final;
};

// A server whose one tool reports progress and logs before answering, so every kind of message
// a tool sends can be checked for the request it is tied to.
struct Fixture {
  asio::io_context io;
  Server server{io, ServerOptions{}};
  std::vector<Sent> sent;
  Fixture() {
    server.set_outbox([this](std::string m, const std::string& related, bool final) {
      sent.push_back({std::move(m), related, final});
    });
    server.add_tool({"work", "reports progress and logs", bj::object{{"type", "object"}},
                     [](bj::object, ToolContext& ctx) -> asio::awaitable<bj::object> {
                       ctx.progress(1, 2);
                       ctx.log("info", bj::string("working"));
                       co_return tool_text("done");
                     }});
  }
  void receive(std::string_view line) {
    server.receive(line);
    io.restart();
    io.run();
  }
};

TEST(Server, MessagesOfAToolAreTiedToItsRequest) {
  Fixture f;
  f.receive(R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}})");
  ASSERT_EQ(f.sent.size(), 1u);
  EXPECT_EQ(f.sent[0].related, "1");
  EXPECT_TRUE(f.sent[0].final);
  EXPECT_TRUE(f.server.initialized());
  f.sent.clear();
  f.receive(
      R"({"jsonrpc":"2.0","id":"call-7","method":"tools/call","params":{"name":"work","_meta":{"progressToken":5}}})");
  ASSERT_EQ(f.sent.size(), 3u);
  EXPECT_NE(f.sent[0].message.find("notifications/progress"), std::string::npos);
  EXPECT_NE(f.sent[1].message.find("notifications/message"), std::string::npos);
  EXPECT_NE(f.sent[2].message.find("\"done\""), std::string::npos);
  for (const auto& s : f.sent) EXPECT_EQ(s.related, "\"call-7\"") << s.message;
  EXPECT_FALSE(f.sent[0].final);
  EXPECT_FALSE(f.sent[1].final);
  EXPECT_TRUE(f.sent[2].final);
}

TEST(Server, InvalidInputIsAnErrorTiedToNoRequest) {
  Fixture f;
  f.receive("{not json");
  ASSERT_EQ(f.sent.size(), 1u);
  EXPECT_NE(f.sent[0].message.find("-32700"), std::string::npos);
  EXPECT_TRUE(f.sent[0].related.empty());
}

}  // namespace
}  // namespace toolbridge::mcp
