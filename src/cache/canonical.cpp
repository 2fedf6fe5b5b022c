#include "cache/canonical.h"

#include <algorithm>
#include <array>
#include <boost/container/small_vector.hpp>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "json/envelope.h"
#include "json/utf8.h"

namespace toolbridge::cache {

namespace {

constexpr std::size_t kMaxSignificantDigits = 15;
constexpr double kMaxExactInteger = 9007199254740992.0;  // 2^53
// The powers of ten a double holds exactly.
constexpr double kExactPowersOfTen[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                        1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                        1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
constexpr int kMaxExactPowerOfTen = 22;
constexpr std::ptrdiff_t kInsertionSortMembers = 32;
// More than a number's canonical form takes (at most 24 bytes: -2.2250738585072014e-308).
constexpr std::size_t kNumberRoom = 32;

// Bytes a string copies as they are: printable ASCII but '"' and '\\'.
constexpr std::array<bool, 256> kPlainStringBytes = [] {
  std::array<bool, 256> plain{};
  for (int c = 0x20; c < 0x80; ++c) plain[c] = c != '"' && c != '\\';
  return plain;
}();

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// Digits of the number's mantissa without leading and trailing zeros.
std::size_t significant_digits(std::string_view number) {
  std::size_t count = 0, first = 0, last = 0;
  for (char c : number) {
    if (c == 'e' || c == 'E') break;
    if (!is_digit(c)) continue;
    ++count;
    if (c != '0') {
      if (first == 0) first = count;
      last = count;
    }
  }
  return first == 0 ? 0 : last - first + 1;
}

// An exponent of ten digits or more, leading zeros aside. The gateway's JSON parser refuses
// exponents near INT_MAX, and where its limit falls depends on the digits before the exponent and
// on how the text reached it ("0.00e-02147483647" is refused, "0.00e-2147483647" is not): such a
// number has no form here (its call is not cached). No legitimate call writes an exponent past
// 999999999, so no call loses its key to this.
bool exponent_too_large(std::string_view digits) {
  while (digits.size() > 1 && digits.front() == '0') digits.remove_prefix(1);
  return digits.size() > 9;
}

// The decoded bytes of a name the writer escaped (it holds '"', '\\' or a control character).
std::string unescape_canonical(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\') {
      out.push_back(s[i]);
      continue;
    }
    const char e = s[++i];
    switch (e) {
      case 'b':
        out.push_back('\b');
        break;
      case 'f':
        out.push_back('\f');
        break;
      case 'n':
        out.push_back('\n');
        break;
      case 'r':
        out.push_back('\r');
        break;
      case 't':
        out.push_back('\t');
        break;
      case 'u':  // \u00XX: a control character
        out.push_back(static_cast<char>(*json::hex4(s.substr(i + 1, 4))));
        i += 4;
        break;
      default:  // '"' or '\\'
        out.push_back(e);
    }
  }
  return out;
}

// Reads JSON text and writes its canonical form in one pass, straight into the output: objects'
// members are written as they come and reordered in place only if they are out of order.
class Writer {
 public:
  // Writes after what `out` holds; on failure `out` is left longer, the caller cuts it back.
  Writer(std::string_view text, std::string& out)
      : p_(text.data()), end_(text.data() + text.size()), out_(out), start_(out.size()) {
    // Strings, literals and structure never write more than they read: room for the rest of the
    // text is enough for all but numbers (number_room).
    out_.resize(start_ + text.size() + kNumberRoom);
    w_ = out_.data() + start_;
  }

  bool document() {
    ws();
    if (!value(0)) return false;
    ws();
    out_.resize(pos());
    return p_ == end_;
  }

 private:
  // One member of an object being written: `"name":value` in the output from `begin` to `end`,
  // the name's literal ending at `name_end`; `escaped` if that literal holds an escape.
  struct Member {
    std::size_t begin = 0;
    std::size_t name_end = 0;
    std::size_t end = 0;
    bool escaped = false;
  };

  std::size_t pos() const { return static_cast<std::size_t>(w_ - out_.data()); }
  void put(char c) { *w_++ = c; }
  void put(const char* s, std::size_t n) {
    std::memcpy(w_, s, n);
    w_ += n;
  }
  void put(std::string_view s) { put(s.data(), s.size()); }
  // A number may write more than it read ("1E5" is "100000"): room for it and the rest.
  void number_room() {
    const std::size_t need = static_cast<std::size_t>(end_ - p_) + kNumberRoom;
    if (static_cast<std::size_t>(out_.data() + out_.size() - w_) >= need) return;
    const std::size_t at = pos();
    out_.resize(std::max(out_.size() * 2, at + need));
    w_ = out_.data() + at;
  }

  void ws() {
    while (p_ != end_ && static_cast<unsigned char>(*p_) <= ' ' &&
           (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) {
      ++p_;
    }
  }
  bool eat(char c) {
    if (p_ == end_ || *p_ != c) return false;
    ++p_;
    return true;
  }

  // `depth`: how many arrays and objects enclose this value.
  bool value(std::size_t depth) {
    if (p_ == end_) return false;
    switch (*p_) {
      case '{':
        return object(depth);
      case '[':
        return array(depth);
      case '"': {
        bool escaped = false;
        return string(escaped);
      }
      case 't':
        return literal("true");
      case 'f':
        return literal("false");
      case 'n':
        return literal("null");
      default:
        return number();
    }
  }

  bool literal(std::string_view word) {
    if (static_cast<std::size_t>(end_ - p_) < word.size() ||
        std::string_view(p_, word.size()) != word) {
      return false;
    }
    p_ += word.size();
    put(word);
    return true;
  }

  bool array(std::size_t depth) {
    if (depth >= json::kMaxDepth) return false;
    ++p_;
    put('[');
    ws();
    if (!eat(']')) {
      for (;;) {
        ws();
        if (!value(depth + 1)) return false;
        ws();
        if (eat(']')) break;
        if (!eat(',')) return false;
        put(',');
      }
    }
    put(']');
    return true;
  }

  bool object(std::size_t depth) {
    if (depth >= json::kMaxDepth) return false;
    ++p_;
    put('{');
    const std::size_t body = pos();
    const std::size_t first = members_.size();
    ws();
    if (!eat('}')) {
      for (;;) {
        ws();
        if (p_ == end_ || *p_ != '"') return false;
        Member m;
        m.begin = pos();
        if (!string(m.escaped)) return false;
        m.name_end = pos();
        ws();
        if (!eat(':')) return false;
        put(':');
        ws();
        if (!value(depth + 1)) return false;
        m.end = pos();
        members_.push_back(m);
        ws();
        if (eat('}')) break;
        if (!eat(',')) return false;
        put(',');
      }
      sort_members(body, first);
      members_.resize(first);
    }
    put('}');
    return true;
  }

  // Orders the members from `first` on (written from `body` on) by name, stably.
  void sort_members(std::size_t body, std::size_t first) {
    const char* text = out_.data();
    const auto name = [text](const Member& m) {
      return std::string_view(text + m.begin + 1, m.name_end - m.begin - 2);
    };
    const auto less = [&](const Member& a, const Member& b) {
      if (!a.escaped && !b.escaped) return name(a) < name(b);
      return unescape_canonical(name(a)) < unescape_canonical(name(b));
    };
    const auto begin = members_.begin() + static_cast<std::ptrdiff_t>(first);
    if (members_.end() - begin == 2) {
      if (!less(begin[1], begin[0])) return;
      std::swap(begin[0], begin[1]);
    } else if (std::is_sorted(begin, members_.end(), less)) {
      return;
    } else if (members_.end() - begin <= kInsertionSortMembers) {
      // Stable, and no buffer to allocate (std::stable_sort takes one).
      for (auto it = begin + 1; it != members_.end(); ++it) {
        const Member m = *it;
        auto to = it;
        for (; to != begin && less(m, *(to - 1)); --to) *to = *(to - 1);
        *to = m;
      }
    } else {
      std::stable_sort(begin, members_.end(), less);
    }
    // The members' text, moved aside and written back in order (on the stack when it is small).
    const std::size_t size = pos() - body;
    std::array<char, 512> local;
    std::string heap;
    char* copy = local.data();
    if (size > local.size()) {
      heap.assign(out_, body, size);
      copy = heap.data();
    } else {
      out_.copy(copy, size, body);
    }
    char* to = out_.data() + body;
    for (auto it = begin; it != members_.end(); ++it) {
      if (it != begin) *to++ = ',';
      to = std::copy_n(copy + (it->begin - body), it->end - it->begin, to);
    }
  }

  // A string literal at p_, written with the fewest escapes; `escaped` tells whether it has any.
  bool string(bool& escaped) {
    ++p_;
    put('"');
    escaped = false;
    for (;;) {
      const char* run = p_;
      while (p_ != end_ && kPlainStringBytes[static_cast<unsigned char>(*p_)]) ++p_;
      put(run, static_cast<std::size_t>(p_ - run));
      if (p_ == end_) return false;
      const auto c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        ++p_;
        put('"');
        return true;
      }
      if (c == '\\') {
        if (!escape(escaped)) return false;
        continue;
      }
      if (c < 0x20) return false;
      const std::size_t n =
          json::utf8_sequence_length(std::string_view(p_, static_cast<std::size_t>(end_ - p_)));
      if (n == 0) return false;
      put(p_, n);
      p_ += n;
    }
  }

  // The escape at p_ ('\\' ...), decoded and written as the canonical form writes its character.
  bool escape(bool& escaped) {
    ++p_;
    if (p_ == end_) return false;
    const char e = *p_++;
    switch (e) {
      case '"':
      case '\\':
      case 'b':
      case 'f':
      case 'n':
      case 'r':
      case 't':
        put('\\');
        put(e);
        escaped = true;
        return true;
      case '/':
        put('/');
        return true;
      case 'u':
        break;
      default:
        return false;
    }
    unsigned cp = 0;
    if (!hex4(cp) || (cp >= 0xDC00 && cp <= 0xDFFF)) return false;
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      // A high surrogate must be followed by the escape of a low one.
      unsigned low = 0;
      if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') return false;
      p_ += 2;
      if (!hex4(low) || low < 0xDC00 || low > 0xDFFF) return false;
      cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
    }
    write_code_point(cp, escaped);
    return true;
  }

  bool hex4(unsigned& out) {
    if (end_ - p_ < 4) return false;
    const auto v = json::hex4(std::string_view(p_, 4));
    if (!v) return false;
    out = *v;
    p_ += 4;
    return true;
  }

  void write_code_point(unsigned cp, bool& escaped) {
    static constexpr char kHex[] = "0123456789abcdef";
    if (cp < 0x20 || cp == '"' || cp == '\\') {
      escaped = true;
      put('\\');
      switch (cp) {
        case '"':
        case '\\':
          put(static_cast<char>(cp));
          return;
        case '\b':
          put('b');
          return;
        case '\f':
          put('f');
          return;
        case '\n':
          put('n');
          return;
        case '\r':
          put('r');
          return;
        case '\t':
          put('t');
          return;
        default:
          put("u00");
          put(kHex[cp >> 4]);
          put(kHex[cp & 15]);
          return;
      }
    }
    if (cp < 0x80) {
      put(static_cast<char>(cp));
    } else if (cp < 0x800) {
      put(static_cast<char>(0xC0 | (cp >> 6)));
      put(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      put(static_cast<char>(0xE0 | (cp >> 12)));
      put(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      put(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      put(static_cast<char>(0xF0 | (cp >> 18)));
      put(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      put(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      put(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  bool number() {
    const char* start = p_;
    const bool negative = eat('-');
    const char* int_begin = p_;
    if (p_ == end_ || !is_digit(*p_)) return false;
    if (*p_ == '0') {
      ++p_;
    } else {
      while (p_ != end_ && is_digit(*p_)) ++p_;
    }
    const std::string_view int_digits(int_begin, static_cast<std::size_t>(p_ - int_begin));
    std::string_view frac_digits;
    if (eat('.')) {
      const char* frac = p_;
      while (p_ != end_ && is_digit(*p_)) ++p_;
      if (p_ == frac) return false;
      frac_digits = std::string_view(frac, static_cast<std::size_t>(p_ - frac));
    }
    bool has_exponent = false, exponent_negative = false;
    std::string_view exponent_digits;
    if (p_ != end_ && (*p_ == 'e' || *p_ == 'E')) {
      ++p_;
      has_exponent = true;
      if (p_ != end_ && (*p_ == '+' || *p_ == '-')) exponent_negative = *p_++ == '-';
      const char* exp = p_;
      while (p_ != end_ && is_digit(*p_)) ++p_;
      if (p_ == exp) return false;
      exponent_digits = std::string_view(exp, static_cast<std::size_t>(p_ - exp));
      if (exponent_too_large(exponent_digits)) return false;
    }
    const std::string_view token(start, static_cast<std::size_t>(p_ - start));
    if (frac_digits.empty() && !has_exponent) {
      // An integer that fits 64 bits is written as it came ("-0" as "0").
      const bool fits = negative
                            ? int_digits.size() < 19 ||
                                  (int_digits.size() == 19 && int_digits <= "9223372036854775808")
                            : int_digits.size() < 20 ||
                                  (int_digits.size() == 20 && int_digits <= "18446744073709551615");
      if (fits) {
        if (negative && int_digits == "0") {
          put('0');
        } else {
          put(token);
        }
        return true;
      }
      return read_rare(token);
    }
    // Up to 16 digits and a power of ten a double holds: one multiplication or division, so one
    // correctly rounded result (the nearest double, as for the rare numbers below).
    if (int_digits.size() + frac_digits.size() > 16) return read_rare(token);
    std::uint64_t mantissa = 0;
    for (char c : int_digits) mantissa = mantissa * 10 + static_cast<unsigned>(c - '0');
    for (char c : frac_digits) mantissa = mantissa * 10 + static_cast<unsigned>(c - '0');
    while (exponent_digits.size() > 1 && exponent_digits.front() == '0') {
      exponent_digits.remove_prefix(1);
    }
    if (exponent_digits.size() > 4) return read_rare(token);
    int exponent = 0;
    for (char c : exponent_digits) exponent = exponent * 10 + (c - '0');
    if (exponent_negative) exponent = -exponent;
    exponent -= static_cast<int>(frac_digits.size());
    if (mantissa > 9007199254740992u || exponent < -kMaxExactPowerOfTen ||
        exponent > kMaxExactPowerOfTen) {
      return read_rare(token);
    }
    double d = static_cast<double>(mantissa);
    if (negative) d = -d;
    d = exponent < 0 ? d / kExactPowersOfTen[-exponent] : d * kExactPowersOfTen[exponent];
    return write_double(d, token);
  }

  // The rare numbers the writer does not convert itself (past 16 digits, large exponents,
  // integers past 64 bits): the nearest double, as std::from_chars reads it. (Boost.JSON, which
  // read them before, can land one ULP off: 9.01e189 as 9.009999999999999e+189, whose own form
  // then differed.) Too small for a double is 0, as it always was; too large has no form.
  bool read_rare(std::string_view token) {
    double d = 0;
    const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), d);
    if (end != token.data() + token.size()) return false;
    if (ec == std::errc::result_out_of_range) {
      // Which way out of range: strtod (the C locale's, never changed here) says ±HUGE_VAL.
      const std::string copy(token);
      if (std::isinf(std::strtod(copy.c_str(), nullptr))) return false;
      d = 0;
    } else if (ec != std::errc()) {
      return false;
    }
    return write_double(d, token);
  }

  template <typename Integer>
  void write_integer(Integer v) {
    number_room();
    char buffer[24];
    const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, v);
    put(buffer, static_cast<std::size_t>(end - buffer));
  }

  // `d` is what `token` (not a plain 64-bit integer) reads as. Past 15 significant digits two
  // texts can read as one double, even one that is an integer ("9.007199254740993e15"): no form.
  // Above 2^53 the form is scientific: the shortest fixed text of such a double may be
  // its exact value ("40000000000000598016" for 4.00000000000006e19), an integer of more than 15
  // digits that would then have no form of its own.
  bool write_double(double d, std::string_view token) {
    if (!std::isfinite(d)) return false;
    if (significant_digits(token) > kMaxSignificantDigits) return false;
    number_room();
    const bool large = std::fabs(d) > kMaxExactInteger;
    if (std::trunc(d) == d && !large) {
      write_integer(static_cast<std::int64_t>(d));
      return true;
    }
    char buffer[32];
    const auto [end, ec] =
        large ? std::to_chars(buffer, buffer + sizeof buffer, d, std::chars_format::scientific)
              : std::to_chars(buffer, buffer + sizeof buffer, d);
    if (ec != std::errc()) return false;
    put(buffer, static_cast<std::size_t>(end - buffer));
    return true;
  }

  const char* p_;
  const char* end_;
  std::string& out_;
  std::size_t start_;
  char* w_ = nullptr;  // where the next byte goes in out_ (sized ahead)
  // The members of the objects being written, innermost last.
  boost::container::small_vector<Member, 16> members_;
};

}  // namespace

bool append_canonical_json(std::string& out, std::string_view text) {
  const std::size_t size = out.size();
  if (Writer(text, out).document()) return true;
  out.resize(size);
  return false;
}

std::optional<std::string> canonical_json(std::string_view text) {
  std::string out;
  if (!append_canonical_json(out, text)) return std::nullopt;
  return out;
}

}  // namespace toolbridge::cache
