// deepseek_v3 and deepseek_v31: calls between DeepSeek's special tokens (grammar in format.h).
// Both read either call shape; they differ in how answers are rendered.
#include <algorithm>

#include "parse/scan.h"

namespace toolbridge::parse {

namespace {

constexpr std::string_view kCallsBegin = "<｜tool▁calls▁begin｜>";
constexpr std::string_view kCallsEnd = "<｜tool▁calls▁end｜>";
constexpr std::string_view kCallBegin = "<｜tool▁call▁begin｜>";
constexpr std::string_view kCallEnd = "<｜tool▁call▁end｜>";
constexpr std::string_view kSep = "<｜tool▁sep｜>";

// NAME "\n```json\n" ARGS "\n```" (v3, after the type) or ARGS alone (v3.1): false if the
// fenced shape is not whole.
void split_call(std::string_view left, std::string_view right, RawCall& call) {
  const std::size_t fence = right.find("```");
  const std::size_t line = right.find('\n');
  if (fence == npos || line == npos || line > fence) {
    call.name = trim(left);
    call.arguments = trim(right);
    return;
  }
  call.name = trim(right.substr(0, line));
  std::string_view args = right.substr(fence + 3);
  if (args.starts_with("json")) args.remove_prefix(4);
  const std::size_t close = args.rfind("```");
  if (close != npos) args = args.substr(0, close);
  call.arguments = trim(args);
}

class DeepSeek final : public Format {
 public:
  explicit DeepSeek(bool v31) : v31_(v31) {}
  std::string_view name() const override { return v31_ ? "deepseek_v31" : "deepseek_v3"; }

  std::size_t find_start(std::string_view text, std::size_t from, bool) const override {
    return std::min(text.find(kCallsBegin, from), text.find(kCallBegin, from));
  }

  Read read(std::string_view text, std::size_t pos, bool, bool final) const override {
    std::size_t q = pos;
    if (starts_at(text, q, kCallsBegin)) q += kCallsBegin.size();
    q = skip_ws(text, q);
    if (starts_at(text, q, kCallsEnd)) return done(q + kCallsEnd.size(), false);
    const bool cut =
        q == text.size() || cut_marker(text, q, kCallsEnd) || cut_marker(text, q, kCallBegin);
    if (cut && !final) return {Read::Status::kNeedMore};
    if (!starts_at(text, q, kCallBegin)) {
      // The block ends here (its closing token missing): what follows is content.
      return done(q == text.size() ? q : pos, false);
    }
    const std::size_t body = q + kCallBegin.size();
    const std::size_t ce = text.find(kCallEnd, body);
    Read r;
    if (ce == npos) {
      if (!final) return {Read::Status::kNeedMore};
      r.end = text.size();
      r.unparsed.push_back({std::string(text.substr(q)), "cut off before <｜tool▁call▁end｜>"});
      return r;
    }
    r.end = ce + kCallEnd.size();
    r.in_block = true;
    const std::string_view inside = text.substr(body, ce - body);
    RawCall call;
    call.text = std::string(text.substr(q, r.end - q));
    const std::size_t sep = inside.find(kSep);
    if (sep == npos) {
      r.unparsed.push_back({call.text, "no <｜tool▁sep｜> between the call's name and arguments"});
      return r;
    }
    split_call(inside.substr(0, sep), inside.substr(sep + kSep.size()), call);
    if (call.name.empty()) {
      r.unparsed.push_back({call.text, "the call names no tool"});
    } else {
      r.calls.push_back(std::move(call));
    }
    return r;
  }

  std::string render(const std::vector<ToolResponse>& responses) const override {
    std::string out;
    for (const auto& r : responses) {
      out += "<｜tool▁output▁begin｜>" + r.text + "<｜tool▁output▁end｜>";
    }
    if (!v31_) out = "<｜tool▁outputs▁begin｜>" + out + "<｜tool▁outputs▁end｜>";
    return out;
  }

 private:
  static Read done(std::size_t end, bool in_block) {
    Read r;
    r.end = end;
    r.in_block = in_block;
    return r;
  }
  bool v31_;
};

}  // namespace

const Format& deepseek_v3_format() {
  static const DeepSeek format(false);
  return format;
}

const Format& deepseek_v31_format() {
  static const DeepSeek format(true);
  return format;
}

}  // namespace toolbridge::parse
