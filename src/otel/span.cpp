#include "otel/span.h"

#include <algorithm>

namespace toolbridge::otel {

namespace {
template <std::size_t N>
std::string to_hex(const std::array<std::uint8_t, N>& id) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(2 * N, '0');
  for (std::size_t i = 0; i < N; ++i) {
    out[2 * i] = kDigits[id[i] >> 4];
    out[2 * i + 1] = kDigits[id[i] & 0xf];
  }
  return out;
}
template <std::size_t N>
bool all_zero(const std::array<std::uint8_t, N>& id) {
  return std::all_of(id.begin(), id.end(), [](std::uint8_t b) { return b == 0; });
}
}  // namespace

void Span::add(std::string_view key, std::string value) {
  attributes.push_back(Attribute{key, Attribute::Value(std::in_place_index<0>, std::move(value))});
}
void Span::add(std::string_view key, std::int64_t value) {
  attributes.push_back(Attribute{key, Attribute::Value(std::in_place_index<1>, value)});
}
void Span::add(std::string_view key, double value) {
  attributes.push_back(Attribute{key, Attribute::Value(std::in_place_index<2>, value)});
}
void Span::add(std::string_view key, bool value) {
  attributes.push_back(Attribute{key, Attribute::Value(std::in_place_index<3>, value)});
}

bool is_zero(const TraceId& id) {
  return all_zero(id);
}
bool is_zero(const SpanId& id) {
  return all_zero(id);
}
std::string hex(const TraceId& id) {
  return to_hex(id);
}
std::string hex(const SpanId& id) {
  return to_hex(id);
}

}  // namespace toolbridge::otel
