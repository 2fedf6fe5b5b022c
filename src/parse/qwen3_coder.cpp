// qwen3_coder: <tool_call><function=N><parameter=P>VALUE</parameter></function></tool_call>
// (grammar in format.h). Values stay text here; the tool's schema converts them (resolve.cpp).
#include <algorithm>

#include "parse/scan.h"

namespace toolbridge::parse {

namespace {

constexpr std::string_view kOpen = "<tool_call>";
constexpr std::string_view kClose = "</tool_call>";
constexpr std::string_view kFunction = "<function=";
constexpr std::string_view kFunctionEnd = "</function>";
constexpr std::string_view kParameter = "<parameter=";
constexpr std::string_view kParameterEnd = "</parameter>";

std::size_t first_of(std::size_t a, std::size_t b) {
  return std::min(a, b);
}

Read cut_off(std::string_view text, std::size_t pos, std::string why) {
  Read r;
  r.end = text.size();
  r.unparsed.push_back({std::string(text.substr(pos)), std::move(why)});
  return r;
}

// The parameters of a function body; false (with why) when the last one is cut off.
bool read_parameters(std::string_view body, bool closed, RawCall& call, std::string& why) {
  std::size_t p = body.find(kParameter);
  while (p != npos) {
    const std::size_t gt = body.find('>', p + kParameter.size());
    if (gt == npos) {
      why = "cut off inside a <parameter=...> tag";
      return false;
    }
    std::string name = trim(body.substr(p + kParameter.size(), gt - p - kParameter.size()));
    const std::size_t end = body.find(kParameterEnd, gt + 1);
    const std::size_t next = body.find(kParameter, gt + 1);
    if (end == npos && next == npos && !closed) {
      why = "cut off inside parameter '" + name + "'";
      return false;
    }
    const std::size_t stop = first_of(first_of(end, next), body.size());
    call.parameters.emplace_back(std::move(name),
                                 trim_one_newline(body.substr(gt + 1, stop - gt - 1)));
    p = stop == end ? body.find(kParameter, end + kParameterEnd.size()) : next;
  }
  return true;
}

class Qwen3Coder final : public Format {
 public:
  std::string_view name() const override { return "qwen3_coder"; }

  std::size_t find_start(std::string_view text, std::size_t from, bool) const override {
    return first_of(text.find(kOpen, from), text.find(kFunction, from));
  }

  Read read(std::string_view text, std::size_t pos, bool, bool final) const override {
    std::size_t f = pos;
    if (starts_at(text, pos, kOpen)) {
      f = skip_ws(text, pos + kOpen.size());
      if (!final && (f == text.size() || cut_marker(text, f, kFunction))) {
        return {Read::Status::kNeedMore};
      }
      if (f == text.size()) return cut_off(text, pos, "cut off after <tool_call>");
      if (!starts_at(text, f, kFunction)) return {Read::Status::kMention};
    }
    const std::size_t gt = text.find('>', f + kFunction.size());
    if (gt == npos) {
      if (!final) return {Read::Status::kNeedMore};
      return cut_off(text, pos, "cut off inside the <function=...> tag");
    }
    const std::size_t fe = text.find(kFunctionEnd, gt);
    const std::size_t tc = text.find(kClose, gt);
    const std::size_t nx = first_of(text.find(kOpen, gt), text.find(kFunction, gt));
    const std::size_t body_end = first_of(first_of(fe, tc), nx);
    std::size_t end = body_end;
    bool closed = true;
    if (body_end == npos) {
      if (!final) return {Read::Status::kNeedMore};
      end = text.size();
      closed = false;
    } else if (body_end == fe) {
      const std::size_t after = skip_ws(text, fe + kFunctionEnd.size());
      if (!final && (after == text.size() || cut_marker(text, after, kClose))) {
        return {Read::Status::kNeedMore};
      }
      end = starts_at(text, after, kClose) ? after + kClose.size() : fe + kFunctionEnd.size();
    } else if (body_end == tc) {
      end = tc + kClose.size();
    }
    Read r;
    r.end = end;
    RawCall call;
    call.text = std::string(text.substr(pos, end - pos));
    call.name = trim(text.substr(f + kFunction.size(), gt - f - kFunction.size()));
    const std::size_t body_stop = body_end == npos ? text.size() : body_end;
    std::string why;
    if (call.name.empty()) why = "the <function=...> tag names no function";
    if (why.empty() &&
        read_parameters(text.substr(gt + 1, body_stop - gt - 1), closed, call, why)) {
      r.calls.push_back(std::move(call));
    } else {
      r.unparsed.push_back({call.text, std::move(why)});
    }
    return r;
  }

  std::string render(const std::vector<ToolResponse>& responses) const override {
    std::string out;
    for (const auto& r : responses) {
      if (!out.empty()) out += '\n';
      out += "<tool_response>\n" + r.text + "\n</tool_response>";
    }
    return out;
  }
};

}  // namespace

const Format& qwen3_coder_format() {
  static const Qwen3Coder format;
  return format;
}

}  // namespace toolbridge::parse
