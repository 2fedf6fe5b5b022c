// hermes: <tool_call>{"name": N, "arguments": A}</tool_call> (grammar in format.h).
#include "parse/scan.h"

namespace toolbridge::parse {

namespace {

constexpr std::string_view kOpen = "<tool_call>";
constexpr std::string_view kClose = "</tool_call>";

// One JSON call object from text[q, e), its block ending at `end`.
Read call_at(std::string_view text, std::size_t pos, std::size_t q, std::size_t e, std::size_t end,
             bool cut) {
  Read r;
  r.end = end;
  RawCall call;
  call.text = std::string(text.substr(pos, end - pos));
  if (base::Status read = read_call_object(text.substr(q, e - q), call)) {
    r.calls.push_back(std::move(call));
  } else {
    std::string why = cut ? "cut off before the call ended; " + read.error() : read.error();
    r.unparsed.push_back({std::string(text.substr(pos, end - pos)), std::move(why)});
  }
  return r;
}

class Hermes final : public Format {
 public:
  std::string_view name() const override { return "hermes"; }

  std::size_t find_start(std::string_view text, std::size_t from, bool) const override {
    return text.find(kOpen, from);
  }

  Read read(std::string_view text, std::size_t pos, bool, bool final) const override {
    const std::size_t q = skip_ws(text, pos + kOpen.size());
    if (q == text.size()) {
      if (!final) return {Read::Status::kNeedMore};
      Read r;
      r.end = text.size();
      r.unparsed.push_back({std::string(text.substr(pos)), "cut off after <tool_call>"});
      return r;
    }
    if (text[q] != '{') return {Read::Status::kMention};
    const std::size_t e = json_extent(text, q);
    if (e == npos) {
      if (!final) return {Read::Status::kNeedMore};
      return call_at(text, pos, q, text.size(), text.size(), true);
    }
    const std::size_t after = skip_ws(text, e);
    if (starts_at(text, after, kClose))
      return call_at(text, pos, q, e, after + kClose.size(), false);
    if (!final && (after == text.size() || cut_marker(text, after, kClose))) {
      return {Read::Status::kNeedMore};
    }
    // A block not closed: the last one of a cut-off output, or a model that forgot the tag.
    return call_at(text, pos, q, e, e, false);
  }

  std::string render(const std::vector<ToolResponse>& responses) const override {
    return render_tool_response_blocks(responses);
  }
};

}  // namespace

const Format& hermes_format() {
  static const Hermes format;
  return format;
}

}  // namespace toolbridge::parse
