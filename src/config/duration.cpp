#include "config/duration.h"

#include <array>
#include <cstdint>
#include <limits>

namespace toolbridge::config {
namespace {

// "12.5" split into its parts; fraction digits past kMaxFractionDigits are dropped so that
// fraction * unit stays well inside 64 bits even for TiB.
struct Decimal {
  std::uint64_t whole = 0;
  std::uint64_t fraction = 0;
  std::uint64_t fraction_scale = 1;  // 10^(fraction digits kept)
  bool has_point = false;
};
constexpr int kMaxFractionDigits = 6;

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_alpha(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// Consumes digits[.digits] from the front of `text`. nullopt when there are no digits, when a
// point is not followed by a digit, or when the whole part overflows.
std::optional<Decimal> take_decimal(std::string_view& text) {
  Decimal d;
  std::size_t i = 0;
  if (i == text.size() || !is_digit(text[i])) return std::nullopt;
  for (; i < text.size() && is_digit(text[i]); ++i) {
    const std::uint64_t digit = static_cast<std::uint64_t>(text[i] - '0');
    if (d.whole > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) return std::nullopt;
    d.whole = d.whole * 10 + digit;
  }
  if (i < text.size() && text[i] == '.') {
    d.has_point = true;
    ++i;
    if (i == text.size() || !is_digit(text[i])) return std::nullopt;
    for (int kept = 0; i < text.size() && is_digit(text[i]); ++i, ++kept) {
      if (kept >= kMaxFractionDigits) continue;
      d.fraction = d.fraction * 10 + static_cast<std::uint64_t>(text[i] - '0');
      d.fraction_scale *= 10;
    }
  }
  text.remove_prefix(i);
  return d;
}

std::string_view take_letters(std::string_view& text) {
  std::size_t i = 0;
  while (i < text.size() && is_alpha(text[i])) ++i;
  std::string_view letters = text.substr(0, i);
  text.remove_prefix(i);
  return letters;
}

// d * unit, rounded to the nearest whole unit of the result; nullopt past `max`.
std::optional<std::uint64_t> scale(const Decimal& d, std::uint64_t unit, std::uint64_t max) {
  if (d.whole > max / unit) return std::nullopt;
  const std::uint64_t whole = d.whole * unit;
  const std::uint64_t fraction = (d.fraction * unit + d.fraction_scale / 2) / d.fraction_scale;
  if (fraction > max - whole) return std::nullopt;
  return whole + fraction;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto lower = [](char c) {
      return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

struct Unit {
  std::string_view name;
  std::uint64_t factor;
};

// Largest first, so parse_duration can insist on "1h30m" order and format_duration can divide.
constexpr std::array<Unit, 4> kDurationUnits{
    {{"h", 3'600'000}, {"m", 60'000}, {"s", 1'000}, {"ms", 1}}};

constexpr std::uint64_t kKiB = 1024;
constexpr std::array<Unit, 10> kSizeUnits{{
    {"TiB", kKiB* kKiB* kKiB* kKiB},
    {"GiB", kKiB* kKiB* kKiB},
    {"MiB", kKiB* kKiB},
    {"KiB", kKiB},
    {"TB", 1'000'000'000'000},
    {"GB", 1'000'000'000},
    {"MB", 1'000'000},
    {"KB", 1'000},
    {"B", 1},
    {"", 1},
}};

}  // namespace

std::optional<std::chrono::milliseconds> parse_duration(std::string_view text) {
  constexpr auto kMax =
      static_cast<std::uint64_t>(std::numeric_limits<std::chrono::milliseconds::rep>::max());
  if (text.empty()) return std::nullopt;

  std::uint64_t total = 0;
  std::size_t previous_unit = 0;  // index into kDurationUnits + 1; units must strictly decrease
  bool first = true;
  while (!text.empty()) {
    auto number = take_decimal(text);
    if (!number) return std::nullopt;
    const std::string_view unit = take_letters(text);

    std::uint64_t factor = 0;
    if (unit.empty()) {
      // A bare number is seconds, but only on its own: "1m30" is more likely a typo than intent.
      if (!first || !text.empty()) return std::nullopt;
      factor = 1'000;
    } else {
      std::size_t index = 0;
      while (index < kDurationUnits.size() && kDurationUnits[index].name != unit) ++index;
      if (index == kDurationUnits.size() || index + 1 <= previous_unit) return std::nullopt;
      previous_unit = index + 1;
      factor = kDurationUnits[index].factor;
    }
    auto part = scale(*number, factor, kMax);
    if (!part || *part > kMax - total) return std::nullopt;
    total += *part;
    first = false;
  }
  return std::chrono::milliseconds(static_cast<std::chrono::milliseconds::rep>(total));
}

std::string format_duration(std::chrono::milliseconds d) {
  std::string out;
  std::uint64_t ms = 0;
  if (d.count() < 0) {
    out = "-";
    // Negate in unsigned arithmetic so that the most negative value does not overflow.
    ms = 0 - static_cast<std::uint64_t>(d.count());
  } else {
    ms = static_cast<std::uint64_t>(d.count());
  }
  if (ms == 0) return "0s";
  if (ms < 1'000) return out + std::to_string(ms) + "ms";

  const std::uint64_t hours = ms / 3'600'000;
  const std::uint64_t minutes = ms / 60'000 % 60;
  const std::uint64_t seconds_ms = ms % 60'000;
  if (hours) out += std::to_string(hours) + "h";
  if (minutes) out += std::to_string(minutes) + "m";
  if (seconds_ms) {
    out += std::to_string(seconds_ms / 1'000);
    if (const std::uint64_t milli = seconds_ms % 1'000) {
      std::string digits = std::to_string(1'000 + milli).substr(1);  // zero-padded to 3
      while (digits.back() == '0') digits.pop_back();
      out += "." + digits;
    }
    out += "s";
  }
  return out;
}

std::optional<std::size_t> parse_size(std::string_view text) {
  constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::size_t>::max());
  auto number = take_decimal(text);
  if (!number) return std::nullopt;
  const std::string_view unit = take_letters(text);
  if (!text.empty()) return std::nullopt;
  for (const Unit& u : kSizeUnits) {
    if (!iequals(unit, u.name)) continue;
    if (u.factor == 1 && number->has_point) return std::nullopt;  // no fractional bytes
    auto bytes = scale(*number, u.factor, kMax);
    if (!bytes) return std::nullopt;
    return static_cast<std::size_t>(*bytes);
  }
  return std::nullopt;
}

std::string format_size(std::size_t bytes) {
  if (bytes == 0) return "0";
  for (const Unit& u : kSizeUnits) {
    if (u.factor > 1 && bytes % u.factor == 0)
      return std::to_string(bytes / u.factor) + std::string(u.name);
  }
  return std::to_string(bytes);
}

}  // namespace toolbridge::config
