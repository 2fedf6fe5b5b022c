#include "call/trajectory_name.h"

#include <fmt/format.h>

#include <cstdint>
#include <optional>

namespace toolbridge::call {

namespace {

// The code point at the front of `text` (advancing it), or nullopt for invalid UTF-8 (overlong
// forms, surrogates and values past U+10FFFF included).
std::optional<char32_t> take_code_point(std::string_view& text) {
  const auto byte = [&](std::size_t i) { return static_cast<std::uint8_t>(text[i]); };
  const std::uint8_t lead = byte(0);
  std::size_t length = 0;
  char32_t cp = 0;
  if (lead < 0x80) {
    text.remove_prefix(1);
    return lead;
  }
  if ((lead & 0xE0) == 0xC0)
    length = 2, cp = lead & 0x1F;
  else if ((lead & 0xF0) == 0xE0)
    length = 3, cp = lead & 0x0F;
  else if ((lead & 0xF8) == 0xF0)
    length = 4, cp = lead & 0x07;
  else
    return std::nullopt;
  if (text.size() < length) return std::nullopt;
  for (std::size_t i = 1; i < length; ++i) {
    if ((byte(i) & 0xC0) != 0x80) return std::nullopt;
    cp = (cp << 6) | (byte(i) & 0x3F);
  }
  constexpr char32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[length] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return std::nullopt;
  text.remove_prefix(length);
  return cp;
}

bool is_ascii_alnum(char32_t c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// Non-ASCII text is allowed except what is invisible or changes how text around it reads:
// C1 controls, no-break and other spaces, zero-width and bidirectional marks, separators, the
// byte order mark, specials and noncharacters.
bool is_allowed_non_ascii(char32_t c) {
  if (c < 0xA1 || c == 0xAD) return false;
  if ((c >= 0x2000 && c <= 0x200F) || (c >= 0x2028 && c <= 0x202F) || (c >= 0x205F && c <= 0x206F))
    return false;
  if (c == 0x3000 || c == 0xFEFF || (c >= 0xFFF0 && c <= 0xFFFF)) return false;
  if ((c >= 0xFDD0 && c <= 0xFDEF) || (c & 0xFFFE) == 0xFFFE) return false;
  return true;
}

bool is_allowed(char32_t c, bool first) {
  if (is_ascii_alnum(c) || c == '_') return true;
  if (c >= 0x80) return is_allowed_non_ascii(c);
  return !first && std::string_view(".-:@+").find(static_cast<char>(c)) != std::string_view::npos;
}

std::string describe(char32_t c) {
  if (c >= 0x21 && c < 0x7F) return fmt::format("'{}'", static_cast<char>(c));
  return fmt::format("U+{:04X}", static_cast<std::uint32_t>(c));
}

}  // namespace

base::Status check_trajectory_name(std::string_view name) {
  std::size_t count = 0;
  std::string problem;
  for (std::string_view rest = name; !rest.empty();) {
    const auto cp = take_code_point(rest);
    if (!cp) {
      problem = fmt::format("invalid UTF-8 after character {}", count);
      break;
    }
    ++count;
    if (problem.empty() && !is_allowed(*cp, count == 1)) {
      problem = fmt::format("character {} ({}) is not allowed {}", count, describe(*cp),
                            count == 1 ? "first" : "");
      if (problem.back() == ' ') problem.pop_back();
    }
    if (count > kMaxTrajectoryNameChars) break;  // the length is the problem now
  }
  if (count == 0 && problem.empty()) problem = "the name is empty";
  if (count > kMaxTrajectoryNameChars) {
    problem = fmt::format("the name is longer than {} characters", kMaxTrajectoryNameChars);
  }
  if (problem.empty()) return {};
  return base::fail(problem + "; " + std::string(kTrajectoryNameRule));
}

}  // namespace toolbridge::call
