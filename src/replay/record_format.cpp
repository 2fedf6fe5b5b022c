#include "replay/record_format.h"


namespace toolbridge::replay {

namespace {
constexpr std::string_view kSumMember = ",\"sum\":\"";
constexpr std::size_t kSumDigits = 8;
constexpr std::size_t kFnvDigits = 16;  // format 1
static_assert(kSumMember.size() + kSumDigits + 3 == kSealSize);
constexpr char kHex[] = "0123456789abcdef";

// Table k holds, for each byte value, its CRC shifted through k more zero bytes: eight lookups
// then fold eight bytes at once (the "slicing by eight" method).
struct CrcTables {
  std::uint32_t t[8][256];
  constexpr CrcTables() : t{} {
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int bit = 0; bit < 8; ++bit) c = (c & 1) ? (c >> 1) ^ 0xEDB88320u : c >> 1;
      t[0][i] = c;
    }
    for (int k = 1; k < 8; ++k) {
      for (std::uint32_t i = 0; i < 256; ++i)
        t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xFF];
    }
  }
};
constexpr CrcTables kCrc;

std::uint32_t load_le32(const unsigned char* p) {
  return static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 |
         static_cast<std::uint32_t>(p[2]) << 16 | static_cast<std::uint32_t>(p[3]) << 24;
}

// `,"sum":"` + the sum in `digits` hex digits + `"}` + '\n'.
void append_sum(std::string& out, std::uint64_t sum, std::size_t digits) {
  out += kSumMember;
  for (std::size_t i = digits; i-- > 0;) out += kHex[(sum >> (4 * i)) & 0xF];
  out += "\"}\n";
}

std::uint64_t parse_hex(std::string_view hex, bool& ok) {
  std::uint64_t v = 0;
  for (const char c : hex) {
    int d = -1;
    if (c >= '0' && c <= '9') d = c - '0';
    if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    if (d < 0) ok = false;
    v = v << 4 | static_cast<std::uint64_t>(d & 0xF);
  }
  return v;
}

// The line's body if its sum, of `digits` hex digits, is there and matches; else empty.
std::string_view checked(std::string_view line, std::size_t digits) {
  const std::size_t tail = kSumMember.size() + digits + 2;
  if (line.size() < tail + 1) return {};
  const std::size_t body = line.size() - tail;
  if (line.substr(body, kSumMember.size()) != kSumMember) return {};
  bool ok = true;
  const std::uint64_t sum = parse_hex(line.substr(body + kSumMember.size(), digits), ok);
  if (!ok) return {};
  const std::string_view bytes = line.substr(0, body);
  const bool match = digits == kSumDigits ? sum == crc32(bytes) : sum == fnv1a(bytes);
  return match ? line : std::string_view();
}
}  // namespace

std::uint64_t fnv1a(std::string_view bytes) {
  std::uint64_t h = 14695981039346656037ull;
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

std::uint32_t crc32(std::string_view bytes, std::uint32_t crc) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  std::size_t n = bytes.size();
  crc = ~crc;
  for (; n >= 8; p += 8, n -= 8) {
    const std::uint32_t lo = crc ^ load_le32(p);
    const std::uint32_t hi = load_le32(p + 4);
    crc = kCrc.t[7][lo & 0xFF] ^ kCrc.t[6][(lo >> 8) & 0xFF] ^ kCrc.t[5][(lo >> 16) & 0xFF] ^
          kCrc.t[4][lo >> 24] ^ kCrc.t[3][hi & 0xFF] ^ kCrc.t[2][(hi >> 8) & 0xFF] ^
          kCrc.t[1][(hi >> 16) & 0xFF] ^ kCrc.t[0][hi >> 24];
  }
  for (; n > 0; ++p, --n) crc = (crc >> 8) ^ kCrc.t[0][(crc ^ *p) & 0xFF];
  return ~crc;
}

std::string sealed_line(std::string_view body) {
  std::string line;
  line.reserve(body.size() + kSumMember.size() + kSumDigits + 3);
  line += body;
  append_sum(line, crc32(body), kSumDigits);
  return line;
}

void seal(std::string& body) { seal_tail(body, 0); }

void seal_tail(std::string& out, std::size_t from) {
  const std::uint32_t sum = crc32(std::string_view(out).substr(from));
  append_sum(out, sum, kSumDigits);
}

void append_seal_placeholder(std::string& out) {
  append_sum(out, 0, kSumDigits);
}

void seal_in_place(std::string& out, std::size_t from, std::size_t end) {
  const std::size_t body = end - kSealSize;
  std::uint32_t sum = crc32(std::string_view(out).substr(from, body - from));
  char* digits = out.data() + body + kSumMember.size();
  for (std::size_t i = kSumDigits; i-- > 0; sum >>= 4) digits[i] = kHex[sum & 0xF];
}

std::string_view unsealed(std::string_view line) {
  // ...,"sum":"01234567"}  (format 1: ...,"sum":"0123456789abcdef"})
  if (line.size() < 2 || line.substr(line.size() - 2) != "\"}") return {};
  if (const std::string_view v = checked(line, kSumDigits); !v.empty()) return v;
  return checked(line, kFnvDigits);
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
