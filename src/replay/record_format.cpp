#include "replay/record_format.h"

#include <fmt/format.h>

namespace toolbridge::replay {

namespace {
constexpr std::string_view kSumMember = ",\"sum\":\"";
constexpr std::size_t kSumDigits = 16;
}  // namespace

std::uint64_t fnv1a(std::string_view bytes) {
  std::uint64_t h = 14695981039346656037ull;
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

std::string sealed_line(std::string_view body) {
  std::string line;
  line.reserve(body.size() + kSumMember.size() + kSumDigits + 3);
  line += body;
  fmt::format_to(std::back_inserter(line), "{}{:016x}\"}}\n", kSumMember, fnv1a(body));
  return line;
}

void seal(std::string& body) {
  const std::uint64_t sum = fnv1a(body);
  fmt::format_to(std::back_inserter(body), "{}{:016x}\"}}\n", kSumMember, sum);
}

std::string_view unsealed(std::string_view line) {
  // ...,"sum":"0123456789abcdef"}
  const std::size_t tail = kSumMember.size() + kSumDigits + 2;
  if (line.size() < tail + 1 || line.substr(line.size() - 2) != "\"}") return {};
  const std::size_t body = line.size() - tail;
  if (line.substr(body, kSumMember.size()) != kSumMember) return {};
  const std::string_view hex = line.substr(body + kSumMember.size(), kSumDigits);
  const std::string expected = fmt::format("{:016x}", fnv1a(line.substr(0, body)));
  if (hex != expected) return {};
  return line;
}

LogRead read_log(std::string_view text) {
  LogRead out;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = text.find('\n', at);
    if (end == std::string_view::npos) {  // no newline: cut short
      out.torn_tail = true;
      break;
    }
    const std::string_view line = text.substr(at, end - at);
    at = end + 1;
    if (const std::string_view record = unsealed(line); !record.empty()) {
      out.records.emplace_back(record);
    } else if (at >= text.size()) {
      out.torn_tail = true;  // the last line, damaged
    } else if (!line.empty()) {
      ++out.damaged;
    }
  }
  return out;
}

}  // namespace toolbridge::replay
