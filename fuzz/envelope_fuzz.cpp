// libFuzzer target: the JSON-RPC envelope scanner and the helpers that splice raw spans. Every
// span must lie inside the text, and a spliced id must come back where it was put.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "json/envelope.h"
#include "json/parse.h"
#include "json/utf8.h"

namespace {

namespace json = toolbridge::json;

void require(bool ok) {
  if (!ok) std::abort();
}

void check_span(std::string_view text, json::Span span) {
  require(span.offset <= text.size() && span.length <= text.size() - span.offset);
}

// The scanner's contract with the parser (issue 10, item 2): a message it accepts is JSON that
// the gateway's parser accepts once repaired (invalid UTF-8 and lone surrogates replaced), which
// is what every caller does when `needs_repair` is set; text it calls "not JSON" the parser
// rejects too.
void check_against_parser(std::string_view text, const json::Envelope& env) {
  const bool repair = env.needs_repair || !json::is_valid_utf8(text);
  const std::string repaired = repair ? json::repair_strings(text) : std::string();
  const std::string_view checked = repair ? std::string_view(repaired) : text;
  boost::system::error_code ec;
  (void)json::parse(checked, ec);
  if (env.kind != json::Kind::kInvalid) {
    require(!ec);
    require(env.needs_repair || json::is_valid_utf8(text));
    if (repair) require(!json::parse_envelope(repaired).needs_repair);
  } else if (env.problem.starts_with("not JSON") && !env.too_deep) {
    require(ec.failed());
  }
}

void check_envelope(std::string_view text) {
  const json::Envelope env = json::parse_envelope(text);
  for (json::Span span : {env.id, env.params, env.result, env.error}) check_span(text, span);
  if (env.kind == json::Kind::kInvalid) require(!env.problem.empty());
  check_against_parser(text, env);
  if (env.kind == json::Kind::kInvalid) return;
  if (!env.id.empty()) {
    const std::string moved = json::with_id(text, env.id, "42");
    require(json::parse_envelope(moved).id.in(moved) == "42");
  }
}

void check_members(std::string_view text) {
  const auto members = json::object_members(text);
  if (!members) return;
  for (const auto& m : *members) check_span(text, m.value);
  const std::string rewritten = json::rewrite_object(text, *members, {{"id", "7"}}, {"_meta"});
  const auto again = json::object_members(rewritten);
  require(again.has_value());
  bool has_id = false;
  for (const auto& m : *again) {
    require(m.name != "_meta");
    if (m.name == "id") has_id = m.value.in(rewritten) == "7";
  }
  require(has_id);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  check_envelope(text);
  check_members(text);
  if (json::is_batch(text)) {
    if (const auto parts = json::split_batch(text)) {
      for (const auto& part : *parts) check_envelope(part);
    } else {
      require(!parts.error().empty());
    }
  }
  (void)json::quote(text);
  return 0;
}
