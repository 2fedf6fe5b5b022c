#include "transport/http_connection.h"

#include <gtest/gtest.h>

#include "scripted_http_peer.h"

namespace toolbridge::transport {
namespace {

using namespace std::chrono_literals;
using testing::PlainConn;
using testing::run_until_done;
using testing::ScriptedPeer;
namespace asio = boost::asio;

TEST(HttpConnection, DescribesLimitsAsPeopleReadThem) {
  EXPECT_EQ(describe_limit(10'000ms), "10 s");
  EXPECT_EQ(describe_limit(150ms), "150 ms");
}

TEST(HttpConnection, AnIdleConnectionIsReusableUntilThePeerCloses) {
  asio::io_context io;
  bool close_now = false;
  ScriptedPeer peer(io, [&](PlainConn&, int) -> asio::awaitable<void> {
    while (!close_now) co_await testing::pause(5ms);
  });
  const Url url = *parse_url(peer.url());
  std::shared_ptr<HttpConnection> c;
  bool before = false, after = true;
  auto body = [&]() -> asio::awaitable<void> {
    const auto ex = co_await asio::this_coro::executor;
    c = std::make_shared<HttpConnection>(ex, nullptr, url);
    const HttpError e = co_await c->connect(url, true, 1s, 1s);
    if (e) co_return;
    co_await testing::pause(20ms);
    before = c->reusable_when_idle();
    close_now = true;
    co_await testing::pause(50ms);
    after = c->reusable_when_idle();
  };
  ASSERT_TRUE(run_until_done(io, body()));
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->is_open());
  EXPECT_EQ(c->peer(), "127.0.0.1:" + std::to_string(peer.port()));
  EXPECT_TRUE(before);
  EXPECT_FALSE(after);
}

TEST(HttpConnection, AnUnresolvableHostIsAResolveError) {
  asio::io_context io;
  const Url url = *parse_url("http://no-such-host.invalid/");
  HttpError e;
  auto body = [&]() -> asio::awaitable<void> {
    const auto ex = co_await asio::this_coro::executor;
    auto c = std::make_shared<HttpConnection>(ex, nullptr, url);
    e = co_await c->connect(url, true, 5s, 1s);
  };
  ASSERT_TRUE(run_until_done(io, body()));
  EXPECT_EQ(e.step, HttpStep::kResolve);
  EXPECT_EQ(e.message.rfind("cannot resolve no-such-host.invalid: ", 0), 0u) << e.message;
}

}  // namespace
}  // namespace toolbridge::transport
