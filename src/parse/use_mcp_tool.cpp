// use_mcp_tool: MiroFlow's <use_mcp_tool><server_name>S</server_name><tool_name>T</tool_name>
// <arguments>{json}</arguments></use_mcp_tool> (grammar in format.h).
#include "parse/scan.h"

namespace toolbridge::parse {

namespace {

constexpr std::string_view kOpen = "<use_mcp_tool>";
constexpr std::string_view kClose = "</use_mcp_tool>";

// The text of <tag>…</tag> in `body`; false if the tag is absent, `closed` false if cut off.
bool element(std::string_view body, std::string_view tag, std::string& out, bool& closed) {
  const std::string open = "<" + std::string(tag) + ">";
  const std::string close = "</" + std::string(tag) + ">";
  const std::size_t b = body.find(open);
  if (b == npos) return false;
  const std::size_t v = b + open.size();
  const std::size_t e = body.find(close, v);
  closed = e != npos;
  out = trim(body.substr(v, (closed ? e : body.size()) - v));
  return true;
}

class UseMcpTool final : public Format {
 public:
  std::string_view name() const override { return "use_mcp_tool"; }

  std::size_t find_start(std::string_view text, std::size_t from, bool) const override {
    return text.find(kOpen, from);
  }

  Read read(std::string_view text, std::size_t pos, bool, bool final) const override {
    const std::size_t q = skip_ws(text, pos + kOpen.size());
    const bool cut = q == text.size() || cut_marker(text, q, "<server_name>") ||
                     cut_marker(text, q, "<tool_name>");
    if (cut && !final) return {Read::Status::kNeedMore};
    if (!starts_at(text, q, "<server_name>") && !starts_at(text, q, "<tool_name>")) {
      if (q < text.size()) return {Read::Status::kMention};
    }
    const std::size_t close = text.find(kClose, q);
    if (close == npos && !final) return {Read::Status::kNeedMore};
    Read r;
    r.end = close == npos ? text.size() : close + kClose.size();
    const std::string_view body = text.substr(q, (close == npos ? text.size() : close) - q);
    RawCall call;
    call.text = std::string(text.substr(pos, r.end - pos));
    call.drop_nulls = true;
    bool server_closed = true, tool_closed = true, args_closed = true;
    const bool has_server = element(body, "server_name", call.server, server_closed);
    const bool has_tool = element(body, "tool_name", call.name, tool_closed);
    if (!element(body, "arguments", call.arguments, args_closed)) call.arguments = "{}";
    std::string why;
    if (!has_tool || call.name.empty()) why = "no <tool_name>";
    if (!has_server || call.server.empty()) why = "no <server_name>";
    if (!server_closed || !tool_closed || !args_closed) why = "cut off inside the call";
    if (why.empty()) {
      r.calls.push_back(std::move(call));
    } else {
      r.unparsed.push_back({call.text, std::move(why)});
    }
    return r;
  }

  std::string render(const std::vector<ToolResponse>& responses) const override {
    std::string out;
    for (const auto& r : responses) {
      if (!out.empty()) out += "\n\n";
      out += r.text;
    }
    return out;
  }
};

}  // namespace

const Format& use_mcp_tool_format() {
  static const UseMcpTool format;
  return format;
}

}  // namespace toolbridge::parse
