// Authentication: tokens found by their hash only, Bearer parsing, the per-connection memo, the
// allowlist, the filtered tool list, and the refusal to listen openly without keys.
#include "frontend/auth.h"

#include <gtest/gtest.h>

#include <string>

#include "config/config.h"
#include "policy/authorize.h"

namespace toolbridge::frontend {
namespace {

namespace asio = boost::asio;

config::Config with_keys() {
  return config::load_text(
      "gateway:\n"
      "  auth:\n"
      "    keys:\n"
      "      - {name: a, token: token-of-team-a-0001, tenant: team-a}\n"
      "      - {name: b, token: token-of-team-b-0002, tenant: team-b, allow: [fixture, "
      "other__x]}\n",
      "cfg.yaml", false);
}

// An Exchange that only carries a request (verify reads headers and the memo).
class FakeExchange final : public transport::Exchange {
 public:
  explicit FakeExchange(std::string authorization) {
    if (!authorization.empty()) req.set("Authorization", authorization);
  }
  const transport::Request& request() const override { return req; }
  const std::string& client() const override { return client_; }
  asio::awaitable<void> reply(transport::http::status, std::string_view, std::string,
                              const transport::Headers&) override {
    co_return;
  }
  asio::awaitable<bool> begin_stream(transport::http::status, std::string_view,
                                     const transport::Headers&) override {
    co_return true;
  }
  asio::awaitable<bool> write_chunk(std::string) override { co_return true; }
  asio::awaitable<void> end_stream() override { co_return; }
  bool broken() const override { return false; }
  bool peer_closed() override { return false; }
  void on_peer_closed(std::function<void()>) override {}
  Verified* verified() override { return memo; }

  transport::Request req;
  Verified* memo = nullptr;
  std::string client_ = "127.0.0.1";
};

TEST(Auth, FindsAKeyByItsTokenOnly) {
  const config::Config c = with_keys();
  const Auth auth(c.gateway.auth);
  ASSERT_TRUE(auth.enabled());
  ASSERT_NE(auth.find("token-of-team-a-0001"), nullptr);
  EXPECT_EQ(auth.find("token-of-team-a-0001")->tenant, "team-a");
  EXPECT_EQ(auth.find("token-of-team-b-0002")->name, "b");
  EXPECT_EQ(auth.find("token-of-team-a-0002"), nullptr);
  EXPECT_EQ(auth.find(""), nullptr);
  EXPECT_FALSE(Auth(config::Auth{}).enabled());
}

TEST(Auth, VerifiesBearerHeadersAndSaysWhatIsWrong) {
  const config::Config c = with_keys();
  const Auth auth(c.gateway.auth);
  FakeExchange none("");
  EXPECT_FALSE(auth.verify(none));
  EXPECT_EQ(auth.verify(none).error(),
            "this gateway needs an API key: send `Authorization: Bearer TOKEN`");
  FakeExchange basic("Basic dG9rZW4=");
  EXPECT_EQ(auth.verify(basic).error(), "the Authorization header is not `Bearer TOKEN`");
  FakeExchange wrong("Bearer token-of-team-a-9999");
  EXPECT_FALSE(auth.verify(wrong));
  EXPECT_EQ(auth.verify(wrong).error(), "the API key is not valid");
  FakeExchange good("bearer  token-of-team-a-0001 ");  // scheme case-insensitive (RFC 6750)
  const base::Expected<const config::ApiKey*> key = auth.verify(good);
  ASSERT_TRUE(key) << key.error();
  ASSERT_NE(*key, nullptr);
  EXPECT_EQ((*key)->tenant, "team-a");
}

TEST(Auth, AConnectionRemembersItsVerifiedCredential) {
  const config::Config c = with_keys();
  const Auth auth(c.gateway.auth);
  transport::Exchange::Verified memo;
  FakeExchange first("Bearer token-of-team-b-0002");
  first.memo = &memo;
  ASSERT_TRUE(auth.verify(first));
  EXPECT_EQ(memo.credential, "Bearer token-of-team-b-0002");
  EXPECT_EQ(memo.key->name, "b");
  // The same value again is answered from the memo; another value is checked afresh.
  FakeExchange again("Bearer token-of-team-b-0002");
  again.memo = &memo;
  EXPECT_EQ(auth.verify(again).value(), memo.key);
  FakeExchange other("Bearer not-a-key-at-all-000");
  other.memo = &memo;
  EXPECT_FALSE(auth.verify(other));
  EXPECT_EQ(memo.key->name, "b");  // a failure does not replace what was verified
}

TEST(Auth, AllowlistsNameServersOrExposedTools) {
  const config::Config c = with_keys();
  const config::ApiKey& a = c.gateway.auth.keys[0];
  const config::ApiKey& b = c.gateway.auth.keys[1];
  EXPECT_TRUE(policy::allows(nullptr, "any", "any__tool"));
  EXPECT_TRUE(policy::allows(&a, "any", "any__tool"));
  EXPECT_TRUE(policy::allows(&b, "fixture", "fixture__echo"));
  EXPECT_TRUE(policy::allows(&b, "other", "other__x"));
  EXPECT_FALSE(policy::allows(&b, "other", "other__y"));
  EXPECT_EQ(policy::forbidden_message(b, "other__y"),
            "other__y is not allowed for API key 'b' (it may use: fixture, other__x)");
  const std::string list =
      R"({"tools":[{"name":"fixture__echo"},{"name":"other__x"},{"name":"other__y"}]})";
  const auto server_of = [](std::string_view n) { return std::string(n.substr(0, n.find("__"))); };
  EXPECT_EQ(policy::allowed_tools_json(list, b, server_of),
            R"({"tools":[{"name":"fixture__echo"},{"name":"other__x"}]})");
}

TEST(Auth, RefusesToListenOpenlyWithoutKeys) {
  config::Gateway g;
  g.host = "0.0.0.0";
  EXPECT_EQ(check_authenticated(g).error(),
            "refusing to listen on 0.0.0.0 without authentication: anyone who reaches it could "
            "run every tool. Configure gateway.auth.keys, or set gateway.allow_unauthenticated: "
            "true");
  g.allow_unauthenticated = true;
  EXPECT_TRUE(check_authenticated(g).ok());
  g.allow_unauthenticated = false;
  g.auth.keys.emplace_back();
  EXPECT_TRUE(check_authenticated(g).ok());
  config::Gateway local;
  for (const char* host : {"127.0.0.1", "::1", "[::1]", "localhost"}) {
    local.host = host;
    EXPECT_TRUE(check_authenticated(local).ok()) << host;
  }
}

}  // namespace
}  // namespace toolbridge::frontend
