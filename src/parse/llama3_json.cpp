// llama3_json: [<|python_tag|>] {"name": N, "arguments"|"parameters": A} (";" OBJ)* (grammar in
// format.h). Each object is a call as soon as its braces close.
#include <algorithm>

#include "parse/scan.h"

namespace toolbridge::parse {

namespace {

constexpr std::string_view kTag = "<|python_tag|>";

class Llama3Json final : public Format {
 public:
  std::string_view name() const override { return "llama3_json"; }

  std::size_t find_start(std::string_view text, std::size_t from, bool fresh) const override {
    std::size_t p = text.find(kTag, from);
    if (fresh) {
      const std::size_t q = skip_ws(text, from);
      if (q < text.size() && text[q] == '{') p = std::min(p, q);
    }
    return p;
  }

  Read read(std::string_view text, std::size_t pos, bool in_block, bool final) const override {
    const bool tagged = !in_block && starts_at(text, pos, kTag);
    std::size_t q = tagged ? skip_ws(text, pos + kTag.size()) : skip_ws(text, pos);
    if (in_block && q < text.size() && text[q] == ';') q = skip_ws(text, q + 1);
    if (q == text.size()) {
      if (!final) return {Read::Status::kNeedMore};
      if (in_block) return closed_block(pos);
      if (!tagged) return {Read::Status::kMention};
      Read r;
      r.end = text.size();
      r.unparsed.push_back({std::string(text.substr(pos)), "cut off after <|python_tag|>"});
      return r;
    }
    if (text[q] != '{') return in_block ? closed_block(pos) : Read{Read::Status::kMention};
    const std::size_t e = json_extent(text, q);
    if (e == npos && !final) return {Read::Status::kNeedMore};
    const std::size_t stop = e == npos ? text.size() : e;
    const std::string_view object = text.substr(q, stop - q);
    if (!tagged && !looks_like_call(object)) {
      return in_block ? closed_block(pos) : Read{Read::Status::kMention};
    }
    Read r;
    r.end = stop;
    r.in_block = e != npos;
    RawCall call;
    call.text = std::string(text.substr(pos, stop - pos));
    base::Status read = e == npos ? base::fail("cut off before the call's object closed")
                                  : read_call_object(object, call);
    if (read) {
      r.calls.push_back(std::move(call));
    } else {
      r.unparsed.push_back({call.text, read.error()});
    }
    return r;
  }

  std::string render(const std::vector<ToolResponse>& responses) const override {
    std::string out;
    for (const auto& r : responses) {
      out += "<|start_header_id|>ipython<|end_header_id|>\n\n" + r.text + "<|eot_id|>";
    }
    return out;
  }

 private:
  static Read closed_block(std::size_t pos) {
    Read r;
    r.end = pos;
    return r;
  }
};

}  // namespace

const Format& llama3_json_format() {
  static const Llama3Json format;
  return format;
}

}  // namespace toolbridge::parse
