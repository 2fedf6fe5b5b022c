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

// Where one parameter's value ends, from `v` (after its tag): its "</parameter>" if that comes
// before the next tag, else the next "<parameter=" or "</function>" (closer missing), else
// "</tool_call>" once no more text can come. npos: not decided yet (or cut off, when final).
// `next`: where reading goes on.
std::size_t value_end(std::string_view text, std::size_t v, bool final, std::size_t& next) {
  const std::size_t e = text.find(kParameterEnd, v);
  const std::size_t stop = first_of(text.find(kParameter, v), text.find(kFunctionEnd, v));
  if (e != npos && e < stop) {
    next = e + kParameterEnd.size();
    return e;
  }
  next = stop;
  if (stop != npos) return stop;
  // Only "</tool_call>" left: a "</parameter>" may still come after it.
  const std::size_t tc = final ? text.find(kClose, v) : npos;
  next = tc;
  return tc;
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
    RawCall call;
    call.name = trim(text.substr(f + kFunction.size(), gt - f - kFunction.size()));
    std::size_t p = gt + 1;
    std::size_t end = npos;
    while (end == npos) {
      const std::size_t q = skip_ws(text, p);
      if (starts_at(text, q, kParameter)) {
        const std::size_t tag_end = text.find('>', q + kParameter.size());
        if (tag_end == npos) {
          if (!final) return {Read::Status::kNeedMore};
          return cut_off(text, pos, "cut off inside a <parameter=...> tag");
        }
        std::string name =
            trim(text.substr(q + kParameter.size(), tag_end - q - kParameter.size()));
        std::size_t next = npos;
        const std::size_t stop = value_end(text, tag_end + 1, final, next);
        if (stop == npos) {
          if (!final) return {Read::Status::kNeedMore};
          return cut_off(text, pos, "cut off inside parameter '" + name + "'");
        }
        call.parameters.emplace_back(
            std::move(name), trim_one_newline(text.substr(tag_end + 1, stop - tag_end - 1)));
        p = next;
      } else if (starts_at(text, q, kFunctionEnd)) {
        const std::size_t after = skip_ws(text, q + kFunctionEnd.size());
        if (!final && (after == text.size() || cut_marker(text, after, kClose))) {
          return {Read::Status::kNeedMore};
        }
        end = starts_at(text, after, kClose) ? after + kClose.size() : q + kFunctionEnd.size();
      } else if (starts_at(text, q, kClose)) {
        end = q + kClose.size();
      } else if (!final && (q == text.size() || cut_marker(text, q, kParameter) ||
                            cut_marker(text, q, kFunctionEnd) || cut_marker(text, q, kClose))) {
        return {Read::Status::kNeedMore};
      } else {
        end = q == text.size() ? q : p;  // closing tags missing: the call ends here
      }
    }
    Read r;
    r.end = end;
    call.text = std::string(text.substr(pos, end - pos));
    if (call.name.empty()) {
      r.unparsed.push_back({call.text, "the <function=...> tag names no function"});
    } else {
      r.calls.push_back(std::move(call));
    }
    return r;
  }

  std::string render(const std::vector<ToolResponse>& responses) const override {
    return render_tool_response_blocks(responses);
  }
};

}  // namespace

const Format& qwen3_coder_format() {
  static const Qwen3Coder format;
  return format;
}

}  // namespace toolbridge::parse
