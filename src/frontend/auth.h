#pragma once
// Authentication of the downstream listener: bearer tokens (API keys) checked once, in front of
// the router, for every front end. A token is known only by its SHA-256; the request's token is
// hashed, found by the first 8 bytes of its hash and compared in constant time. Each key names
// the tenant its calls run as and, optionally, the servers and tools it may call.
#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include "base/expected.h"
#include "config/config.h"
#include "transport/http_server.h"

namespace toolbridge::frontend {

class Auth {
 public:
  explicit Auth(const config::Auth& auth);

  // A reload's keys (docs/reload.md): from now on the new ones are let in and the old ones kept
  // out, also on connections that verified an old one. `auth` must outlive this (the gateway
  // keeps replaced configurations).
  void replace(const config::Auth& auth);

  // No keys configured: every request goes on, and nothing here runs.
  bool enabled() const { return !keys_.empty(); }
  // The key the request carries (`Authorization: Bearer TOKEN`, never null), or what is wrong.
  // Uses and refreshes the connection's memo of its last verified credential.
  base::Expected<const config::ApiKey*> verify(transport::Exchange& ex) const;
  // The key of `token`, or null.
  const config::ApiKey* find(std::string_view token) const;
  // 401 with WWW-Authenticate (RFC 6750).
  boost::asio::awaitable<void> challenge(transport::Exchange& ex, std::string problem) const;

  // Paths served without a token: the liveness probe.
  static bool open_path(std::string_view path) { return path == "/healthz"; }

 private:
  // `key` is one of the current keys (a connection's memo may name a replaced one).
  bool current(const config::ApiKey* key) const;

  std::unordered_multimap<std::uint64_t, const config::ApiKey*> keys_;
  std::string realm_;
};

// Whether the gateway may start as configured; not with a non-loopback listener without keys
// and without `allow_unauthenticated: true`.
base::Status check_authenticated(const config::Gateway& g);

}  // namespace toolbridge::frontend
