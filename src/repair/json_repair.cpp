#include "repair/json_repair.h"

#include <algorithm>
#include <cctype>

#include "json/envelope.h"
#include "json/parse.h"

namespace toolbridge::repair {
namespace {

using config::RepairMode;

// What the next token of a container (or of the top level) may be.
enum class Expect { kValue, kValueOrEnd, kKey, kKeyOrEnd, kColon, kCommaOrEnd, kDone };

struct Frame {
  char close;  // '}' or ']'; 0 for the top level
  Expect expect;
};

// Typographic quotes, as UTF-8.
constexpr std::string_view kLeftDouble = "\xE2\x80\x9C";   // “
constexpr std::string_view kRightDouble = "\xE2\x80\x9D";  // ”
constexpr std::string_view kLeftSingle = "\xE2\x80\x98";   // ‘
constexpr std::string_view kRightSingle = "\xE2\x80\x99";  // ’

bool is_ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$';
}
bool is_ident_char(char c) {
  return is_ident_start(c) || (c >= '0' && c <= '9') || c == '-';
}
bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}
std::string control_escape(char c) {
  static constexpr char kHex[] = "0123456789abcdef";
  const auto u = static_cast<unsigned char>(c);
  return std::string("\\u00") + kHex[u >> 4] + kHex[u & 15];
}
bool is_number_char(char c) {
  return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

std::string abbreviated(std::string key) {
  if (key.size() > 64) key = key.substr(0, 60) + "…\"";
  return key;
}

class Repairer {
 public:
  Repairer(std::string_view text, RepairMode mode) : in_(text), mode_(mode) {}

  JsonRepair run() {
    stack_.push_back({0, Expect::kValue});
    while (problem_.empty()) {
      skip_space_and_comments();
      if (!problem_.empty()) break;
      if (pos_ >= in_.size()) break;
      step();
    }
    if (problem_.empty()) finish();
    JsonRepair r;
    if (problem_.empty()) {
      r.json = std::move(out_);
      r.fixes = std::move(fixes_);
    } else {
      r.problem = std::move(problem_);
    }
    return r;
  }

 private:
  bool aggressive() const { return mode_ == RepairMode::kAggressive; }
  void fix(std::string_view kind) {
    if (std::find(fixes_.begin(), fixes_.end(), kind) == fixes_.end()) fixes_.push_back(kind);
  }
  void fail(std::string why) {
    if (problem_.empty()) problem_ = std::move(why) + " at byte " + std::to_string(pos_);
  }
  bool at(std::string_view s) const { return in_.substr(pos_).starts_with(s); }
  Frame& top() { return stack_.back(); }

  void skip_space_and_comments() {
    while (pos_ < in_.size()) {
      if (is_space(in_[pos_])) {
        ++pos_;
      } else if (at("//")) {
        const std::size_t nl = in_.find('\n', pos_);
        pos_ = nl == std::string_view::npos ? in_.size() : nl + 1;
        fix("comment");
      } else if (at("/*")) {
        const std::size_t end = in_.find("*/", pos_ + 2);
        if (end == std::string_view::npos) return fail("a comment that is not closed");
        pos_ = end + 2;
        fix("comment");
      } else {
        return;
      }
    }
  }

  // After a complete value: what its container expects next.
  void after_value() {
    Frame& f = top();
    f.expect = f.close == 0 ? Expect::kDone : Expect::kCommaOrEnd;
  }

  void step() {
    const char c = in_[pos_];
    Expect& e = top().expect;
    if (e == Expect::kDone) return fail("text after the end of the value");
    if (c == '}' || c == ']') return close(c);
    if (c == ',') return comma();
    if (c == ':') {
      if (e != Expect::kColon) return fail("':' where it does not belong");
      out_ += ':';
      ++pos_;
      e = Expect::kValue;
      return;
    }
    if (e == Expect::kColon) return fail("a key without ':'");
    if (e == Expect::kCommaOrEnd) {
      // A missing comma is only guessed before a double-quoted string (the next key or item).
      if (!aggressive() || c != '"') return fail("a missing ','");
      fix("missing_comma");
      out_ += ',';
      e = top().close == '}' ? Expect::kKey : Expect::kValue;
    }
    const bool key = e == Expect::kKey || e == Expect::kKeyOrEnd;
    if (key) return read_key();
    read_value();
  }

  void close(char c) {
    Frame& f = top();
    if (f.close != c) return fail(std::string("a '") + c + "' that closes nothing open");
    if (f.expect == Expect::kKey || f.expect == Expect::kValue) {
      // [1, 2,] or {"a": 1,}: the comma goes.
      if (f.expect == Expect::kValue && c == '}') return fail("a key without a value");
      if (out_.empty() || out_.back() != ',') return fail("a value missing before the end");
      out_.pop_back();
      fix("trailing_comma");
    } else if (f.expect == Expect::kColon) {
      return fail("a key without a value");
    }
    out_ += c;
    ++pos_;
    stack_.pop_back();
    after_value();
  }

  void comma() {
    Expect& e = top().expect;
    if (e != Expect::kCommaOrEnd) return fail("a ',' where a value belongs");
    out_ += ',';
    ++pos_;
    e = top().close == '}' ? Expect::kKey : Expect::kValue;
  }

  void read_key() {
    const std::size_t key_start = out_.size();
    const char c = in_[pos_];
    if (c == '"' || c == '\'' || at(kLeftDouble) || at(kRightDouble) || at(kLeftSingle)) {
      if (!read_string()) return;
    } else if (is_ident_start(c) || (aggressive() && c >= '0' && c <= '9')) {
      const std::size_t start = pos_;
      while (pos_ < in_.size() && is_ident_char(in_[pos_])) ++pos_;
      out_ += json::quote(in_.substr(start, pos_ - start));
      fix("unquoted_key");
    } else {
      return fail("a key that is not a string");
    }
    last_key_ = abbreviated(out_.substr(key_start));
    top().expect = Expect::kColon;
  }

  void read_value() {
    const char c = in_[pos_];
    if (c == '{' || c == '[') {
      if (stack_.size() > json::kMaxDepth) return fail("nested deeper than the JSON limit");
      out_ += c;
      ++pos_;
      after_value();  // the container is this frame's value
      stack_.push_back({c == '{' ? '}' : ']', c == '{' ? Expect::kKeyOrEnd : Expect::kValueOrEnd});
      return;
    }
    if (c == '"' || c == '\'' || at(kLeftDouble) || at(kRightDouble) || at(kLeftSingle)) {
      if (read_string()) after_value();
      return;
    }
    if (is_number_char(c)) return read_number();
    if (is_ident_start(c)) return read_word();
    fail(std::string("an unexpected character '") + c + "'");
  }

  void read_number() {
    const std::size_t start = pos_;
    while (pos_ < in_.size() && is_number_char(in_[pos_])) ++pos_;
    const std::string_view n = in_.substr(start, pos_ - start);
    boost::system::error_code ec;
    const auto v = json::parse(n, ec);
    if (ec || !v.is_number()) return fail("'" + std::string(n) + "' is not a number");
    out_ += n;
    after_value();
  }

  void read_word() {
    const std::size_t start = pos_;
    while (pos_ < in_.size() && is_ident_char(in_[pos_])) ++pos_;
    const std::string_view w = in_.substr(start, pos_ - start);
    if (w == "true" || w == "false" || w == "null") {
      out_ += w;
    } else if (w == "True" || w == "False" || w == "None") {
      out_ += w == "True" ? "true" : w == "False" ? "false" : "null";
      fix("python_literal");
    } else {
      pos_ = start;
      return fail("'" + std::string(w) + "' is not a JSON value (a string needs quotes)");
    }
    after_value();
  }

  // One string in any of the quotes models write, as a JSON string. False at a problem.
  bool read_string() {
    std::string_view closer;
    if (in_[pos_] == '"') {
      closer = "\"";
      pos_ += 1;
    } else if (in_[pos_] == '\'') {
      closer = "'";
      pos_ += 1;
      fix("single_quotes");
    } else if (at(kLeftSingle)) {
      closer = kRightSingle;
      pos_ += kLeftSingle.size();
      fix("smart_quotes");
    } else {
      closer = kRightDouble;
      pos_ += kLeftDouble.size();
      fix("smart_quotes");
    }
    const bool json_quotes = closer == "\"";
    out_ += '"';
    while (pos_ < in_.size()) {
      const char c = in_[pos_];
      if (in_.substr(pos_).starts_with(closer) && !apostrophe(closer)) {
        pos_ += closer.size();
        out_ += '"';
        return true;
      }
      if (c == '\\' && pos_ + 1 < in_.size()) {
        const char next = in_[pos_ + 1];
        if (next == '\'' && !json_quotes) {
          out_ += '\'';
        } else {
          out_ += c;
          out_ += next;
        }
        pos_ += 2;
        continue;
      }
      if (c == '\\') break;  // the input ends inside an escape
      if (c == '"') {
        out_ += "\\\"";
      } else if (static_cast<unsigned char>(c) < 0x20) {
        out_ += c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t" : control_escape(c);
        fix("control_character");
      } else {
        out_ += c;
      }
      ++pos_;
    }
    if (!aggressive()) {
      // Where the string ended is unknown: the model can send the value again.
      fail(last_key_.empty() ? std::string("a string that is not closed")
                             : "a string that is not closed (in the value of " + last_key_ + ")");
      return false;
    }
    if (!out_.empty() && out_.back() == '\\') out_.pop_back();
    out_ += '"';
    fix("truncated_string");
    return true;
  }

  // Aggressive: in 'it's', the quote followed by a letter is an apostrophe, not the end.
  bool apostrophe(std::string_view closer) const {
    if (!aggressive() || closer != "'") return false;
    const std::size_t next = pos_ + 1;
    return next < in_.size() && (std::isalpha(static_cast<unsigned char>(in_[next])) != 0);
  }

  // The input ended: close what is open, if that has one reading.
  void finish() {
    if (stack_.size() == 1) {
      if (top().expect != Expect::kDone) fail("no value");
      return;
    }
    while (stack_.size() > 1) {
      Frame& f = top();
      if (f.expect == Expect::kKey || f.expect == Expect::kValue) {
        // Cut after a comma: aggressive drops it.
        if (!aggressive()) return fail("the input ends after a ','");
        if (f.expect == Expect::kValue && f.close == '}') return drop_dangling_key();
        out_.pop_back();
      } else if (f.expect == Expect::kColon) {
        if (!aggressive()) return fail("the input ends after a key");
        return drop_dangling_key();
      }
      out_ += f.close;
      stack_.pop_back();
      after_value();
      fix("truncated_end");
    }
  }

  // Aggressive: {"a": 1, "b" or {"a": 1, "b": at the end: the key goes, then the object closes.
  void drop_dangling_key() {
    const std::size_t key_end = out_.back() == ':' ? out_.size() - 1 : out_.size();
    // The key is the JSON string that ends at key_end; find its opening quote.
    std::size_t i = key_end - 1;  // its closing quote
    while (i > 0) {
      --i;
      if (out_[i] == '"') {
        std::size_t slashes = 0;
        while (i > slashes && out_[i - 1 - slashes] == '\\') ++slashes;
        if (slashes % 2 == 0) break;
      }
    }
    out_.resize(i);
    if (!out_.empty() && out_.back() == ',') out_.pop_back();
    fix("dangling_key");
    top().expect = Expect::kCommaOrEnd;
    finish();
  }

  std::string_view in_;
  RepairMode mode_;
  std::size_t pos_ = 0;
  std::string out_;
  std::vector<Frame> stack_;
  std::vector<std::string_view> fixes_;
  std::string problem_;
  std::string last_key_;  // the last key read, as JSON, for messages
};

// ```json … ``` around the text: the inside.
std::string_view strip_fence(std::string_view t, bool& stripped) {
  if (!t.starts_with("```")) return t;
  const std::size_t nl = t.find('\n');
  if (nl == std::string_view::npos) return t;
  const std::string_view lang = t.substr(3, nl - 3);
  if (!std::all_of(lang.begin(), lang.end(), [](char c) { return is_ident_char(c) || c == ' '; }))
    return t;
  t.remove_prefix(nl + 1);
  while (!t.empty() && is_space(t.back())) t.remove_suffix(1);
  if (t.ends_with("```")) t.remove_suffix(3);
  stripped = true;
  return t;
}

std::string_view trim(std::string_view t) {
  while (!t.empty() && is_space(t.front())) t.remove_prefix(1);
  while (!t.empty() && is_space(t.back())) t.remove_suffix(1);
  return t;
}

}  // namespace

JsonRepair repair_json(std::string_view text, config::RepairMode mode) {
  JsonRepair r;
  if (text.size() > kMaxRepairBytes) {
    r.problem = "longer than " + std::to_string(kMaxRepairBytes) + " bytes; not repaired";
    return r;
  }
  boost::system::error_code ec;
  json::parse(text, ec);
  if (!ec) {
    r.json = std::string(text);
    return r;
  }
  if (mode == config::RepairMode::kOff) {
    r.problem = "not JSON (" + ec.message() + ")";
    return r;
  }
  bool fenced = false;
  std::string_view body = trim(strip_fence(trim(text), fenced));
  bool prose = false;
  if (mode == config::RepairMode::kAggressive && !body.empty() && body.front() != '{' &&
      body.front() != '[') {
    // "Here are the arguments: {...}": the object inside the prose.
    const std::size_t open = body.find('{');
    const std::size_t close = body.rfind('}');
    if (open != std::string_view::npos && close != std::string_view::npos && close > open) {
      body = body.substr(open, close - open + 1);
      prose = true;
    }
  }
  r = Repairer(body, mode).run();
  if (!r.ok()) return r;
  if (fenced) r.fixes.insert(r.fixes.begin(), "code_fence");
  if (prose) r.fixes.insert(r.fixes.begin(), "surrounding_text");
  json::parse(r.json, ec);
  if (ec) {
    // The rules above produce JSON by construction; this catches a rule that does not.
    r = JsonRepair{{}, {}, "the repair did not produce JSON (" + ec.message() + ")"};
  }
  return r;
}

}  // namespace toolbridge::repair
