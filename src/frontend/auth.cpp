#include "frontend/auth.h"

#include <fmt/format.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <algorithm>
#include <array>
#include <boost/beast/http.hpp>
#include <cstring>

#include "frontend/router.h"
#include "json/envelope.h"
#include "transport/local_origin.h"

namespace toolbridge::frontend {

namespace http = boost::beast::http;

namespace {

std::uint64_t prefix_of(const unsigned char* hash) {
  std::uint64_t p = 0;
  std::memcpy(&p, hash, sizeof p);
  return p;
}

// The token of an `Authorization: Bearer TOKEN` value; empty if it is not one.
std::string_view bearer_token(std::string_view value) {
  constexpr std::string_view kScheme = "bearer ";
  if (value.size() <= kScheme.size()) return {};
  for (std::size_t i = 0; i < kScheme.size(); ++i) {
    const char c = value[i];
    if ((c >= 'A' && c <= 'Z' ? c + 32 : c) != kScheme[i]) return {};
  }
  value.remove_prefix(kScheme.size());
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  while (!value.empty() && value.back() == ' ') value.remove_suffix(1);
  return value;
}

bool same(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace

Auth::Auth(const config::Auth& auth) {
  replace(auth);
}

void Auth::replace(const config::Auth& auth) {
  keys_.clear();
  realm_ = auth.realm;
  for (const auto& key : auth.keys) keys_.emplace(prefix_of(key.sha256.data()), &key);
}

bool Auth::current(const config::ApiKey* key) const {
  const auto [begin, end] = keys_.equal_range(prefix_of(key->sha256.data()));
  return std::any_of(begin, end, [key](const auto& entry) { return entry.second == key; });
}

const config::ApiKey* Auth::find(std::string_view token) const {
  std::array<unsigned char, 32> hash{};
  SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(), hash.data());
  const auto [begin, end] = keys_.equal_range(prefix_of(hash.data()));
  const config::ApiKey* found = nullptr;
  for (auto it = begin; it != end; ++it) {
    if (CRYPTO_memcmp(it->second->sha256.data(), hash.data(), hash.size()) == 0) found = it->second;
  }
  return found;
}

base::Expected<const config::ApiKey*> Auth::verify(transport::Exchange& ex) const {
  const std::string_view value = header(ex.request(), "Authorization");
  if (value.empty())
    return base::fail("this gateway needs an API key: send `Authorization: Bearer TOKEN`");
  transport::Exchange::Verified* memo = ex.verified();
  if (memo && memo->key && same(memo->credential, value) && current(memo->key)) return memo->key;
  const std::string_view token = bearer_token(value);
  const config::ApiKey* key = token.empty() ? nullptr : find(token);
  if (!key) {
    return base::fail(token.empty() ? "the Authorization header is not `Bearer TOKEN`"
                                    : "the API key is not valid");
  }
  if (memo) {
    memo->credential.assign(value.data(), value.size());
    memo->key = key;
  }
  return key;
}

boost::asio::awaitable<void> Auth::challenge(transport::Exchange& ex, std::string problem) const {
  const bool had_token = !header(ex.request(), "Authorization").empty();
  std::string challenge = fmt::format("Bearer realm=\"{}\"", realm_);
  if (had_token) challenge += ", error=\"invalid_token\"";
  const transport::Headers headers{{"WWW-Authenticate", challenge}};
  const std::string body = json::make_error({}, json::kInvalidRequest, "Unauthorized: " + problem);
  co_await ex.reply(http::status::unauthorized, "application/json", body, headers);
}

base::Status check_authenticated(const config::Gateway& g) {
  if (!g.auth.keys.empty() || g.allow_unauthenticated) return {};
  if (transport::is_loopback_address(g.host)) return {};
  return base::fail(fmt::format(
      "refusing to listen on {} without authentication: anyone who reaches it could run every "
      "tool. Configure gateway.auth.keys, or set gateway.allow_unauthenticated: true",
      g.host));
}

}  // namespace toolbridge::frontend
