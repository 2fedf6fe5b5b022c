#include "gateway/input_required.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/json.hpp>
#include <memory>
#include <string>

namespace toolbridge::gateway {
namespace {

namespace bj = boost::json;

struct Answer {
  bool called = false;
  bool is_error = false;
  std::string raw;
};

upstream::CallSink::Reply into(Answer& a) {
  return [&a](bool is_error, std::string raw) {
    a.called = true;
    a.is_error = is_error;
    a.raw = std::move(raw);
  };
}

mcp::StatelessEnvelope client(bool elicitation, bool sampling = false) {
  mcp::StatelessEnvelope e;
  e.version = std::string(mcp::kStatelessVersion);
  e.elicitation = elicitation;
  e.sampling = sampling;
  return e;
}

std::shared_ptr<Conversation> conversation(boost::asio::io_context& io, mcp::StatelessEnvelope env,
                                           bj::object provided = {}) {
  auto c = std::make_shared<Conversation>(io, std::weak_ptr<Session>(), false, std::move(env),
                                          std::move(provided), false);
  c->method = "tools/call";
  c->name = "fixture__ask";
  return c;
}

const std::string kElicit =
    R"({"message":"Name?","requestedSchema":{"type":"object"},"_meta":{"toolbridge/input_key":"user_name"}})";

TEST(InputRequired, AServerRequestBecomesAnInputRequestAndItsAnswerGoesBack) {
  boost::asio::io_context io;
  auto conv = conversation(io, client(true));
  Answer a;
  conv->on_server_request("elicitation/create", kElicit, into(a));
  ASSERT_TRUE(conv->has_asks());
  EXPECT_FALSE(a.called);
  const bj::value result = bj::parse(conv->input_required_result("STATE"));
  EXPECT_EQ(result.at("resultType").as_string(), "input_required");
  EXPECT_EQ(result.at("requestState").as_string(), "STATE");
  const auto& ask = result.at("inputRequests").at("user_name");
  EXPECT_EQ(ask.at("method").as_string(), "elicitation/create");
  EXPECT_EQ(ask.at("params").at("message").as_string(), "Name?");
  EXPECT_FALSE(ask.at("params").as_object().contains("_meta")) << "the key hint is the gateway's";
  EXPECT_FALSE(conv->has_asks());
  conv->provide(bj::parse(R"({"user_name":{"action":"accept","content":{"name":"Alice"}},
                              "extra":{"action":"decline"}})")
                    .as_object());
  ASSERT_TRUE(a.called);
  EXPECT_FALSE(a.is_error);
  EXPECT_EQ(bj::parse(a.raw).at("content").at("name").as_string(), "Alice");
}

TEST(InputRequired, UnkeyedRequestsAreNumberedAndMissingAnswersAreAskedAgain) {
  boost::asio::io_context io;
  auto conv = conversation(io, client(true));
  Answer first, second;
  conv->on_server_request("elicitation/create", R"({"message":"a"})", into(first));
  conv->on_server_request("elicitation/create", R"({"message":"b"})", into(second));
  const bj::value result = bj::parse(conv->input_required_result("S"));
  EXPECT_TRUE(result.at("inputRequests").as_object().contains("input-1"));
  EXPECT_TRUE(result.at("inputRequests").as_object().contains("input-2"));
  conv->provide(bj::parse(R"({"input-2":{"action":"accept","content":{}}})").as_object());
  EXPECT_TRUE(second.called);
  EXPECT_FALSE(first.called);
  ASSERT_TRUE(conv->has_asks()) << "the unanswered one is re-requested";
  const bj::value again = bj::parse(conv->input_required_result("S2"));
  EXPECT_EQ(again.at("inputRequests").at("input-1").at("params").at("message").as_string(), "a");
}

TEST(InputRequired, AnUndeclaredCapabilityIsRefusedWithTheRevisionsError) {
  boost::asio::io_context io;
  auto conv = conversation(io, client(/*elicitation=*/false, /*sampling=*/true));
  Answer a;
  conv->on_server_request("elicitation/create", kElicit, into(a));
  ASSERT_TRUE(a.called);
  EXPECT_TRUE(a.is_error);
  const bj::value e = bj::parse(a.raw);
  EXPECT_EQ(e.at("code").as_int64(), mcp::kMissingClientCapability);
  EXPECT_TRUE(e.at("data").at("requiredCapabilities").as_object().contains("elicitation"));
  EXPECT_FALSE(conv->has_asks());
}

TEST(InputRequired, ResponsesSentWithoutAStateAnswerTheRerunAtOnce) {
  boost::asio::io_context io;
  auto conv = conversation(
      io, client(true),
      bj::parse(R"({"user_name":{"action":"accept","content":{"name":"B"}}})").as_object());
  Answer a;
  conv->on_server_request("elicitation/create", kElicit, into(a));
  ASSERT_TRUE(a.called);
  EXPECT_FALSE(a.is_error);
  EXPECT_FALSE(conv->has_asks());
}

TEST(InputRequired, StatesAreSignedAndBoundToTheirRequestAndRound) {
  boost::asio::io_context io;
  InputRequired table(16, std::chrono::minutes(1), toolbridge::base::steady_clock());
  auto conv = conversation(io, client(true));
  conv->round = 1;
  const std::string state = table.park(conv);
  EXPECT_EQ(table.size(), 1u);
  const auto tampered = table.claim(state + "-TAMPERED", "tools/call", "fixture__ask");
  EXPECT_FALSE(tampered);
  EXPECT_NE(tampered.error().find("integrity"), std::string::npos) << tampered.error();
  std::string flipped = state;
  flipped[0] = flipped[0] == 'A' ? 'B' : 'A';
  const auto altered = table.claim(flipped, "tools/call", "fixture__ask");
  EXPECT_FALSE(altered);
  EXPECT_FALSE(altered.error().empty());
  const auto other_name = table.claim(state, "tools/call", "fixture__other");
  EXPECT_FALSE(other_name);
  EXPECT_NE(other_name.error().find("another request"), std::string::npos) << other_name.error();
  const auto other_method = table.claim(state, "prompts/get", "fixture__ask");
  EXPECT_FALSE(other_method);
  EXPECT_FALSE(other_method.error().empty());
  const auto claimed = table.claim(state, "tools/call", "fixture__ask");
  ASSERT_TRUE(claimed) << claimed.error();
  EXPECT_EQ(*claimed, conv);
  EXPECT_EQ(table.size(), 0u);
  // Used once: the same state again finds nothing (the call is run again), without an error.
  const auto again = table.claim(state, "tools/call", "fixture__ask");
  ASSERT_TRUE(again) << again.error();
  EXPECT_EQ(*again, nullptr);
  // The next round's state differs; the old round's is refused.
  conv->round = 2;
  const std::string next = table.park(conv);
  EXPECT_NE(next, state);
  conv->round = 3;
  const auto earlier = table.claim(next, "tools/call", "fixture__ask");
  EXPECT_FALSE(earlier);
  EXPECT_NE(earlier.error().find("earlier round"), std::string::npos) << earlier.error();
}

TEST(InputRequired, TheOldestParkedCallGivesWayPastTheLimit) {
  boost::asio::io_context io;
  InputRequired table(2, std::chrono::minutes(1), toolbridge::base::steady_clock());
  Answer oldest;
  std::vector<std::shared_ptr<Conversation>> convs;
  for (int i = 0; i < 3; ++i) {
    auto conv = conversation(io, client(true));
    conv->on_server_request(
        "elicitation/create", kElicit, i == 0 ? into(oldest) : [](bool, std::string) {});
    conv->input_required_result("S");
    table.park(conv);
    convs.push_back(conv);
  }
  EXPECT_EQ(table.size(), 2u);
  ASSERT_TRUE(oldest.called);
  EXPECT_TRUE(oldest.is_error);
  EXPECT_NE(oldest.raw.find("max_input_required"), std::string::npos) << oldest.raw;
  EXPECT_FALSE(convs[0]->parked);
}

TEST(InputRequired, ExpiredCallsAreDroppedAndTheirServerRequestsRefused) {
  boost::asio::io_context io;
  InputRequired table(8, std::chrono::milliseconds(0), toolbridge::base::steady_clock());
  Answer a;
  auto conv = conversation(io, client(true));
  conv->on_server_request("elicitation/create", kElicit, into(a));
  conv->input_required_result("S");
  const std::string state = table.park(conv);
  const auto expired = table.claim(state, "tools/call", "fixture__ask");
  ASSERT_TRUE(expired) << expired.error();
  EXPECT_EQ(*expired, nullptr);
  ASSERT_TRUE(a.called);
  EXPECT_TRUE(a.is_error);
  EXPECT_NE(a.raw.find("input_required_ttl"), std::string::npos) << a.raw;
}

TEST(InputRequired, OnlyRequestedNotificationsReachTheStatelessClient) {
  boost::asio::io_context io;
  const auto log = [](const char* level) {
    return std::string(R"({"jsonrpc":"2.0","method":"notifications/message","params":{"level":")") +
           level + R"(","data":"x"}})";
  };
  const std::string progress =
      R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}})";
  auto silent = std::make_shared<Conversation>(io, std::weak_ptr<Session>(), true, client(true),
                                               bj::object(), false);
  silent->on_notification(log("error"));
  silent->on_notification(progress);
  EXPECT_TRUE(silent->channel.queue.empty()) << "no logLevel, no progressToken: nothing";
  mcp::StatelessEnvelope warning = client(true);
  warning.log_level = "warning";
  auto chatty = std::make_shared<Conversation>(io, std::weak_ptr<Session>(), true, warning,
                                               bj::object(), true);
  chatty->on_notification(log("info"));
  chatty->on_notification(log("error"));
  chatty->on_notification(progress);
  ASSERT_EQ(chatty->channel.queue.size(), 2u);
  EXPECT_NE(chatty->channel.queue.front().find("\"error\""), std::string::npos);
}

}  // namespace
}  // namespace toolbridge::gateway
