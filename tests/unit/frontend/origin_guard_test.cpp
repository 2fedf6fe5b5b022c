// The head check in front of every route: one Host that is host[:port], at most one Origin that is
// a serialized origin, then the DNS-rebinding policy. Heads are parsed by Beast from raw text, as
// the listener reads them, so header names arrive in any case.
#include "frontend/origin_guard.h"

#include <gtest/gtest.h>

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <string>
#include <vector>

namespace toolbridge::frontend {
namespace {

namespace http = boost::beast::http;

// `lines` are header lines without CRLF; the request line is added.
transport::Request parse(const std::vector<std::string>& lines, std::string version = "1.1") {
  std::string head = "GET /mcp HTTP/" + version + "\r\n";
  for (const auto& line : lines) head += line + "\r\n";
  head += "\r\n";
  http::request_parser<http::string_body> parser;
  boost::beast::error_code ec;
  parser.put(boost::asio::buffer(head), ec);
  EXPECT_FALSE(ec) << ec.message() << " in " << head;
  EXPECT_TRUE(parser.is_done()) << head;
  return parser.release();
}

const OriginGuard kLoopback("127.0.0.1", {});
const OriginGuard kPublic("0.0.0.0", {});

// The refusal's status, 200 when the request may go on (with its message for failures).
int status(const OriginGuard& guard, const std::vector<std::string>& lines,
           std::string* message = nullptr) {
  const auto refusal = guard.check(parse(lines));
  if (message) *message = refusal ? refusal->message : "";
  return refusal ? static_cast<int>(refusal->status) : 200;
}

TEST(OriginGuard, AcceptsWellFormedLoopbackHeads) {
  for (const char* host : {"127.0.0.1", "127.0.0.1:8848", "localhost", "localhost:1", "LOCALHOST",
                           "[::1]", "[::1]:8848", "[::1]:65535", "localhost:0"}) {
    EXPECT_EQ(status(kLoopback, {std::string("Host: ") + host}), 200) << host;
  }
  for (const char* origin : {"http://localhost:3000", "https://127.0.0.1", "http://[::1]:8848",
                             "HTTP://LOCALHOST", "https://[::1]"}) {
    EXPECT_EQ(status(kLoopback, {"Host: 127.0.0.1:8848", std::string("Origin: ") + origin}), 200)
        << origin;
  }
}

TEST(OriginGuard, HeaderNamesMatchInAnyCase) {
  EXPECT_EQ(status(kLoopback, {"host: localhost", "origin: http://localhost"}), 200);
  EXPECT_EQ(status(kLoopback, {"HOST: localhost", "ORIGIN: http://localhost"}), 200);
  // Differently spelled names are still the same field.
  EXPECT_EQ(status(kLoopback, {"Host: localhost", "hOsT: localhost"}), 400);
  EXPECT_EQ(status(kLoopback,
                   {"host: localhost", "Origin: http://localhost", "ORIGIN: http://localhost"}),
            400);
  // An evil name in a lower-case field is still the Host.
  EXPECT_EQ(status(kLoopback, {"host: evil.example"}), 403);
}

TEST(OriginGuard, AcceptsAnyWellFormedHostOnAPublicListener) {
  for (const char* host : {"gateway.internal:8848", "10.0.0.5", "[2001:db8::1]:443",
                           "[::ffff:10.0.0.1]", "xn--bcher-kva.example", "evil.example"}) {
    EXPECT_EQ(status(kPublic, {std::string("Host: ") + host}), 200) << host;
  }
}

TEST(OriginGuard, AllowedOriginsAndTheirHosts) {
  const OriginGuard guard("127.0.0.1", {"https://app.example", "http://dev.example:8443"});
  EXPECT_EQ(status(guard, {"Host: localhost", "Origin: https://app.example"}), 200);
  EXPECT_EQ(status(guard, {"Host: localhost", "Origin: HTTPS://APP.EXAMPLE"}), 200);
  EXPECT_EQ(status(guard, {"Host: localhost", "Origin: http://dev.example:8443"}), 200);
  // A rebound page on an allowed origin's host: Host names it, as the browser sends it.
  EXPECT_EQ(status(guard, {"Host: app.example", "Origin: https://app.example"}), 200);
  EXPECT_EQ(status(guard, {"Host: dev.example:8443"}), 200);
  // Another port or scheme is another origin.
  EXPECT_EQ(status(guard, {"Host: localhost", "Origin: http://app.example"}), 403);
  EXPECT_EQ(status(guard, {"Host: localhost", "Origin: http://dev.example:8444"}), 403);
  EXPECT_EQ(status(guard, {"Host: dev.example"}), 403);
}

TEST(OriginGuard, TwoHostHeadersAreMalformed) {
  std::string message;
  // Even when both are the same loopback name: one request names one host.
  EXPECT_EQ(status(kLoopback, {"Host: 127.0.0.1", "Host: 127.0.0.1"}, &message), 400);
  EXPECT_NE(message.find("2 Host headers"), std::string::npos) << message;
  // The first looks safe, the second is what a proxy or another parser may read.
  EXPECT_EQ(status(kLoopback, {"Host: localhost", "Host: evil.example"}, &message), 400);
  EXPECT_EQ(status(kLoopback, {"Host: evil.example", "Host: localhost"}), 400);
  EXPECT_EQ(status(kLoopback, {"Host: a", "Host: b", "Host: c"}, &message), 400);
  EXPECT_NE(message.find("3 Host headers"), std::string::npos) << message;
  EXPECT_EQ(status(kPublic, {"Host: a.example", "Host: b.example"}), 400);
}

TEST(OriginGuard, TwoOriginHeadersAreMalformed) {
  std::string message;
  EXPECT_EQ(
      status(kLoopback, {"Host: localhost", "Origin: http://localhost", "Origin: http://localhost"},
             &message),
      400);
  EXPECT_NE(message.find("2 Origin headers"), std::string::npos) << message;
  EXPECT_EQ(status(kLoopback,
                   {"Host: localhost", "Origin: http://localhost", "Origin: http://evil.example"}),
            400);
  EXPECT_EQ(status(kPublic,
                   {"Host: a.example", "Origin: https://a.example", "Origin: https://a.example"}),
            400);
}

TEST(OriginGuard, AHostPortMustBeANumber) {
  for (const char* host :
       {"127.0.0.1:abc", "localhost:", "[::1]:8x", "localhost:65536", "localhost:99999",
        "localhost:123456", "[::1]:", "localhost:-1", "localhost:+80", "localhost:8 0"}) {
    std::string message;
    EXPECT_EQ(status(kLoopback, {std::string("Host: ") + host}, &message), 400) << host;
    EXPECT_NE(message.find("port"), std::string::npos) << message;
    EXPECT_NE(message.find(std::string("'") + host + "'"), std::string::npos) << message;
    // Malformed on any listener, not only a loopback one.
    EXPECT_EQ(status(kPublic, {std::string("Host: ") + host}), 400) << host;
  }
}

TEST(OriginGuard, AHostIsHostAndPortOnly) {
  for (const char* host :
       {"::1", "::1:8848", "[::1", "[::1]x", "[::1]:80:80", "[zz::1]", "[fe80::1%25eth0]",
        "a@127.0.0.1", "127.0.0.1/x", "a b", ":8848", "127.0.0.1?", "%zz"}) {
    EXPECT_EQ(status(kPublic, {std::string("Host: ") + host}), 400) << host;
  }
  std::string message;
  EXPECT_EQ(status(kPublic, {"Host:"}, &message), 400);
  EXPECT_NE(message.find("empty"), std::string::npos) << message;
  EXPECT_EQ(status(kPublic, {"Host: ::1"}, &message), 400);
  EXPECT_NE(message.find("brackets"), std::string::npos) << message;
}

TEST(OriginGuard, AnHttp11RequestNeedsAHost) {
  std::string message;
  EXPECT_EQ(status(kLoopback, {}, &message), 400);
  EXPECT_NE(message.find("needs a Host"), std::string::npos) << message;
  EXPECT_EQ(status(kLoopback, {"Origin: http://localhost"}), 400);
  // HTTP/1.0 has no Host; such a client is not a browser.
  EXPECT_FALSE(kLoopback.check(parse({}, "1.0")));
  EXPECT_EQ(kLoopback.check(parse({"Origin: http://evil.example"}, "1.0"))->status,
            http::status::forbidden);
}

TEST(OriginGuard, AnOriginIsASerializedOrigin) {
  const std::vector<std::pair<const char*, const char*>> cases = {
      {"http://a@127.0.0.1", "userinfo"},
      {"http://localhost:x@evil.example", "userinfo"},  // was read as localhost with a port
      {"http://127.0.0.1/", "path"},
      {"http://localhost:3000/app", "path"},
      {"http://localhost?x=1", "query"},
      {"http://localhost#top", "fragment"},
      {"http://", "empty"},
      {"http://:3000", "host is empty"},
      {"http://localhost:abc", "port"},
      {"http://localhost:", "port"},
      {"http://localhost:65536", "port"},
      {"http://[::1]:8x", "port"},
      {"http://[::1", "'['"},
      {"http://::1", "brackets"},
      {"localhost:3000", "scheme"},
      {"://localhost", "scheme"},
      {"1http://localhost", "scheme"},
      {"ht tp://localhost", "scheme"},
      {"http:/localhost", "scheme"},
      {"http://localhost http://evil.example", "space"},
      {"Null", "scheme"},
  };
  for (const auto& [origin, why] : cases) {
    for (const OriginGuard* guard : {&kLoopback, &kPublic}) {
      std::string message;
      EXPECT_EQ(status(*guard, {"Host: localhost", std::string("Origin: ") + origin}, &message),
                400)
          << origin;
      EXPECT_NE(message.find("not a serialized origin"), std::string::npos) << message;
      EXPECT_NE(message.find(why), std::string::npos) << origin << ": " << message;
    }
  }
  // An empty Origin is not one either (a browser that sends the header fills it).
  std::string message;
  EXPECT_EQ(status(kLoopback, {"Host: localhost", "Origin:"}, &message), 400);
  EXPECT_NE(message.find("empty"), std::string::npos) << message;
}

TEST(OriginGuard, TheNullOriginIsRefused) {
  // Opaque origins (sandboxed frames, file: pages) send "null": well formed, never allowed.
  std::string message;
  EXPECT_EQ(status(kLoopback, {"Host: localhost", "Origin: null"}, &message), 403);
  EXPECT_NE(message.find("opaque"), std::string::npos) << message;
  EXPECT_EQ(status(kPublic, {"Host: a.example", "Origin: null"}), 403);
}

TEST(OriginGuard, RebindingIsForbidden) {
  std::string message;
  EXPECT_EQ(status(kLoopback, {"Host: evil.example:8848"}, &message), 403);
  EXPECT_NE(message.find("'evil.example:8848' is not a loopback name"), std::string::npos)
      << message;
  EXPECT_EQ(status(kLoopback, {"Host: localhost.evil.example"}), 403);
  EXPECT_EQ(status(kLoopback, {"Host: 127.0.0.2"}), 403);
  EXPECT_EQ(status(kLoopback, {"Host: localhost", "Origin: http://evil.example"}, &message), 403);
  EXPECT_NE(message.find("'http://evil.example' is not allowed"), std::string::npos) << message;
  EXPECT_EQ(status(kLoopback, {"Host: localhost", "Origin: http://localhost.evil.example"}), 403);
  EXPECT_EQ(status(kLoopback, {"Host: localhost", "Origin: ftp://localhost"}), 403);
  // A public listener checks the Origin, not the name it is reached by.
  EXPECT_EQ(status(kPublic, {"Host: a.example", "Origin: http://evil.example"}), 403);
  // A loopback IPv6 listener is loopback too.
  EXPECT_EQ(status(OriginGuard("::1", {}), {"Host: evil.example"}), 403);
}

TEST(OriginGuard, MessagesShowAtMost64BytesOfAValueEscaped) {
  const std::string long_host = std::string(5000, 'a') + ":x";
  std::string message;
  EXPECT_EQ(status(kPublic, {"Host: " + long_host}, &message), 400);
  EXPECT_LT(message.size(), 300u) << message;
  EXPECT_NE(message.find("'" + std::string(64, 'a') + "' (cut, 5002 bytes)"), std::string::npos)
      << message;
  // obs-text reaches the guard through Beast's parser; control bytes only by construction.
  EXPECT_EQ(status(kPublic, {"Host: \xff\xfe:1"}, &message), 400);
  EXPECT_NE(message.find("'\\xff\\xfe:1'"), std::string::npos) << message;
  transport::Request req;
  req.version(11);
  req.set(http::field::host, std::string_view("a\x01\\\"b\n", 6));
  const auto refusal = kPublic.check(req);
  ASSERT_TRUE(refusal);
  EXPECT_NE(refusal->message.find("'a\\x01\\x5c\"b\\x0a'"), std::string::npos) << refusal->message;
  for (const char c : refusal->message) {
    EXPECT_TRUE(c >= 0x20 && c < 0x7f) << refusal->message;
  }
}

}  // namespace
}  // namespace toolbridge::frontend
