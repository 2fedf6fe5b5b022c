// The keys for running beyond one machine: `auth` (API keys of the downstream listener),
// `allow_unauthenticated`, `tls` (the listener's certificate) and `gateway_id`.
#include <fmt/format.h>
#include <openssl/sha.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <sstream>

#include "config/gateway_section.h"
#include "config/surfaces.h"
#include "config/variables.h"

namespace toolbridge::config {
namespace {

constexpr std::array<std::string_view, 2> kAuthKeys{"keys", "realm"};
constexpr std::array<std::string_view, 7> kKeyKeys{"name",   "token", "token_sha256", "token_file",
                                                   "tenant", "allow", "surfaces"};
constexpr std::array<std::string_view, 2> kTlsKeys{"cert", "key"};
constexpr std::array<std::string_view, 3> kSharedKeys{"redis", "timeout", "key_prefix"};
constexpr std::size_t kMinTokenBytes = 16;

bool is_tenant_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == ':' || c == '-';
}

std::array<unsigned char, 32> sha256_of(std::string_view token) {
  std::array<unsigned char, 32> out{};
  SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(), out.data());
  return out;
}

bool from_hex(std::string_view hex, std::array<unsigned char, 32>& out) {
  if (hex.size() != 64) return false;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (std::size_t i = 0; i < 32; ++i) {
    const int hi = nibble(hex[2 * i]);
    const int lo = nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<unsigned char>(hi * 16 + lo);
  }
  return true;
}

// The token's hash; the token's text lives only in this function's locals.
void read_token(const NodeReader& r, const Entry& e, const std::string& p, ApiKey& key) {
  std::string token;
  if (e.key == "token_sha256") {
    if (!from_hex(r.text(e.value, p), key.sha256))
      r.fail(e.value.mark, p, "expected the SHA-256 of the token as 64 hex digits");
    return;
  }
  if (e.key == "token") {
    base::Expected<std::string> x = expand_env_refs(r.text(e.value, p));
    if (!x) r.fail(e.value.mark, p, x.error());
    token = std::move(*x);
  } else {
    const std::string& file = r.text(e.value, p);
    std::ifstream in(file, std::ios::binary);
    if (!in) r.fail(e.value.mark, p, fmt::format("cannot read the token file '{}'", file));
    std::ostringstream text;
    text << in.rdbuf();
    token = text.str();
    while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' '))
      token.pop_back();
  }
  if (token.size() < kMinTokenBytes) {
    r.fail(e.value.mark, p,
           fmt::format("a token needs at least {} characters (e.g. `openssl rand -hex 32`)",
                       kMinTokenBytes));
  }
  key.sha256 = sha256_of(token);
  std::fill(token.begin(), token.end(), '\0');
}

ApiKey read_key(const NodeReader& r, const Node& node, const std::string& path) {
  ApiKey key;
  NodeReader::Seen seen;
  int tokens = 0;
  for (const Entry& e : r.entries(node, path)) {
    r.check_key(e, path, kKeyKeys, /*lenient=*/false, seen);
    const std::string p = join_path(path, e.key);
    if (e.key == "name") {
      key.name = r.text(e.value, p);
    } else if (e.key == "tenant") {
      key.tenant = r.text(e.value, p);
      if (key.tenant.empty() || key.tenant.size() > 128 ||
          !std::all_of(key.tenant.begin(), key.tenant.end(), is_tenant_char)) {
        r.fail(e.value.mark, p, "a tenant name is 1-128 characters of [A-Za-z0-9._:-]");
      }
    } else if (e.key == "allow") {
      const auto& list = r.items(e.value, p);
      for (std::size_t i = 0; i < list.size(); ++i) {
        const std::string item = fmt::format("{}[{}]", p, i);
        key.allow.push_back(r.text(list[i], item));
        if (key.allow.back().empty()) r.fail(list[i].mark, item, "expected a server or tool name");
      }
      if (key.allow.empty()) r.fail(e.value.mark, p, "an empty allowlist allows nothing");
    } else if (e.key == "surfaces") {
      // Checked against the `surfaces` section once it is read (read_surfaces).
      const auto& list = r.items(e.value, p);
      for (std::size_t i = 0; i < list.size(); ++i) {
        const std::string item = fmt::format("{}[{}]", p, i);
        key.surfaces.push_back(r.text(list[i], item));
        if (base::Status named = check_surface_name(key.surfaces.back()); !named)
          r.fail(list[i].mark, item, named.error());
      }
      if (key.surfaces.empty()) r.fail(e.value.mark, p, "an empty list allows no surface");
    } else {
      ++tokens;
      read_token(r, e, p, key);
    }
  }
  if (tokens != 1)
    r.fail(node.mark, path, "needs exactly one of `token`, `token_sha256`, `token_file`");
  if (key.tenant.empty()) r.fail(node.mark, path, "needs `tenant`: the run its calls belong to");
  return key;
}

}  // namespace

void read_auth(const NodeReader& r, const Node& node, const std::string& path, Auth& a) {
  NodeReader::Seen seen;
  for (const Entry& e : r.entries(node, path)) {
    r.check_key(e, path, kAuthKeys, /*lenient=*/false, seen);
    const std::string p = join_path(path, e.key);
    if (e.key == "realm") {
      a.realm = r.text(e.value, p);
      const bool valid = !a.realm.empty() && a.realm.find_first_of("\"\\\r\n") == std::string::npos;
      if (!valid) r.fail(e.value.mark, p, "a realm is non-empty text without quotes");
      continue;
    }
    const auto& list = r.items(e.value, p);
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string item = fmt::format("{}[{}]", p, i);
      ApiKey key = read_key(r, list[i], item);
      if (key.name.empty()) key.name = fmt::format("key {}", i);
      for (const ApiKey& other : a.keys) {
        if (other.sha256 == key.sha256)
          r.fail(list[i].mark, item, fmt::format("the same token as '{}'", other.name));
      }
      a.keys.push_back(std::move(key));
    }
  }
  if (a.keys.empty()) r.fail(node.mark, path, "needs `keys`: at least one API key");
}

void read_tls(const NodeReader& r, const Node& node, const std::string& path, Tls& t) {
  NodeReader::Seen seen;
  for (const Entry& e : r.entries(node, path)) {
    r.check_key(e, path, kTlsKeys, /*lenient=*/false, seen);
    const std::string p = join_path(path, e.key);
    std::string& file = e.key == "cert" ? t.cert_file : t.key_file;
    file = r.text(e.value, p);
    if (!std::ifstream(file)) r.fail(e.value.mark, p, fmt::format("cannot read '{}'", file));
  }
  if (t.cert_file.empty() || t.key_file.empty())
    r.fail(node.mark, path, "needs both `cert` and `key` (PEM files)");
}

std::string read_gateway_id(const NodeReader& r, const Node& node, const std::string& path) {
  // ${env:POD_NAME}: one config for every replica.
  const base::Expected<std::string> x = expand_env_refs(r.text(node, path));
  if (!x) r.fail(node.mark, path, x.error());
  const std::string& id = *x;
  const bool valid =
      !id.empty() && id.size() <= 32 && std::all_of(id.begin(), id.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '-' || c == '_';
      });
  if (!valid) {
    r.fail(node.mark, path,
           fmt::format("a gateway id is 1-32 characters of [A-Za-z0-9_-], got '{}'", id));
  }
  return id;
}

void read_shared_limits(const NodeReader& r, const Node& node, const std::string& path,
                        Gateway::SharedLimits& s) {
  NodeReader::Seen seen;
  for (const Entry& e : r.entries(node, path)) {
    r.check_key(e, path, kSharedKeys, /*lenient=*/false, seen);
    const std::string p = join_path(path, e.key);
    if (e.key == "redis") {
      std::string_view a = r.text(e.value, p);
      if (a.starts_with("redis://")) a.remove_prefix(8);
      const std::size_t colon = a.rfind(':');
      const bool valid = colon != std::string_view::npos && colon > 0 && colon + 1 < a.size() &&
                         a.find_first_of("/ @") == std::string_view::npos &&
                         std::all_of(a.begin() + static_cast<long>(colon) + 1, a.end(),
                                     [](char c) { return c >= '0' && c <= '9'; });
      if (!valid) {
        r.fail(e.value.mark, p, fmt::format("expected HOST:PORT like 127.0.0.1:6379, got '{}'", a));
      }
      s.address = std::string(a);
    } else if (e.key == "timeout") {
      s.timeout = r.duration(e.value, p, /*allow_zero=*/false);
    } else {
      s.key_prefix = r.text(e.value, p);
      if (s.key_prefix.size() > 128) r.fail(e.value.mark, p, "at most 128 bytes");
    }
  }
  if (s.address.empty())
    r.fail(node.mark, path, "needs `redis`: the HOST:PORT of the Redis server");
}

}  // namespace toolbridge::config
