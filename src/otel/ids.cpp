#include "otel/ids.h"

#include <openssl/sha.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

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

TraceId trajectory_trace_id(std::string_view trajectory) {
  // A trajectory makes many calls: its id is hashed once, not once per call. Each thread keeps
  // the ids of recent trajectories in a table of sets of four slots (the name's hash picks the
  // set; a new name takes the set's slot after the last one taken), so a lookup costs a hash
  // and at most four compares, and the table never grows.
  struct Slot {
    std::size_t hash = 0;
    std::string name;
    TraceId id{};
  };
  constexpr std::size_t kWays = 4, kSets = 256;
  thread_local std::vector<Slot> slots(kWays * kSets);
  thread_local std::vector<std::uint8_t> next(kSets);
  const std::size_t hash = std::hash<std::string_view>{}(trajectory);
  const std::size_t set = hash % kSets;
  for (std::size_t way = 0; way < kWays; ++way) {
    const Slot& s = slots[set * kWays + way];
    if (s.hash == hash && s.name == trajectory && !is_zero(s.id)) return s.id;
  }
  Slot& slot = slots[set * kWays + next[set]];
  next[set] = static_cast<std::uint8_t>((next[set] + 1) % kWays);
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(trajectory.data()), trajectory.size(), digest);
  TraceId id;
  std::memcpy(id.data(), digest, id.size());
  if (is_zero(id)) id[15] = 1;  // an all-zero id is invalid (never happens in practice)
  slot.hash = hash;
  slot.name.assign(trajectory);
  slot.id = id;
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
