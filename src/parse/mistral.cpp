// mistral: [TOOL_CALLS] [OBJ, ...] (before v11) or [TOOL_CALLS]N[ARGS]{...} (v11+) (grammar in
// format.h). In the array form each object is a call as soon as its braces close.
#include "json/envelope.h"
#include "parse/scan.h"

namespace toolbridge::parse {

namespace {

constexpr std::string_view kTag = "[TOOL_CALLS]";
constexpr std::string_view kArgs = "[ARGS]";

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.';
}

Read cut_off(std::string_view text, std::size_t pos, std::string why) {
  Read r;
  r.end = text.size();
  r.unparsed.push_back({std::string(text.substr(pos)), std::move(why)});
  return r;
}

class Mistral final : public Format {
 public:
  std::string_view name() const override { return "mistral"; }

  std::size_t find_start(std::string_view text, std::size_t from, bool) const override {
    return text.find(kTag, from);
  }

  Read read(std::string_view text, std::size_t pos, bool in_block, bool final) const override {
    if (in_block) return element(text, pos, pos, final);
    const std::size_t q = skip_ws(text, pos + kTag.size());
    if (q == text.size()) {
      if (!final) return {Read::Status::kNeedMore};
      return cut_off(text, pos, "cut off after [TOOL_CALLS]");
    }
    if (text[q] == '[') return element(text, pos, q + 1, final);
    if (text[q] == '{') return object(text, pos, q, final, false);
    if (!name_char(text[q])) return {Read::Status::kMention};
    std::size_t n = q;
    while (n < text.size() && name_char(text[n])) ++n;
    std::size_t a = n;
    if (starts_at(text, a, kArgs)) a += kArgs.size();
    if (!final && (a == text.size() || cut_marker(text, a, kArgs))) {
      return {Read::Status::kNeedMore};
    }
    if (a == text.size()) return cut_off(text, pos, "cut off before the call's arguments");
    if (text[a] != '{') return {Read::Status::kMention};
    const std::size_t e = json_extent(text, a);
    if (e == npos) {
      if (!final) return {Read::Status::kNeedMore};
      return cut_off(text, pos, "cut off before the call's arguments closed");
    }
    Read r;
    r.end = e;
    RawCall call;
    call.name = std::string(text.substr(q, n - q));
    call.arguments = std::string(text.substr(a, e - a));
    call.text = std::string(text.substr(pos, e - pos));
    r.calls.push_back(std::move(call));
    return r;
  }

  std::string render(const std::vector<ToolResponse>& responses) const override {
    std::string out;
    for (const auto& r : responses) {
      out += "[TOOL_RESULTS]{\"content\": " + json::quote(r.text) +
             ", \"call_id\": " + json::quote(r.call_id) + "}[/TOOL_RESULTS]";
    }
    return out;
  }

 private:
  // The next element of the array form, from `from` (after "[" or the previous object).
  static Read element(std::string_view text, std::size_t pos, std::size_t from, bool final) {
    std::size_t q = skip_ws(text, from);
    if (q < text.size() && text[q] == ',') q = skip_ws(text, q + 1);
    if (q == text.size()) {
      if (!final) return {Read::Status::kNeedMore};
      return cut_off(text, pos, "cut off inside the [TOOL_CALLS] array");
    }
    if (text[q] == ']') {
      Read r;
      r.end = q + 1;
      return r;
    }
    if (text[q] != '{') {
      Read r;
      r.end = from;
      r.unparsed.push_back({std::string(text.substr(from, q + 1 - from)),
                            "expected a call object, ',' or ']' in the [TOOL_CALLS] array"});
      return r;
    }
    return object(text, q, q, final, true);
  }

  static Read object(std::string_view text, std::size_t pos, std::size_t q, bool final,
                     bool in_array) {
    const std::size_t e = json_extent(text, q);
    if (e == npos) {
      if (!final) return {Read::Status::kNeedMore};
      return cut_off(text, pos, "cut off before the call's object closed");
    }
    Read r;
    r.end = e;
    r.in_block = in_array;
    RawCall call;
    call.text = std::string(text.substr(pos, e - pos));
    if (base::Status read = read_call_object(text.substr(q, e - q), call)) {
      r.calls.push_back(std::move(call));
    } else {
      r.unparsed.push_back({call.text, read.error()});
    }
    return r;
  }
};

}  // namespace

const Format& mistral_format() {
  static const Mistral format;
  return format;
}

}  // namespace toolbridge::parse
