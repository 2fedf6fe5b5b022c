#include "cache/canonical.h"

#include <algorithm>
#include <boost/json/basic_parser_impl.hpp>
#include <charconv>
#include <cmath>
#include <utility>
#include <vector>

#include "json/envelope.h"

namespace toolbridge::cache {

namespace {

namespace bj = boost::json;
using boost::system::error_code;

constexpr std::size_t kMaxSignificantDigits = 15;
constexpr double kMaxExactInteger = 9007199254740992.0;  // 2^53

void append_escaped(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out.push_back(kHex[c >> 4]);
          out.push_back(kHex[c & 15]);
        } else {
          out.push_back(ch);
        }
    }
  }
  out.push_back('"');
}

// Digits of the number's mantissa without leading and trailing zeros.
std::size_t significant_digits(std::string_view number) {
  std::string digits;
  for (char c : number) {
    if (c == 'e' || c == 'E') break;
    if (c >= '0' && c <= '9') digits.push_back(c);
  }
  const std::size_t first = digits.find_first_not_of('0');
  if (first == std::string::npos) return 0;
  const std::size_t last = digits.find_last_not_of('0');
  return last - first + 1;
}

class Canonicalizer {
 public:
  static constexpr std::size_t max_object_size = std::size_t(-1);
  static constexpr std::size_t max_array_size = std::size_t(-1);
  static constexpr std::size_t max_key_size = std::size_t(-1);
  static constexpr std::size_t max_string_size = std::size_t(-1);

  std::string result;

  bool on_document_begin(error_code&) { return true; }
  bool on_document_end(error_code&) { return true; }
  bool on_array_begin(error_code&) {
    frames_.push_back(Frame{false, "[", {}, {}});
    return true;
  }
  bool on_array_end(std::size_t, error_code&) {
    Frame f = std::move(frames_.back());
    frames_.pop_back();
    f.text.push_back(']');
    emit(std::move(f.text));
    return true;
  }
  bool on_object_begin(error_code&) {
    frames_.push_back(Frame{true, {}, {}, {}});
    return true;
  }
  bool on_object_end(std::size_t, error_code&) {
    Frame f = std::move(frames_.back());
    frames_.pop_back();
    std::stable_sort(f.members.begin(), f.members.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::string out = "{";
    for (std::size_t i = 0; i < f.members.size(); ++i) {
      if (i) out.push_back(',');
      append_escaped(out, f.members[i].first);
      out.push_back(':');
      out += f.members[i].second;
    }
    out.push_back('}');
    emit(std::move(out));
    return true;
  }
  bool on_string_part(bj::string_view s, std::size_t, error_code&) {
    part_.append(s.data(), s.size());
    return true;
  }
  bool on_string(bj::string_view s, std::size_t, error_code&) {
    part_.append(s.data(), s.size());
    std::string out;
    append_escaped(out, part_);
    part_.clear();
    emit(std::move(out));
    return true;
  }
  bool on_key_part(bj::string_view s, std::size_t, error_code&) {
    part_.append(s.data(), s.size());
    return true;
  }
  bool on_key(bj::string_view s, std::size_t, error_code&) {
    part_.append(s.data(), s.size());
    frames_.back().key = std::move(part_);
    part_.clear();
    return true;
  }
  bool on_number_part(bj::string_view s, error_code&) {
    part_.append(s.data(), s.size());
    return true;
  }
  bool on_int64(std::int64_t i, bj::string_view, error_code&) {
    part_.clear();
    emit(std::to_string(i));
    return true;
  }
  bool on_uint64(std::uint64_t u, bj::string_view, error_code&) {
    part_.clear();
    emit(std::to_string(u));
    return true;
  }
  bool on_double(double d, bj::string_view s, error_code& ec) {
    part_.append(s.data(), s.size());
    const std::string raw = std::move(part_);
    part_.clear();
    if (!std::isfinite(d)) {
      ec = bj::error::exponent_overflow;
      return false;
    }
    if (std::trunc(d) == d && std::fabs(d) <= kMaxExactInteger) {
      emit(std::to_string(static_cast<std::int64_t>(d)));
      return true;
    }
    if (significant_digits(raw) > kMaxSignificantDigits) {
      ec = bj::error::exponent_overflow;  // stands for "no canonical form"
      return false;
    }
    char buffer[32];
    auto [end, err] = std::to_chars(buffer, buffer + sizeof buffer, d);
    if (err != std::errc()) {
      ec = bj::error::exponent_overflow;
      return false;
    }
    emit(std::string(buffer, end));
    return true;
  }
  bool on_bool(bool b, error_code&) {
    emit(b ? "true" : "false");
    return true;
  }
  bool on_null(error_code&) {
    emit("null");
    return true;
  }
  bool on_comment_part(bj::string_view, error_code&) { return true; }
  bool on_comment(bj::string_view, error_code&) { return true; }

 private:
  struct Frame {
    bool object = false;
    std::string text;  // arrays: the elements so far
    std::string key;   // objects: the name of the member being read
    std::vector<std::pair<std::string, std::string>> members;
  };

  void emit(std::string value) {
    if (frames_.empty()) {
      result = std::move(value);
      return;
    }
    Frame& f = frames_.back();
    if (f.object) {
      f.members.emplace_back(std::move(f.key), std::move(value));
      f.key.clear();
    } else {
      if (f.text.size() > 1) f.text.push_back(',');
      f.text += value;
    }
  }

  std::vector<Frame> frames_;
  std::string part_;
};

}  // namespace

std::optional<std::string> canonical_json(std::string_view text) {
  bj::parse_options options;
  options.max_depth = json::kMaxDepth;
  bj::basic_parser<Canonicalizer> parser(options);
  error_code ec;
  const std::size_t n = parser.write_some(false, text.data(), text.size(), ec);
  if (ec || n != text.size()) return std::nullopt;
  return std::move(parser.handler().result);
}

}  // namespace toolbridge::cache
