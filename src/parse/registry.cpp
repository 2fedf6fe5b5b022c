// The formats by name, and `auto`: at each position the first format whose call starts there and
// reads as a call (not a mention) wins.
#include <algorithm>

#include "parse/scan.h"

namespace toolbridge::parse {

const Format& hermes_format();
const Format& qwen3_coder_format();
const Format& llama3_json_format();
const Format& mistral_format();
const Format& deepseek_v3_format();
const Format& deepseek_v31_format();
const Format& use_mcp_tool_format();

namespace {

// One line per format; auto tries them in this order.
const std::vector<const Format*> kFormats{
    &hermes_format(),      &qwen3_coder_format(),  &llama3_json_format(),  &mistral_format(),
    &deepseek_v3_format(), &use_mcp_tool_format(), &deepseek_v31_format(),
};

class Auto final : public Format {
 public:
  std::string_view name() const override { return "auto"; }

  std::size_t find_start(std::string_view text, std::size_t from, bool fresh) const override {
    std::size_t first = npos;
    for (const Format* f : kFormats) first = std::min(first, f->find_start(text, from, fresh));
    return first;
  }

  Read read(std::string_view text, std::size_t pos, bool in_block, bool final) const override {
    for (const Format* f : kFormats) {
      if (f->find_start(text, pos, true) != pos) continue;
      Read r = f->read(text, pos, in_block, final);
      if (r.status == Read::Status::kMention) continue;
      if (!r.format) r.format = f;
      return r;
    }
    return {Read::Status::kMention};
  }

  std::string render(const std::vector<ToolResponse>& responses) const override {
    return hermes_format().render(responses);
  }
};

}  // namespace

const std::vector<const Format*>& formats() {
  return kFormats;
}

const Format* find_format(std::string_view name) {
  static const Auto automatic;
  if (name == "auto") return &automatic;
  if (name == "deepseek_v3.1") return &deepseek_v31_format();
  for (const Format* f : kFormats) {
    if (f->name() == name) return f;
  }
  return nullptr;
}

std::string format_names() {
  std::string out;
  for (const Format* f : kFormats) out += std::string(f->name()) + ", ";
  return out + "auto";
}

}  // namespace toolbridge::parse
