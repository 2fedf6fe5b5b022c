// Reading a POST /v1/batch body into a BatchRequest: from a Boost.JSON DOM (any body, and every
// refusal's message), and from the text of a well-formed JSON body without a DOM (the common
// case; fuzz/batch_body_fuzz.cpp checks that the two read such a body alike).
#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <optional>
#include <utility>

#include "call/trajectory_name.h"
#include "frontend/batch.h"
#include "json/envelope.h"
#include "json/utf8.h"

namespace toolbridge::frontend {

namespace bj = boost::json;

namespace {

// A timeout_ms past this is refused rather than overflowing a deadline (the config caps
// durations at 30 days too).
constexpr double kMaxTimeoutMs = 30.0 * 24 * 3600 * 1000;

bool valid_tenant(std::string_view t) {
  return !t.empty() && t.size() <= 128 && std::all_of(t.begin(), t.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == ':' || c == '-';
  });
}

// A timeout_ms value: a positive number of milliseconds; empty string if valid.
std::string read_timeout(const bj::value& v, std::chrono::milliseconds& out) {
  if (!v.is_number()) return "timeout_ms must be a number of milliseconds";
  const double ms = v.to_number<double>();
  if (!(ms > 0) || ms > kMaxTimeoutMs) {
    return "timeout_ms must be more than 0 and at most 2592000000 (30 days)";
  }
  out = std::chrono::milliseconds(std::max<long long>(1, static_cast<long long>(ms)));
  return {};
}

BatchCallSpec read_call(const bj::value& v, std::size_t index) {
  BatchCallSpec c;
  const std::string where = fmt::format("calls[{}]", index);
  if (!v.is_object()) {
    c.error = where + " must be an object {\"tool\": NAME, \"arguments\": {...}}";
    return c;
  }
  const auto& o = v.as_object();
  for (const auto& [key, value] : o) {
    if (key == "tool") {
      if (!value.is_string() || value.as_string().empty()) {
        c.error = where + ".tool must be a non-empty string (the tool's name, server__tool)";
        return c;
      }
      if (value.as_string().size() > kMaxBatchToolName) {
        c.error = fmt::format("{}.tool is longer than {} bytes", where, kMaxBatchToolName);
        return c;
      }
      c.tool = std::string(value.as_string());
    } else if (key == "arguments") {
      if (value.is_null()) continue;
      if (!value.is_object()) {
        c.error = where + ".arguments must be an object";
        return c;
      }
      c.arguments = bj::serialize(value);
    } else if (key == "timeout_ms") {
      if (std::string why = read_timeout(value, c.timeout); !why.empty()) {
        c.error = where + "." + why;
        return c;
      }
    } else {
      c.error = fmt::format("{}: unknown key '{}' (a call has tool, arguments, timeout_ms)", where,
                            std::string_view(key));
      return c;
    }
  }
  if (c.tool.empty()) c.error = where + ".tool is missing (the tool's name, server__tool)";
  return c;
}

// ---- The JSON body read from its text (read_plain_batch_request) ----

// The content of the JSON string token `raw` if it needs no unescaping and is ASCII (so Boost.JSON
// would read the same bytes); nullopt otherwise.
std::optional<std::string_view> plain_string(std::string_view raw) {
  if (raw.size() < 2 || raw.front() != '"') return std::nullopt;
  const std::string_view content = raw.substr(1, raw.size() - 2);
  const bool plain = std::all_of(content.begin(), content.end(), [](char c) {
    return c != '\\' && static_cast<unsigned char>(c) < 0x80;
  });
  if (!plain) return std::nullopt;
  return content;
}

// A timeout_ms written as a whole number in range; other forms (fractions, exponents) and
// refused values are left to the DOM path.
std::optional<std::chrono::milliseconds> plain_timeout(std::string_view raw) {
  if (raw.empty() || raw.size() > 10 || raw.front() == '0') return std::nullopt;
  long long ms = 0;
  for (const char c : raw) {
    if (c < '0' || c > '9') return std::nullopt;
    ms = ms * 10 + (c - '0');
  }
  if (ms > static_cast<long long>(kMaxTimeoutMs)) return std::nullopt;
  return std::chrono::milliseconds(ms);
}

// A name given twice: Boost.JSON keeps the last value at the first one's place, which the DOM path
// reproduces. Called only for a few members.
bool has_duplicates(const std::vector<json::Member>& members) {
  for (std::size_t i = 0; i < members.size(); ++i) {
    for (std::size_t j = i + 1; j < members.size(); ++j) {
      if (members[i].name == members[j].name) return true;
    }
  }
  return false;
}

// The array `text` (JSON the scanner has validated, nested in `outer` containers) walked again for
// what the scanner lets through and Boost.JSON refuses: a string with invalid UTF-8 or a UTF-16
// surrogate escape without its other half, nesting past json::kMaxDepth. Its elements' spans go to
// `elements`. False if it holds any of those.
bool plain_array(std::string_view text, std::size_t outer, std::vector<json::Span>& elements) {
  const std::size_t n = text.size();
  const auto surrogate = [&](std::size_t at, unsigned low, unsigned high) {
    if (at + 6 > n || text[at] != '\\' || text[at + 1] != 'u') return false;
    const auto unit = json::hex4(text.substr(at + 2, 4));
    return unit && *unit >= low && *unit <= high;
  };
  std::size_t depth = 0;
  std::size_t start = 0;     // of the element being walked (0, the '[': none yet)
  std::size_t last_end = 0;  // past its last byte that is not whitespace
  for (std::size_t i = 0; i < n;) {
    const char c = text[i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      ++i;
      continue;
    }
    if (depth == 1 && (c == ',' || c == ']')) {
      if (start != 0) elements.push_back(json::Span{start, last_end - start});
      start = 0;
    } else if (depth == 1 && start == 0) {
      start = i;
    }
    if (c == '"') {
      for (++i; i < n && text[i] != '"';) {
        const auto b = static_cast<unsigned char>(text[i]);
        if (b >= 0x80) {
          const std::size_t length = json::utf8_sequence_length(text.substr(i));
          if (length == 0) return false;
          i += length;
        } else if (b != '\\') {
          ++i;
        } else if (i + 1 < n && text[i + 1] == 'u') {
          if (surrogate(i, 0xDC00, 0xDFFF)) return false;  // a low half alone
          if (!surrogate(i, 0xD800, 0xDBFF)) {
            i += 6;
          } else if (surrogate(i + 6, 0xDC00, 0xDFFF)) {
            i += 12;
          } else {
            return false;
          }
        } else {
          i += 2;
        }
      }
      if (i >= n) return false;
      ++i;  // the closing quote
    } else {
      if (c == '[' || c == '{') {
        if (outer + ++depth > json::kMaxDepth) return false;
      } else if (c == ']' || c == '}') {
        if (depth-- == 0) return false;
      }
      ++i;
    }
    last_end = i;
  }
  return depth == 0;
}

// Where the value at `i` of validated JSON ends: past its closing quote or bracket, or its last
// character. Never past `text`.
std::size_t value_end(std::string_view text, std::size_t i) {
  const std::size_t n = text.size();
  std::size_t depth = 0;
  while (i < n) {
    const char c = text[i];
    if (c == '"') {
      for (++i; i < n && text[i] != '"'; ++i) {
        if (text[i] == '\\') ++i;
      }
      ++i;
    } else if (c == '{' || c == '[') {
      ++depth;
      ++i;
    } else if (c == '}' || c == ']') {
      if (depth == 0) return i;  // the end of what encloses a literal or a number
      --depth;
      ++i;
    } else if (depth == 0 && (c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r')) {
      return i;
    } else {
      ++i;
    }
    if (depth == 0 && (c == '"' || c == '}' || c == ']')) return std::min(i, n);
  }
  return n;
}

std::size_t skip_ws(std::string_view text, std::size_t i) {
  while (i < text.size() &&
         (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r')) {
    ++i;
  }
  return i;
}

// One call of a well-formed batch, `text` validated by the body's scan and by plain_array (so
// walked here without checking it again); false for anything an error entry or the DOM path must
// answer, and for member names written with escapes.
bool read_plain_call(std::string_view text, BatchCallSpec& out) {
  if (text.size() < 2 || text.front() != '{') return false;
  bool tool_seen = false, arguments_seen = false, timeout_seen = false;
  std::size_t i = skip_ws(text, 1);
  if (i < text.size() && text[i] == '}') return false;  // no tool
  while (i < text.size() && text[i] == '"') {
    const std::size_t name_end = value_end(text, i);
    const std::string_view name = text.substr(i + 1, name_end - i - 2);
    i = skip_ws(text, name_end);
    if (i >= text.size() || text[i] != ':') return false;
    i = skip_ws(text, i + 1);
    const std::size_t value_start = i;
    i = value_end(text, i);
    const std::string_view raw = text.substr(value_start, i - value_start);
    if (raw.empty()) return false;
    if (name == "tool" && !std::exchange(tool_seen, true)) {
      const auto tool = plain_string(raw);
      if (!tool || tool->empty() || tool->size() > kMaxBatchToolName) return false;
      out.tool = *tool;
    } else if (name == "arguments" && !std::exchange(arguments_seen, true)) {
      if (raw.front() == '{') {
        out.arguments = raw;
      } else if (raw != "null") {
        return false;
      }
    } else if (name == "timeout_ms" && !std::exchange(timeout_seen, true)) {
      const auto timeout = plain_timeout(raw);
      if (!timeout) return false;
      out.timeout = *timeout;
    } else {
      return false;  // another member, one given twice, or a name with an escape
    }
    i = skip_ws(text, i);
    if (i < text.size() && text[i] == ',') {
      i = skip_ws(text, i + 1);
    } else if (i + 1 == text.size() && text[i] == '}') {
      return tool_seen;
    } else {
      return false;
    }
  }
  return false;
}

BatchRefusal bad(std::string message) {
  return BatchRefusal{400, "invalid_request", std::move(message)};
}

}  // namespace

BatchRefusal read_batch_request(const bj::value& body, BatchRequest& out, std::size_t max_calls) {
  if (!body.is_object()) return bad("the body must be an object {\"calls\": [...]}");
  const bj::array* calls = nullptr;
  for (const auto& [key, value] : body.as_object()) {
    if (key == "calls") {
      if (!value.is_array()) return bad("calls must be an array of {\"tool\", \"arguments\"}");
      calls = &value.as_array();
    } else if (key == "trajectory") {
      if (!value.is_string()) return bad("trajectory must be a string");
      if (std::string why = gateway::trajectory_name_error(value.as_string()); !why.empty()) {
        return bad("trajectory: " + why);
      }
      out.trajectory = std::string(value.as_string());
    } else if (key == "tenant") {
      if (!value.is_string() || !valid_tenant(value.as_string())) {
        return bad("tenant must be 1-128 characters of [A-Za-z0-9._:-]");
      }
      out.tenant = std::string(value.as_string());
    } else if (key == "mode") {
      const bool known =
          value.is_string() && (value.as_string() == "all" || value.as_string() == "fail_fast");
      if (!known) return bad("mode must be \"all\" (the default) or \"fail_fast\"");
      out.fail_fast = value.as_string() == "fail_fast";
    } else if (key == "sequential") {
      if (!value.is_bool()) return bad("sequential must be true or false");
      out.sequential = value.as_bool();
    } else if (key == "timeout_ms") {
      if (std::string why = read_timeout(value, out.timeout); !why.empty()) return bad(why);
    } else {
      return bad(fmt::format(
          "unknown key '{}' (a batch has calls, trajectory, tenant, mode, sequential, timeout_ms)",
          std::string_view(key)));
    }
  }
  if (!calls) return bad("calls is missing: {\"calls\": [{\"tool\": NAME, \"arguments\": {...}}]}");
  if (calls->empty())
    return bad(fmt::format("calls is empty: a batch carries 1 to {} calls", max_calls));
  if (calls->size() > max_calls) {
    return BatchRefusal{
        413, "too_many_calls",
        fmt::format("a batch carries at most {} calls (gateway.batch_max_calls); this one has "
                    "{}: split it",
                    max_calls, calls->size())};
  }
  out.calls.reserve(calls->size());
  for (std::size_t i = 0; i < calls->size(); ++i) out.calls.push_back(read_call((*calls)[i], i));
  return {};
}

bool read_plain_batch_request(std::string_view body, BatchRequest& out, std::size_t max_calls) {
  const auto members = json::object_members(body);
  if (!members || members->size() > 6 || has_duplicates(*members)) return false;
  std::string_view calls;
  for (const json::Member& m : *members) {
    const std::string_view raw = m.value.in(body);
    if (m.name == "calls") {
      calls = raw;
    } else if (m.name == "trajectory") {
      const auto trajectory = plain_string(raw);
      if (!trajectory || !gateway::trajectory_name_error(*trajectory).empty()) return false;
      out.trajectory = *trajectory;
    } else if (m.name == "tenant") {
      const auto tenant = plain_string(raw);
      if (!tenant || !valid_tenant(*tenant)) return false;
      out.tenant = *tenant;
    } else if (m.name == "mode") {
      if (raw != R"("all")" && raw != R"("fail_fast")") return false;
      out.fail_fast = raw == R"("fail_fast")";
    } else if (m.name == "sequential") {
      if (raw != "true" && raw != "false") return false;
      out.sequential = raw == "true";
    } else if (m.name == "timeout_ms") {
      const auto timeout = plain_timeout(raw);
      if (!timeout) return false;
      out.timeout = *timeout;
    } else {
      return false;
    }
  }
  if (calls.empty() || calls.front() != '[') return false;
  std::vector<json::Span> elements;
  elements.reserve(std::min<std::size_t>(max_calls, 64));
  // The body object encloses the array.
  if (!plain_array(calls, 1, elements)) return false;
  if (elements.empty() || elements.size() > max_calls) return false;
  out.calls.resize(elements.size());
  for (std::size_t i = 0; i < elements.size(); ++i) {
    if (!read_plain_call(elements[i].in(calls), out.calls[i])) return false;
  }
  return true;
}

}  // namespace toolbridge::frontend
