// libFuzzer target: the JSON-RPC envelope scanner and the helpers that splice raw spans. Every
// span must lie inside the text, and a spliced id must come back where it was put.
#include <boost/json/parse.hpp>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "json/envelope.h"

namespace {

namespace json = toolbridge::json;

void require(bool ok) {
  if (!ok) std::abort();
}

void check_span(std::string_view text, json::Span span) {
  require(span.offset <= text.size() && span.length <= text.size() - span.offset);
}

// Off by default: the scanner is known to accept some text Boost.JSON rejects (issue 10, item 2);
// TOOLBRIDGE_FUZZ_DIFFERENTIAL=1 makes each such input a finding.
bool differential() {
  static const bool on = [] {
    const char* v = std::getenv("TOOLBRIDGE_FUZZ_DIFFERENTIAL");
    return v && std::string_view(v) == "1";
  }();
  return on;
}

void check_envelope(std::string_view text) {
  const json::Envelope env = json::parse_envelope(text);
  for (json::Span span : {env.id, env.params, env.result, env.error}) check_span(text, span);
  if (env.kind == json::Kind::kInvalid) {
    require(!env.problem.empty());
    return;
  }
  if (differential()) {
    boost::system::error_code ec;
    (void)boost::json::parse(text, ec);
    require(!ec);
  }
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
    std::string problem;
    if (const auto parts = json::split_batch(text, problem)) {
      for (const auto& part : *parts) check_envelope(part);
    } else {
      require(!problem.empty());
    }
  }
  (void)json::quote(text);
  return 0;
}
