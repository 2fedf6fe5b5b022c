#include "otel/ids.h"

#include <openssl/sha.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <unordered_map>

namespace toolbridge::otel {

namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;  // uppercase is not valid in version 00
}

template <std::size_t N>
bool read_hex(std::string_view text, std::array<std::uint8_t, N>& out) {
  if (text.size() != 2 * N) return false;
  for (std::size_t i = 0; i < N; ++i) {
    const int hi = hex_digit(text[2 * i]), lo = hex_digit(text[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<std::uint8_t>(hi << 4 | lo);
  }
  return true;
}

std::mt19937_64& generator() {
  thread_local std::mt19937_64 g{[] {
    std::random_device rd;
    return (std::uint64_t{rd()} << 32) ^ rd();
  }()};
  return g;
}

template <std::size_t N>
void fill_random(std::array<std::uint8_t, N>& id) {
  do {
    for (std::size_t i = 0; i < N; i += 8) {
      const std::uint64_t v = generator()();
      std::memcpy(id.data() + i, &v, std::min<std::size_t>(8, N - i));
    }
  } while (std::all_of(id.begin(), id.end(), [](std::uint8_t b) { return b == 0; }));
}

}  // namespace

std::optional<TraceParent> parse_traceparent(std::string_view v) {
  // 00-<32 hex>-<16 hex>-<2 hex>
  if (v.size() != 55 || v.substr(0, 3) != "00-" || v[35] != '-' || v[52] != '-') return {};
  TraceParent tp;
  std::array<std::uint8_t, 1> flags{};
  if (!read_hex(v.substr(3, 32), tp.trace_id) || !read_hex(v.substr(36, 16), tp.parent_id) ||
      !read_hex(v.substr(53, 2), flags) || is_zero(tp.trace_id) || is_zero(tp.parent_id)) {
    return {};
  }
  tp.flags = flags[0];
  return tp;
}

namespace {
struct TextHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
}  // namespace

TraceId trajectory_trace_id(std::string_view trajectory) {
  // A trajectory makes many calls: its id is hashed once per thread, not once per call (a cache
  // of at most kCached ids, emptied when full).
  constexpr std::size_t kCached = 4096;
  thread_local std::unordered_map<std::string, TraceId, TextHash, std::equal_to<>> cache;
  if (auto it = cache.find(trajectory); it != cache.end()) return it->second;
  if (cache.size() >= kCached) cache.clear();
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(trajectory.data()), trajectory.size(), digest);
  TraceId id;
  std::memcpy(id.data(), digest, id.size());
  if (is_zero(id)) id[15] = 1;  // an all-zero id is invalid (never happens in practice)
  cache.emplace(std::string(trajectory), id);
  return id;
}

TraceId random_trace_id() {
  TraceId id;
  fill_random(id);
  return id;
}

SpanId random_span_id() {
  SpanId id;
  fill_random(id);
  return id;
}

bool sampled_at(const TraceId& id, double ratio) {
  if (ratio >= 1) return true;
  if (ratio <= 0) return false;
  std::uint64_t low = 0;
  for (std::size_t i = 8; i < 16; ++i) low = low << 8 | id[i];
  // ratio * 2^64 as a bound; ratio < 1 keeps it under 2^64.
  const auto bound = static_cast<std::uint64_t>(ratio * 18446744073709551616.0);
  return low < bound;
}

}  // namespace toolbridge::otel
