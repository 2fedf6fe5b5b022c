#include "json/utf8.h"

namespace toolbridge::json {

namespace {
constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

bool continuation(unsigned char c) {
  return (c & 0xC0) == 0x80;
}
}  // namespace

std::size_t utf8_sequence_length(std::string_view bytes) {
  if (bytes.empty()) return 0;
  const auto b = [&](std::size_t i) { return static_cast<unsigned char>(bytes[i]); };
  const unsigned char lead = b(0);
  if (lead < 0x80) return 1;
  std::size_t length = 0;
  unsigned char low = 0x80, high = 0xBF;  // allowed range of the second byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;   // overlong
    if (lead == 0xED) high = 0x9F;  // surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;   // overlong
    if (lead == 0xF4) high = 0x8F;  // past U+10FFFF
  } else {
    return 0;
  }
  if (bytes.size() < length || b(1) < low || b(1) > high) return 0;
  for (std::size_t i = 2; i < length; ++i) {
    if (!continuation(b(i))) return 0;
  }
  return length;
}

bool is_valid_utf8(std::string_view bytes) {
  for (std::size_t i = 0; i < bytes.size();) {
    if (static_cast<unsigned char>(bytes[i]) < 0x80) {
      ++i;
      continue;
    }
    const std::size_t n = utf8_sequence_length(bytes.substr(i));
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string replace_invalid_utf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() + 16);
  for (std::size_t i = 0; i < bytes.size();) {
    const std::size_t n = utf8_sequence_length(bytes.substr(i));
    if (n == 0) {
      out += kReplacement;
      ++i;
    } else {
      out.append(bytes.substr(i, n));
      i += n;
    }
  }
  return out;
}

std::optional<unsigned> hex4(std::string_view four) {
  if (four.size() != 4) return std::nullopt;
  unsigned value = 0;
  for (const char c : four) {
    value <<= 4;
    if (c >= '0' && c <= '9') {
      value |= static_cast<unsigned>(c - '0');
    } else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') {
      value |= static_cast<unsigned>((c | 0x20) - 'a' + 10);
    } else {
      return std::nullopt;
    }
  }
  return value;
}

namespace {
bool high_surrogate(unsigned u) {
  return u >= 0xD800 && u <= 0xDBFF;
}
bool low_surrogate(unsigned u) {
  return u >= 0xDC00 && u <= 0xDFFF;
}
}  // namespace

std::string repair_strings(std::string_view json_text) {
  std::string out = replace_invalid_utf8(json_text);
  // Escapes are only read inside strings; the text outside them is left as it is.
  bool in_string = false;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const char c = out[i];
    if (!in_string) {
      in_string = c == '"';
      continue;
    }
    if (c == '"') {
      in_string = false;
      continue;
    }
    if (c != '\\' || i + 1 >= out.size()) continue;
    ++i;  // the escaped character
    if (out[i] != 'u') continue;
    const auto unit = hex4(std::string_view(out).substr(i + 1, 4));
    if (!unit) continue;
    const std::size_t escape = i - 1;
    i += 4;
    if (!high_surrogate(*unit) && !low_surrogate(*unit)) continue;
    if (high_surrogate(*unit) && std::string_view(out).substr(i + 1, 2) == "\\u") {
      const auto low = hex4(std::string_view(out).substr(i + 3, 4));
      if (low && low_surrogate(*low)) {
        i += 6;
        continue;
      }
    }
    out.replace(escape, 6, "\\ufffd");
  }
  return out;
}

}  // namespace toolbridge::json
