#include "json/envelope.h"

#include <algorithm>
#include <cctype>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include <boost/json.hpp>

#include "base/marks.h"
#include "json/scan.h"
#include "json/utf8.h"

namespace toolbridge::json {

namespace {

// A validating skipper: walks one JSON value without building anything, so a 1 MB result
// costs one pass over its bytes. Positions are byte offsets into `t`.
class Scanner {
 public:
  explicit Scanner(std::string_view t, std::size_t at = 0) : t_(t), p_(at) {}

  std::size_t pos() const { return p_; }
  bool at_end() const { return p_ >= t_.size(); }
  char peek() const { return p_ < t_.size() ? t_[p_] : '\0'; }
  void ws() {
    while (p_ < t_.size() &&
           (t_[p_] == ' ' || t_[p_] == '\t' || t_[p_] == '\n' || t_[p_] == '\r')) {
      ++p_;
    }
  }
  bool eat(char c) {
    if (peek() != c) return false;
    ++p_;
    return true;
  }

  // Past the limit a message is still walked (iteratively, so nothing overflows) to read its id.
  bool too_deep() const { return too_deep_; }
  bool needs_repair() const { return needs_repair_; }
  // The scan stopped at a number whose exponent has more than kMaxExponentDigits digits.
  bool exponent_out_of_range() const { return exponent_out_of_range_; }

  // `depth`: how many arrays and objects enclose this value.
  bool value(std::size_t depth = 0) {
    if ((peek() == '{' || peek() == '[') && depth >= kMaxDepth) {
      too_deep_ = true;
      return skip_nested();
    }
    switch (peek()) {
      case '{':
        return object(depth);
      case '[':
        return array(depth);
      case '"':
        return string();
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

  bool string() {
    if (!eat('"')) return false;
    while (p_ < t_.size()) {
      skip_plain_string_bytes();
      if (p_ >= t_.size()) break;
      const unsigned char c = static_cast<unsigned char>(t_[p_++]);
      if (c == '"') return true;
      if (c < 0x20) return false;
      if (c >= 0x80) {
        const std::size_t n = utf8_sequence_length(t_.substr(p_ - 1));
        if (n == 0) needs_repair_ = true;  // one byte; the caller decides what to do with it
        if (n > 1) p_ += n - 1;
        continue;
      }
      if (c != '\\') continue;
      if (p_ >= t_.size()) return false;
      const char e = t_[p_++];
      if (e == 'u') {
        if (!utf16_escape()) return false;
      } else if (std::string_view("\"\\/bfnrt").find(e) == std::string_view::npos) {
        return false;
      }
    }
    return false;
  }

 private:
  // The four hex digits after "\\u" (already consumed). A surrogate without its other half is
  // JSON Boost.JSON rejects but JavaScript servers write (a string cut inside an emoji): flagged
  // for repair like invalid UTF-8 rather than failing the message.
  bool utf16_escape() {
    const auto unit = hex4(p_);
    if (!unit) return false;
    p_ += 4;
    if (*unit >= 0xDC00 && *unit <= 0xDFFF) {
      needs_repair_ = true;
    } else if (*unit >= 0xD800 && *unit <= 0xDBFF) {
      const auto low = t_.substr(p_, 2) == "\\u" ? hex4(p_ + 2) : std::nullopt;
      if (low && *low >= 0xDC00 && *low <= 0xDFFF) {
        p_ += 6;
      } else {
        needs_repair_ = true;  // the next escape, if any, is read on its own
      }
    }
    return true;
  }
  std::optional<unsigned> hex4(std::size_t at) const {
    if (at + 4 > t_.size()) return std::nullopt;
    return json::hex4(t_.substr(at, 4));
  }

  // Brackets counted, strings checked, nothing else: enough to find where the value ends.
  bool skip_nested() {
    std::size_t open = 0;
    while (p_ < t_.size()) {
      const char c = t_[p_];
      if (c == '"') {
        if (!string()) return false;
        continue;
      }
      ++p_;
      if (c == '{' || c == '[') ++open;
      if ((c == '}' || c == ']') && --open == 0) return true;
    }
    return false;
  }
  bool object(std::size_t depth) {
    ++p_;
    ws();
    if (eat('}')) return true;
    for (;;) {
      ws();
      if (!string()) return false;
      ws();
      if (!eat(':')) return false;
      ws();
      if (!value(depth + 1)) return false;
      ws();
      if (eat('}')) return true;
      if (!eat(',')) return false;
    }
  }
  bool array(std::size_t depth) {
    ++p_;
    ws();
    if (eat(']')) return true;
    for (;;) {
      ws();
      if (!value(depth + 1)) return false;
      ws();
      if (eat(']')) return true;
      if (!eat(',')) return false;
    }
  }
  bool literal(std::string_view word) {
    if (t_.substr(p_, word.size()) != word) return false;
    p_ += word.size();
    return true;
  }
  bool digits() {
    const std::size_t start = p_;
    while (p_ < t_.size() && t_[p_] >= '0' && t_[p_] <= '9') ++p_;
    return p_ > start;
  }
  bool number() {
    eat('-');
    if (eat('0')) {
    } else if (!digits()) {
      return false;
    }
    if (eat('.') && !digits()) return false;
    if (peek() == 'e' || peek() == 'E') {
      ++p_;
      if (!eat('+')) eat('-');
      const std::size_t start = p_;
      while (peek() == '0') ++p_;
      const std::size_t significant = p_;
      digits();
      if (p_ == start) return false;
      // Boost.JSON refuses exponents past INT_MAX (with the mantissa's digits counted in); below
      // a billion no message the gateway reads can reach that.
      if (p_ - significant > kMaxExponentDigits) {
        exponent_out_of_range_ = true;
        return false;
      }
    }
    return true;
  }

  // Large tool results are mostly string bytes that need no attention: step over them 16 at a
  // time until a quote, a backslash, a control character or a byte past ASCII.
  void skip_plain_string_bytes() {
#ifdef __SSE2__
    const __m128i quote = _mm_set1_epi8('"');
    const __m128i backslash = _mm_set1_epi8('\\');
    const __m128i flip = _mm_set1_epi8(static_cast<char>(0x80));
    const __m128i below_space = _mm_set1_epi8(static_cast<char>(0x20 ^ 0x80));
    while (p_ + 16 <= t_.size()) {
      const __m128i chunk = _mm_loadu_si128(reinterpret_cast<const __m128i*>(t_.data() + p_));
      const __m128i hit = _mm_or_si128(
          _mm_or_si128(_mm_cmpeq_epi8(chunk, quote), _mm_cmpeq_epi8(chunk, backslash)),
          _mm_cmplt_epi8(_mm_xor_si128(chunk, flip), below_space));  // unsigned byte < 0x20
      // Bytes past ASCII stop the fast path too: their UTF-8 is checked one sequence at a time.
      const int mask = _mm_movemask_epi8(hit) | _mm_movemask_epi8(chunk);
      if (mask != 0) {
        p_ += static_cast<std::size_t>(__builtin_ctz(static_cast<unsigned>(mask)));
        return;
      }
      p_ += 16;
    }
#endif
  }

  std::string_view t_;
  std::size_t p_ = 0;
  bool too_deep_ = false;
  bool needs_repair_ = false;
  bool exponent_out_of_range_ = false;
};

std::string fmt_exponent() {
  return "a number's exponent has more than " + std::to_string(kMaxExponentDigits) +
         " digits (toolbridge's JSON number limit)";
}

std::string fmt_too_deep() {
  return "nested deeper than " + std::to_string(kMaxDepth) +
         " levels of arrays and objects (toolbridge's JSON depth limit)";
}

Envelope invalid(std::string problem) {
  Envelope e;
  e.problem = std::move(problem);
  return e;
}

// Unescapes a JSON string token (quotes included). Only called for short member values.
// Invalid UTF-8 and lone surrogates come out as U+FFFD: names and methods are echoed in messages.
std::string unescape(std::string_view token) {
  std::string repaired;
  if (!is_valid_utf8(token) || token.find("\\u") != std::string_view::npos) {
    repaired = repair_strings(token);
    token = repaired;
  }
  if (token.find('\\') == std::string_view::npos)
    return std::string(token.substr(1, token.size() - 2));
  boost::system::error_code ec;
  auto v = boost::json::parse(token, ec);
  return ec || !v.is_string() ? std::string() : std::string(v.get_string());
}

// Walks the result object `s` stands at (one pass, as value() would) and says whether its own
// "isError" member is true; the last one counts when a server writes it twice.
bool result_object(Scanner& s, std::string_view text, bool& is_error) {
  s.eat('{');
  s.ws();
  if (s.eat('}')) return true;
  for (;;) {
    s.ws();
    const std::size_t name_start = s.pos();
    if (!s.string()) return false;
    const std::string_view name = text.substr(name_start, s.pos() - name_start);
    s.ws();
    if (!s.eat(':')) return false;
    s.ws();
    const std::size_t value_start = s.pos();
    if (!s.value(2)) return false;
    if (name == "\"isError\"" ||
        (name.find('\\') != std::string_view::npos && unescape(name) == "isError")) {
      is_error = text.substr(value_start, s.pos() - value_start) == "true";
    }
    s.ws();
    if (s.eat('}')) return true;
    if (!s.eat(',')) return false;
  }
}

}  // namespace

ValueScan scan_value(std::string_view text, std::size_t offset, std::size_t depth) {
  Scanner s(text, offset);
  ValueScan out;
  out.valid = s.value(depth) && !s.too_deep();
  out.needs_repair = s.needs_repair();
  out.end = s.pos();
  return out;
}

Envelope parse_envelope(std::string_view text) {
  Scanner s(text);
  s.ws();
  if (s.peek() != '{') {
    if (s.at_end()) return invalid("not JSON: empty message");
    Scanner whole(text);
    whole.ws();
    const bool is_json = whole.value() && (whole.ws(), whole.at_end());
    if (whole.exponent_out_of_range()) return invalid(fmt_exponent());
    return invalid(is_json ? "a JSON-RPC message must be a JSON object" : "not JSON");
  }
  s.eat('{');
  Envelope e;
  bool has_id = false, has_version = false, first = true;
  for (;;) {
    s.ws();
    if (first && s.eat('}')) break;
    first = false;
    const std::size_t key_start = s.pos();
    if (!s.string()) return invalid("not JSON: malformed member name");
    const std::string key = unescape(text.substr(key_start, s.pos() - key_start));
    s.ws();
    if (!s.eat(':')) return invalid("not JSON: expected ':' after \"" + key + "\"");
    s.ws();
    const std::size_t start = s.pos();
    const char lead = s.peek();
    const bool read = key == "result" && lead == '{' ? result_object(s, text, e.is_error)
                                                     : s.value(1);
    if (!read) {
      if (s.exponent_out_of_range()) return invalid(fmt_exponent());
      return invalid("not JSON: malformed value of \"" + key + "\"");
    }
    const Span span{start, s.pos() - start};
    const std::string_view raw = span.in(text);
    if (key == "jsonrpc") {
      if (raw != "\"2.0\"") return invalid("\"jsonrpc\" must be \"2.0\"");
      has_version = true;
    } else if (key == "id") {
      if (raw == "null") {
        // An error response to a request whose id could not be read.
      } else if (lead == '"' || lead == '-' || (lead >= '0' && lead <= '9')) {
        e.id = span;
        has_id = true;
      } else {
        return invalid("\"id\" must be a string or a number");
      }
    } else if (key == "method") {
      if (lead != '"') return invalid("\"method\" must be a string");
      e.method = unescape(raw);
    } else if (key == "params") {
      e.params = span;
    } else if (key == "result") {
      e.result = span;
    } else if (key == "error") {
      e.error = span;
    }
    s.ws();
    if (s.eat('}')) break;
    if (!s.eat(',')) return invalid("not JSON: expected ',' or '}' after \"" + key + "\"");
  }
  s.ws();
  if (!s.at_end()) return invalid("not JSON: trailing characters after the object");
  e.needs_repair = s.needs_repair();
  if (s.too_deep()) {
    Envelope deep = invalid(fmt_too_deep());
    deep.too_deep = true;
    deep.id = e.id;
    deep.method = std::move(e.method);
    return deep;
  }
  if (!has_version) return invalid("missing \"jsonrpc\": \"2.0\"");
  if (!e.method.empty()) {
    e.kind = has_id ? Kind::kRequest : Kind::kNotification;
  } else if (!e.result.empty() || !e.error.empty()) {
    if (!e.result.empty() && !e.error.empty()) return invalid("both \"result\" and \"error\"");
    e.kind = Kind::kResponse;
  } else {
    return invalid("neither \"method\" nor \"result\"/\"error\"");
  }
  return e;
}

std::optional<std::vector<Member>> object_members(std::string_view text) {
  Scanner s(text);
  s.ws();
  if (!s.eat('{')) return std::nullopt;
  std::vector<Member> members;
  members.reserve(4);  // params, arguments: a few members; growing 1, 2, 4 cost three allocations
  s.ws();
  if (!s.eat('}')) {
    for (;;) {
      s.ws();
      const std::size_t key_start = s.pos();
      if (!s.string()) return std::nullopt;
      std::string name = unescape(text.substr(key_start, s.pos() - key_start));
      s.ws();
      if (!s.eat(':')) return std::nullopt;
      s.ws();
      const std::size_t start = s.pos();
      if (!s.value(1)) return std::nullopt;
      members.push_back(Member{std::move(name), Span{start, s.pos() - start}});
      s.ws();
      if (s.eat('}')) break;
      if (!s.eat(',')) return std::nullopt;
    }
  }
  s.ws();
  if (!s.at_end()) return std::nullopt;
  return members;
}

std::optional<std::string> with_member_value(std::string_view text,
                                             const std::vector<Member>& members,
                                             std::string_view name, std::string_view value) {
  std::optional<std::string> out;
  std::size_t copied = 0;  // text before this offset is in `out`
  for (const auto& m : members) {
    if (m.name != name) continue;
    if (!out) {
      out.emplace();
      out->reserve(text.size() + value.size());
    }
    out->append(text.substr(copied, m.value.offset - copied));
    out->append(value);
    copied = m.value.offset + m.value.length;
  }
  if (out) out->append(text.substr(copied));
  return out;
}

std::string rewrite_object(std::string_view text, const std::vector<Member>& members,
                           const std::vector<std::pair<std::string_view, std::string>>& replace,
                           const std::vector<std::string_view>& drop) {
  std::string out;
  out.reserve(text.size() + 32);
  out += '{';
  base::Marks used(replace.size());  // the replacements that found their member
  auto add = [&](std::string_view name, std::string_view value) {
    if (out.size() > 1) out += ',';
    out += quote(name);
    out += ':';
    out += value;
  };
  for (const auto& m : members) {
    if (std::find(drop.begin(), drop.end(), m.name) != drop.end()) continue;
    std::string_view value = m.value.in(text);
    for (std::size_t i = 0; i < replace.size(); ++i) {
      if (replace[i].first == m.name) {
        value = replace[i].second;
        used.mark(i);
      }
    }
    add(m.name, value);
  }
  for (std::size_t i = 0; i < replace.size(); ++i) {
    if (!used.marked(i)) add(replace[i].first, replace[i].second);
  }
  out += '}';
  return out;
}

bool is_batch(std::string_view text) {
  for (char c : text) {
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') continue;
    return c == '[';
  }
  return false;
}

base::Expected<std::vector<std::string>> split_batch(std::string_view text) {
  Scanner s(text);
  s.ws();
  if (!s.eat('[')) return base::fail("not a JSON array");
  std::vector<std::string> out;
  s.ws();
  if (!s.eat(']')) {
    for (;;) {
      s.ws();
      const std::size_t start = s.pos();
      if (!s.value(1)) return base::fail("not JSON: malformed batch element");
      out.emplace_back(text.substr(start, s.pos() - start));
      s.ws();
      if (s.eat(']')) break;
      if (!s.eat(',')) return base::fail("not JSON: expected ',' or ']' in batch");
    }
  }
  s.ws();
  if (!s.at_end()) return base::fail("not JSON: trailing characters after the batch");
  if (s.too_deep()) return base::fail(fmt_too_deep());
  return out;
}

}  // namespace toolbridge::json
