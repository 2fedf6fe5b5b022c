#include "transport/http_client.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "scripted_http_peer.h"
#include "test_certificates.h"
#include "transport/sse_reader.h"

namespace toolbridge::transport {
namespace {

using namespace std::chrono_literals;
using testing::ok_response;
using testing::pause;
using testing::PlainConn;
using testing::run_until_done;
using testing::ScriptedPeer;
using testing::TlsConn;
namespace asio = boost::asio;

HttpRequest post(const std::string& url, std::string body = "{}") {
  HttpRequest r;
  r.verb = http::verb::post;
  r.url = *parse_url(url);
  r.headers = {{"Content-Type", "application/json"}};
  r.body = std::move(body);
  return r;
}

// One piece of a chunked body.
std::string chunk(const std::string& data) {
  char size[16];
  std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  return size + data + "\r\n";
}

// Answers every request on every connection with its request's body, until the client leaves.
asio::awaitable<void> echo_forever(PlainConn& c, int) {
  while (auto request = co_await c.read_request()) {
    const std::string body = request->substr(request->find("\r\n\r\n") + 4);
    const std::string response = ok_response(body);
    co_await c.write(response);
  }
}

TEST(HttpClient, ContentLengthAndChunkedBodies) {
  asio::io_context io;
  ScriptedPeer peer(io, [](PlainConn& c, int) -> asio::awaitable<void> {
    co_await c.read_request();
    const std::string first = ok_response("hello");
    co_await c.write(first);
    co_await c.read_request();
    const std::string head =
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Kind: chunks\r\n\r\n3\r\nabc\r\n";
    co_await c.write(head);
    co_await pause(20ms);
    const std::string tail = "4\r\ndefg\r\n0\r\n\r\n";
    co_await c.write(tail);
    co_await c.read_request();
  });
  HttpClient client(io.get_executor(), {});
  HttpResponse a, b;
  auto body = [&]() -> asio::awaitable<void> {
    const HttpRequest req = post(peer.url());
    a = co_await client.fetch(req, 1024);
    b = co_await client.fetch(req, 1024);
  };
  ASSERT_TRUE(run_until_done(io, body()));
  EXPECT_FALSE(a.error) << a.error.message;
  EXPECT_EQ(a.status, 200);
  EXPECT_EQ(a.body, "hello");
  EXPECT_EQ(a.header("content-type"), "application/json");
  EXPECT_FALSE(b.error) << b.error.message;
  EXPECT_EQ(b.body, "abcdefg");
  EXPECT_EQ(b.header("X-Kind"), "chunks");
  EXPECT_EQ(client.connections_opened(), 1u);
  EXPECT_EQ(peer.accepted(), 1);
}

TEST(HttpClient, KeepAliveConnectionsAreReused) {
  asio::io_context io;
  ScriptedPeer peer(io, echo_forever);
  HttpClient client(io.get_executor(), {});
  std::vector<std::string> bodies;
  std::vector<bool> reused;
  auto body = [&]() -> asio::awaitable<void> {
    for (int i = 0; i < 3; ++i) {
      const HttpRequest req = post(peer.url(), std::to_string(i));
      HttpExchange ex = co_await client.send(req);
      reused.push_back(ex.reused());
      std::string text;
      if (co_await ex.read_header()) co_await ex.read_body(text, 100);
      bodies.push_back(text);
    }
  };
  ASSERT_TRUE(run_until_done(io, body()));
  EXPECT_EQ(bodies, (std::vector<std::string>{"0", "1", "2"}));
  EXPECT_EQ(reused, (std::vector<bool>{false, true, true}));
  EXPECT_EQ(peer.accepted(), 1);
  EXPECT_EQ(client.idle_connections(), 1u);
}

TEST(HttpClient, BusyConnectionsAreBoundedPerOrigin) {
  asio::io_context io;
  ScriptedPeer peer(io, [](PlainConn& c, int) -> asio::awaitable<void> {
    while (co_await c.read_request()) {
      co_await pause(30ms);
      const std::string r = ok_response("x");
      co_await c.write(r);
    }
  });
  HttpClientOptions options;
  options.max_connections = 2;
  HttpClient client(io.get_executor(), options);
  int answered = 0;
  auto one = [&]() -> asio::awaitable<void> {
    const HttpRequest req = post(peer.url());
    HttpResponse r = co_await client.fetch(req, 10);
    if (!r.error && r.body == "x") ++answered;
  };
  auto body = [&]() -> asio::awaitable<void> {
    for (int i = 0; i < 6; ++i) asio::co_spawn(io, one(), asio::detached);
    while (answered < 6) co_await pause(5ms);
  };
  ASSERT_TRUE(run_until_done(io, body()));
  EXPECT_EQ(answered, 6);
  EXPECT_EQ(peer.accepted(), 2);
}

TEST(HttpClient, AnIdleConnectionTheServerClosedIsNotReused) {
  asio::io_context io;
  ScriptedPeer peer(io, [](PlainConn& c, int) -> asio::awaitable<void> {
    co_await c.read_request();
    const std::string r = ok_response("once");
    co_await c.write(r);
    // Closes without saying so (no Connection: close), as servers do on idle timeouts.
  });
  HttpClient client(io.get_executor(), {});
  HttpResponse a, b;
  auto body = [&]() -> asio::awaitable<void> {
    const HttpRequest req = post(peer.url());
    a = co_await client.fetch(req, 100);
    co_await pause(20ms);  // the close has arrived
    b = co_await client.fetch(req, 100);
  };
  ASSERT_TRUE(run_until_done(io, body()));
  EXPECT_EQ(a.body, "once");
  EXPECT_FALSE(b.error) << b.error.message;
  EXPECT_EQ(b.body, "once");
  EXPECT_EQ(peer.accepted(), 2);
}

TEST(HttpClient, ARequestLostToAnIdleCloseIsSentOnceMore) {
  // The server closes the kept-alive connection just as the second request arrives: the
  // request never reached it, so the client resends it on a new connection.
  asio::io_context io;
  ScriptedPeer peer(io, [](PlainConn& c, int n) -> asio::awaitable<void> {
    co_await c.read_request();
    if (n > 0) {
      const std::string r = ok_response("fresh");
      co_await c.write(r);
      co_await c.read_request();
      co_return;
    }
    const std::string r = ok_response("first");
    co_await c.write(r);
    co_await c.read_request();  // dropped unanswered
  });
  HttpClient client(io.get_executor(), {});
  HttpResponse a, b;
  auto body = [&]() -> asio::awaitable<void> {
    const HttpRequest req = post(peer.url());
    a = co_await client.fetch(req, 100);
    b = co_await client.fetch(req, 100);
  };
  ASSERT_TRUE(run_until_done(io, body()));
  EXPECT_EQ(a.body, "first");
  EXPECT_FALSE(b.error) << b.error.message;
  EXPECT_EQ(b.body, "fresh");
  EXPECT_EQ(peer.accepted(), 2);
}

TEST(HttpClient, AFreshConnectionThatBreaksIsNotRetried) {
  asio::io_context io;
  ScriptedPeer peer(io, [](PlainConn& c, int) -> asio::awaitable<void> {
    co_await c.read_request();  // and close without answering
  });
  HttpClient client(io.get_executor(), {});
  HttpResponse r;
  auto body = [&]() -> asio::awaitable<void> {
    const HttpRequest req = post(peer.url());
    r = co_await client.fetch(req, 100);
  };
  ASSERT_TRUE(run_until_done(io, body()));
  EXPECT_EQ(r.error.step, HttpStep::kReadHeader);
  EXPECT_NE(r.error.message.find("broke before it answered"), std::string::npos) << r.error.message;
  EXPECT_EQ(peer.accepted(), 1);
}

TEST(HttpClient, ConnectionRefusedNamesThePeer) {
  asio::io_context io;
  unsigned short port;
  {
    asio::ip::tcp::acceptor a(io, {asio::ip::make_address("127.0.0.1"), 0});
    port = a.local_endpoint().port();
  }
  HttpClient client(io.get_executor(), {});
  HttpResponse r;
  auto body = [&]() -> asio::awaitable<void> {
    const HttpRequest req = post("http://127.0.0.1:" + std::to_string(port) + "/mcp");
    r = co_await client.fetch(req, 100);
  };
  ASSERT_TRUE(run_until_done(io, body()));
  EXPECT_EQ(r.error.step, HttpStep::kConnect);
  EXPECT_EQ(r.error.message,
            "cannot connect to 127.0.0.1:" + std::to_string(port) + ": Connection refused");
}

TEST(HttpClient, ServerSentEventsArriveAsTheyAreSent) {
  // Events split across chunks and reads; the second half is sent only once the client has
  // seen the first event, so the body must be read incrementally.
  asio::io_context io;
  bool client_saw_first = false;
  ScriptedPeer peer(io, [&](PlainConn& c, int) -> asio::awaitable<void> {
    co_await c.read_request();
    const std::string head =
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";
    co_await c.write(head);
    const std::string one = chunk("id: 1\nevent: message\ndata: {\"a\"");
    co_await c.write(one);
    co_await pause(10ms);
    const std::string two = chunk(":1}\r") + chunk("\n\ndat");
    co_await c.write(two);
    while (!client_saw_first) co_await pause(5ms);
    const std::string three = chunk("a: 2\r\n\r\n:\n") + "0\r\n\r\n";
    co_await c.write(three);
    co_await c.read_request();
  });
  HttpClient client(io.get_executor(), {});
  std::vector<std::string> events;
  HttpExchange ex;
  SseReader reader;
  auto body = [&]() -> asio::awaitable<void> {
    HttpRequest req = post(peer.url());
    req.body_timeout = 5s;
    ex = co_await client.send(req);
    if (!co_await ex.read_header()) co_return;
    while (!ex.done() && !ex.failed()) {
      const std::string_view piece = co_await ex.read_some();
      reader.feed(piece, [&](std::string data) {
        events.push_back(std::move(data));
        client_saw_first = true;
      });
    }
  };
  ASSERT_TRUE(run_until_done(io, body()));
  EXPECT_FALSE(ex.failed()) << ex.error().message;
  EXPECT_EQ(ex.header("Content-Type"), "text/event-stream");
  EXPECT_EQ(events, (std::vector<std::string>{"{\"a\":1}", "2"}));
  EXPECT_EQ(reader.last_id(), "1");
  EXPECT_EQ(client.idle_connections(), 1u);
}

TEST(HttpClient, AnOwnConnectionIsNeitherCountedNorKept) {
  asio::io_context io;
  ScriptedPeer peer(io, echo_forever);
  HttpClientOptions options;
  options.max_connections = 1;
  HttpClient client(io.get_executor(), options);
  HttpResponse pooled;
  bool stream_open = false;
  auto body = [&]() -> asio::awaitable<void> {
    HttpRequest stream_req = post(peer.url(), "stream");
    stream_req.lease = Lease::kOwn;
    HttpExchange stream = co_await client.send(stream_req);
    stream_open = co_await stream.read_header();
    // The stream holds a connection of its own; the one pooled slot is still free.
    const HttpRequest req = post(peer.url(), "pooled");
    pooled = co_await client.fetch(req, 100);
    std::string rest;
    co_await stream.read_body(rest, 100);
  };
  ASSERT_TRUE(run_until_done(io, body()));
  EXPECT_TRUE(stream_open);
  EXPECT_EQ(pooled.body, "pooled");
  EXPECT_EQ(peer.accepted(), 2);
  EXPECT_EQ(client.idle_connections(), 1u);
}

TEST(HttpClient, AnUnboundedLeaseDoesNotWaitForABusyPool) {
  asio::io_context io;
  ScriptedPeer peer(io, [](PlainConn& c, int n) -> asio::awaitable<void> {
    co_await c.read_request();
    if (n == 0) {  // a stream that stays open
      const std::string head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
      co_await c.write(head);
      co_await c.read_request();
      co_return;
    }
    const std::string r = ok_response("bye");
    co_await c.write(r);
    co_await c.read_request();
  });
  HttpClientOptions options;
  options.max_connections = 1;
  HttpClient client(io.get_executor(), options);
  HttpResponse goodbye;
  bool stream_read_after_close = true;
  auto body = [&]() -> asio::awaitable<void> {
    const HttpRequest stream_req = post(peer.url());
    HttpExchange stream = co_await client.send(stream_req);
    co_await stream.read_header();
    HttpRequest req = post(peer.url());
    req.lease = Lease::kUnbounded;
    goodbye = co_await client.fetch(req, 100);
    stream.close();
    const std::string_view rest = co_await stream.read_some();
    stream_read_after_close = !rest.empty() || !stream.failed();
  };
  ASSERT_TRUE(run_until_done(io, body()));
  EXPECT_EQ(goodbye.body, "bye");
  EXPECT_FALSE(stream_read_after_close);
  EXPECT_EQ(peer.accepted(), 2);
}

TEST(HttpClient, ABodyOverTheLimitIsAnError) {
  asio::io_context io;
  ScriptedPeer peer(io, echo_forever);
  HttpClient client(io.get_executor(), {});
  HttpResponse r;
  auto body = [&]() -> asio::awaitable<void> {
    const HttpRequest req = post(peer.url(), std::string(100000, 'x'));
    r = co_await client.fetch(req, 10);
  };
  ASSERT_TRUE(run_until_done(io, body()));
  EXPECT_EQ(r.error.step, HttpStep::kTooLong);
  EXPECT_NE(r.error.message.find("longer than 10 bytes"), std::string::npos) << r.error.message;
  EXPECT_EQ(client.idle_connections(), 0u);  // closed with the body half read
}

TEST(HttpClient, CloseEndsExchangesInFlight) {
  asio::io_context io;
  ScriptedPeer peer(io, [](PlainConn& c, int) -> asio::awaitable<void> {
    co_await c.read_request();
    co_await c.read_request();  // never answers
  });
  HttpClient client(io.get_executor(), {});
  HttpResponse r, after;
  auto body = [&]() -> asio::awaitable<void> {
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          co_await pause(30ms);
          client.close();
        },
        asio::detached);
    const HttpRequest req = post(peer.url());
    r = co_await client.fetch(req, 10);
    after = co_await client.fetch(req, 10);
  };
  ASSERT_TRUE(run_until_done(io, body()));
  EXPECT_EQ(r.error.step, HttpStep::kClosed) << r.error.message;
  EXPECT_EQ(after.error.step, HttpStep::kClosed) << after.error.message;
}

// ---- time limits on every step -----------------------------------------------------------

HttpResponse fetch_with(asio::io_context& io, const HttpClientOptions& options,
                        const HttpRequest& req) {
  HttpClient client(io.get_executor(), options);
  HttpResponse r;
  auto body = [&]() -> asio::awaitable<void> { r = co_await client.fetch(req, 1 << 20); };
  EXPECT_TRUE(run_until_done(io, body()));
  return r;
}

TEST(HttpClientTimeouts, Connect) {
  // A listener whose accept queue is full drops new SYNs, so connecting hangs.
  asio::io_context io;
  asio::ip::tcp::acceptor full(io, {asio::ip::make_address("127.0.0.1"), 0});
  full.listen(0);
  const auto at = full.local_endpoint();
  std::vector<std::unique_ptr<asio::ip::tcp::socket>> fillers;
  for (int i = 0; i < 4; ++i) {
    fillers.push_back(std::make_unique<asio::ip::tcp::socket>(io));
    fillers.back()->async_connect(at, [](boost::system::error_code) {});
  }
  io.run_for(50ms);
  HttpClientOptions options;
  options.connect_timeout = 150ms;
  const HttpRequest req = post("http://127.0.0.1:" + std::to_string(at.port()) + "/");
  const HttpResponse r = fetch_with(io, options, req);
  EXPECT_EQ(r.error.step, HttpStep::kConnect) << r.error.message;
  EXPECT_TRUE(r.error.timed_out()) << r.error.message;
  EXPECT_NE(r.error.message.find("no answer within 150 ms"), std::string::npos) << r.error.message;
}

TEST(HttpClientTimeouts, TlsHandshake) {
  asio::io_context io;
  ScriptedPeer silent(io, [](PlainConn& c, int) -> asio::awaitable<void> {
    co_await c.read_request();  // a TLS ClientHello never ends a request head: silence
  });
  HttpClientOptions options;
  options.handshake_timeout = 150ms;
  const HttpRequest req = post(silent.url("https"));
  const HttpResponse r = fetch_with(io, options, req);
  EXPECT_EQ(r.error.step, HttpStep::kHandshake) << r.error.message;
  EXPECT_TRUE(r.error.timed_out());
}

TEST(HttpClientTimeouts, Write) {
  asio::io_context io;
  ScriptedPeer deaf(io, [](PlainConn&, int) -> asio::awaitable<void> {
    co_await pause(2s);  // never reads: the socket buffers fill up
  });
  HttpRequest req = post(deaf.url(), std::string(64u << 20, 'x'));
  req.write_timeout = 150ms;
  const HttpResponse r = fetch_with(io, {}, req);
  EXPECT_EQ(r.error.step, HttpStep::kWrite) << r.error.message;
  EXPECT_TRUE(r.error.timed_out());
  EXPECT_NE(r.error.message.find("not written within 150 ms"), std::string::npos);
}

TEST(HttpClientTimeouts, ReadHeader) {
  asio::io_context io;
  ScriptedPeer mute(io, [](PlainConn& c, int) -> asio::awaitable<void> {
    co_await c.read_request();
    co_await c.read_request();
  });
  HttpRequest req = post(mute.url());
  req.header_timeout = 150ms;
  const HttpResponse r = fetch_with(io, {}, req);
  EXPECT_EQ(r.error.step, HttpStep::kReadHeader) << r.error.message;
  EXPECT_TRUE(r.error.timed_out());
  EXPECT_NE(r.error.message.find("did not answer within 150 ms"), std::string::npos);
}

TEST(HttpClientTimeouts, ReadBody) {
  asio::io_context io;
  ScriptedPeer stalls(io, [](PlainConn& c, int) -> asio::awaitable<void> {
    co_await c.read_request();
    const std::string part = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc";
    co_await c.write(part);
    co_await c.read_request();
  });
  HttpRequest req = post(stalls.url());
  req.body_timeout = 150ms;
  const HttpResponse r = fetch_with(io, {}, req);
  EXPECT_EQ(r.error.step, HttpStep::kReadBody) << r.error.message;
  EXPECT_TRUE(r.error.timed_out());
  EXPECT_NE(r.error.message.find("sent nothing for 150 ms"), std::string::npos);
}

// ---- TLS with a private CA ---------------------------------------------------------------

class HttpClientTls : public ::testing::Test {
 protected:
  void SetUp() override {
    certs_ = testing::make_certificates("IP:127.0.0.1");
    ca_file_ = testing::write_temp_file(certs_.ca_pem);
    server_tls_.use_certificate_chain(asio::buffer(certs_.server_pem));
    server_tls_.use_private_key(asio::buffer(certs_.key_pem), asio::ssl::context::pem);
  }
  void TearDown() override { std::remove(ca_file_.c_str()); }

  // Two requests through a TLS echo server with `trust`; the responses.
  std::vector<HttpResponse> two_requests(const TlsTrust& trust, const std::string& host) {
    asio::io_context io;
    ScriptedPeer peer(io, server_tls_, [](TlsConn& c, int) -> asio::awaitable<void> {
      while (auto request = co_await c.read_request()) {
        const std::string r = ok_response("secure");
        co_await c.write(r);
      }
    });
    HttpClientOptions options;
    options.tls = trust;
    HttpClient client(io.get_executor(), options);
    std::vector<HttpResponse> out;
    auto body = [&]() -> asio::awaitable<void> {
      const HttpRequest req = post(peer.url("https", host));
      for (int i = 0; i < 2; ++i) {
        HttpResponse r = co_await client.fetch(req, 100);
        out.push_back(std::move(r));
      }
    };
    EXPECT_TRUE(run_until_done(io, body()));
    accepted_ = peer.accepted();
    return out;
  }

  testing::Certificates certs_;
  std::string ca_file_;
  asio::ssl::context server_tls_{asio::ssl::context::tls_server};
  int accepted_ = 0;
};

TEST_F(HttpClientTls, APrivateCaIsTrustedAndConnectionsAreKept) {
  const auto r = two_requests({true, ca_file_}, "127.0.0.1");
  ASSERT_EQ(r.size(), 2u);
  for (const auto& one : r) {
    EXPECT_FALSE(one.error) << one.error.message;
    EXPECT_EQ(one.body, "secure");
  }
  EXPECT_EQ(accepted_, 1);
}

TEST_F(HttpClientTls, TheSystemStoreDoesNotTrustIt) {
  const auto r = two_requests({true, ""}, "127.0.0.1");
  ASSERT_FALSE(r.empty());
  EXPECT_EQ(r[0].error.step, HttpStep::kHandshake);
  EXPECT_NE(r[0].error.message.find("certificate verify failed"), std::string::npos)
      << r[0].error.message;
}

TEST_F(HttpClientTls, TheHostNameMustMatch) {
  const auto r = two_requests({true, ca_file_}, "localhost");  // the certificate names an IP
  ASSERT_FALSE(r.empty());
  EXPECT_EQ(r[0].error.step, HttpStep::kHandshake) << r[0].error.message;
}

TEST_F(HttpClientTls, VerificationCanBeTurnedOff) {
  const auto r = two_requests({false, ""}, "localhost");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_FALSE(r[0].error) << r[0].error.message;
  EXPECT_EQ(r[1].body, "secure");
}

TEST_F(HttpClientTls, AnUnreadableCaFileIsReportedUpFront) {
  asio::io_context io;
  HttpClientOptions options;
  options.tls = {true, "/nonexistent/ca.pem"};
  HttpClient client(io.get_executor(), options);
  const base::Status prepared = client.prepare_tls();
  EXPECT_FALSE(prepared.ok());
  const std::string& error = prepared.error();
  EXPECT_NE(error.find("cannot load trusted certificates from '/nonexistent/ca.pem'"),
            std::string::npos)
      << error;
}

}  // namespace
}  // namespace toolbridge::transport
