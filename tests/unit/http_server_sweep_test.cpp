// HttpServer's sweep on a ManualClock: a timeout is counted from when the connection began to
// wait, even when the loop was too busy to sweep on time.
#include <gtest/gtest.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <string>
#include <thread>

#include "base/clock.h"
#include "transport/http_server.h"

namespace toolbridge::transport {
namespace {

using namespace std::chrono_literals;
namespace asio = boost::asio;
using tcp = asio::ip::tcp;

// Polls `io` until `done()` holds or about 5 s of real time pass; false on the latter.
template <class Done>
bool poll_until(asio::io_context& io, Done done) {
  for (int i = 0; i < 5000; ++i) {
    io.poll();
    if (done()) return true;
    std::this_thread::sleep_for(1ms);
  }
  return false;
}

// What the client has been sent so far; `closed` once the server closed the connection.
struct Reader {
  tcp::socket& socket;
  std::string got;
  bool closed = false;
  void read() {
    char chunk[512];
    boost::system::error_code ec;
    for (;;) {
      const std::size_t n = socket.read_some(asio::buffer(chunk), ec);
      got.append(chunk, n);
      if (ec == asio::error::would_block) return;
      if (ec) {
        closed = true;
        return;
      }
    }
  }
};

TEST(HttpServerSweep, ALateSweepNeverCutsAnIdleTimeoutShort) {
  asio::io_context io;
  base::ManualClock clock;
  HttpServerOptions options;
  options.idle_timeout = 1000ms;
  options.write_timeout = 1000ms;  // the sweep runs every 250 ms
  base::Clock::time_point waiting_from{};
  HttpServer server(
      io, options,
      [&](Exchange& exchange) -> asio::awaitable<void> {
        co_await exchange.reply(http::status::ok, "text/plain", "ok\n");
        // The loop is busy for 900 ms: the sweep due at 250 ms runs only after this handler, and
        // the connection begins to wait for its next request at the end of it.
        clock.advance(900ms);
        waiting_from = clock.now();
      },
      clock);
  const base::Status listening = server.listen();
  ASSERT_TRUE(listening) << listening.error();

  tcp::socket client(io);
  client.connect({asio::ip::make_address("127.0.0.1"), server.port()});
  asio::write(client, asio::buffer(std::string("GET / HTTP/1.1\r\nHost: t\r\n\r\n")));
  client.non_blocking(true);
  Reader reader{client};
  ASSERT_TRUE(poll_until(io, [&] {
    reader.read();
    return reader.got.ends_with("ok\n") && waiting_from != base::Clock::time_point{};
  })) << reader.got;
  ASSERT_FALSE(reader.closed);

  // Time moves in 10-ms steps, each followed by the loop's turn, until the gateway closes it.
  base::Clock::time_point closed_at{};
  for (int step = 0; step < 400 && !reader.closed; ++step) {
    clock.advance(10ms);
    closed_at = clock.now();
    ASSERT_TRUE(poll_until(io, [&] { return clock.timers_waiting() > 0 || reader.closed; }));
    reader.read();
  }
  ASSERT_TRUE(reader.closed) << "still open after 4 s of a 1-s idle_timeout";
  const auto waited = closed_at - waiting_from;
  // Never before idle_timeout; at most half of it (two sweep intervals) after.
  EXPECT_GE(waited, 1000ms);
  EXPECT_LE(waited, 1500ms);
  EXPECT_EQ(server.counters().idle_closed, 1u);
  server.stop();
  io.poll();
}

}  // namespace
}  // namespace toolbridge::transport
