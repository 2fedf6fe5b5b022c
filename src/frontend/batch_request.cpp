// Reading a POST /v1/batch body into a BatchRequest: from a Boost.JSON DOM (any body, and every
// refusal's message), and from the text of a well-formed JSON body without a DOM (the common
// case; fuzz/batch_body_fuzz.cpp checks that the two read such a body alike).
#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <optional>
#include <utility>

#include "call/trajectory_name.h"
#include "config/surfaces.h"
#include "frontend/batch.h"
#include "idempotency/key_meta.h"
#include "json/envelope.h"
#include "json/scan.h"

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
    } else if (key == "id") {
      if (base::Status valid = idempotency::check_key(value, where + ".id"); !valid) {
        c.error = valid.error();
        return c;
      }
      c.id = std::string(value.as_string());
    } else {
      c.error = fmt::format("{}: unknown key '{}' (a call has tool, arguments, timeout_ms, id)",
                            where, std::string_view(key));
      return c;
    }
  }
  if (c.tool.empty()) c.error = where + ".tool is missing (the tool's name, server__tool)";
  return c;
}

// ---- The JSON body read from its text (read_plain_batch_request) ----

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

// One pass over a JSON body that reads the batch out of it while checking it as Boost.JSON would
// (grammar, UTF-8, UTF-16 surrogate pairs, json::kMaxDepth, exponent digits). Anything it would
// not read exactly as the DOM path does (a malformed body, an entry in error, a name or tool with
// escapes, a refusal) makes it decline: false, and that path answers.
class PlainReader {
 public:
  PlainReader(std::string_view text, std::size_t max_calls) : t_(text), max_calls_(max_calls) {}

  bool body(BatchRequest& out) {
    ws();
    if (!eat('{')) return false;
    unsigned seen = 0;  // a bit per member name: one given twice is the DOM path's
    for (;;) {
      ws();
      const int which = body_member();
      ws();
      if (which < 0 || !eat(':')) return false;
      ws();
      if ((seen & (1u << which)) != 0) return false;
      seen |= 1u << which;
      if (!member(which, out)) return false;
      ws();
      if (eat('}')) break;
      if (!eat(',')) return false;
    }
    ws();
    return p_ == t_.size() && (seen & 1u) != 0;  // calls given
  }

 private:
  static int member_index(std::string_view name) {
    constexpr std::string_view kNames[] = {"calls", "trajectory", "tenant",
                                           "mode",  "sequential", "timeout_ms"};
    for (int i = 0; i < 6; ++i) {
      if (name == kNames[i]) return i;
    }
    return -1;
  }

  // Which of them the name at p_ is, -1 for another; names with escapes are read too (the DOM
  // path reads them by their value).
  int body_member() {
    const std::size_t start = p_;
    if (const auto name = plain_string()) return member_index(*name);
    p_ = start;
    if (peek() != '"' || !skip_value(0)) return -1;
    boost::system::error_code ec;
    const bj::value name = bj::parse(t_.substr(start, p_ - start), ec);
    return !ec && name.is_string() ? member_index(name.get_string()) : -1;
  }

  bool member(int which, BatchRequest& out) {
    switch (which) {
      case 0:
        return calls(out.calls);
      case 1: {
        const auto trajectory = plain_string();
        if (!trajectory || !call::check_trajectory_name(*trajectory)) return false;
        out.trajectory = *trajectory;
        return true;
      }
      case 2: {
        const auto tenant = plain_string();
        if (!tenant || !valid_tenant(*tenant)) return false;
        out.tenant = *tenant;
        return true;
      }
      case 3: {
        const auto mode = plain_string();
        if (!mode || (*mode != "all" && *mode != "fail_fast" && *mode != "tasks")) return false;
        out.fail_fast = *mode == "fail_fast";
        out.tasks = *mode == "tasks";
        return true;
      }
      case 4:
        out.sequential = peek() == 't';
        return literal(out.sequential ? "true" : "false");
      default:
        return timeout(out.timeout);
    }
  }

  // The calls array (in the body object): each element must be a call object.
  bool calls(std::vector<BatchCallSpec>& out) {
    if (!eat('[')) return false;
    out.reserve(std::min<std::size_t>(max_calls_, 16));
    for (;;) {
      ws();
      if (out.size() == max_calls_) return false;
      if (!call(out.emplace_back())) return false;
      ws();
      if (eat(']')) return true;
      if (!eat(',')) return false;
    }
  }

  bool call(BatchCallSpec& out) {
    if (!eat('{')) return false;
    bool tool_seen = false, arguments_seen = false, timeout_seen = false;
    for (;;) {
      ws();
      const auto name = plain_string();
      ws();
      if (!name || !eat(':')) return false;
      ws();
      if (*name == "tool" && !std::exchange(tool_seen, true)) {
        const auto tool = plain_string();
        if (!tool || tool->empty() || tool->size() > kMaxBatchToolName) return false;
        out.tool = *tool;
      } else if (*name == "arguments" && !std::exchange(arguments_seen, true)) {
        const std::size_t start = p_;
        if (peek() == '{') {
          if (!skip_value(3)) return false;  // in the body, its calls and its call
          out.arguments = t_.substr(start, p_ - start);
        } else if (!literal("null")) {
          return false;
        }
      } else if (*name == "timeout_ms" && !std::exchange(timeout_seen, true)) {
        if (!timeout(out.timeout)) return false;
      } else {
        return false;  // another member, or one given twice
      }
      ws();
      if (eat('}')) return tool_seen;
      if (!eat(',')) return false;
    }
  }

  bool timeout(std::chrono::milliseconds& out) {
    const std::size_t start = p_;
    if (!skip_value(0)) return false;  // a number encloses nothing
    const auto ms = plain_timeout(t_.substr(start, p_ - start));
    if (!ms) return false;
    out = *ms;
    return true;
  }

  // The content of the string token at p_ if it is ASCII that needs no unescaping (Boost.JSON
  // reads the same bytes); nullopt otherwise.
  std::optional<std::string_view> plain_string() {
    if (!eat('"')) return std::nullopt;
    const std::size_t start = p_;
    for (; p_ < t_.size(); ++p_) {
      const auto b = static_cast<unsigned char>(t_[p_]);
      if (b == '"') return t_.substr(start, p_++ - start);
      if (b == '\\' || b < 0x20 || b >= 0x80) return std::nullopt;
    }
    return std::nullopt;
  }

  // The value at p_, which `depth` arrays and objects enclose, stepped over if json::parse
  // would read it.
  bool skip_value(std::size_t depth) {
    const json::ValueScan scan = json::scan_value(t_, p_, depth);
    p_ = scan.end;
    return scan.parses();
  }

  bool literal(std::string_view word) {
    if (t_.substr(p_, word.size()) != word) return false;
    p_ += word.size();
    return true;
  }

  char peek() const { return p_ < t_.size() ? t_[p_] : '\0'; }
  bool eat(char c) {
    if (peek() != c) return false;
    ++p_;
    return true;
  }
  void ws() {
    while (p_ < t_.size() &&
           (t_[p_] == ' ' || t_[p_] == '\t' || t_[p_] == '\n' || t_[p_] == '\r')) {
      ++p_;
    }
  }

  std::string_view t_;
  std::size_t p_ = 0;
  const std::size_t max_calls_;
};

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
      if (base::Status named = call::check_trajectory_name(value.as_string()); !named) {
        return bad("trajectory: " + named.error());
      }
      out.trajectory = std::string(value.as_string());
    } else if (key == "surface") {
      if (!value.is_string()) return bad("surface must be a string");
      if (base::Status named = config::check_surface_name(value.as_string()); !named) {
        return bad("surface: " + named.error());
      }
      out.surface = std::string(value.as_string());
    } else if (key == "tenant") {
      if (!value.is_string() || !valid_tenant(value.as_string())) {
        return bad("tenant must be 1-128 characters of [A-Za-z0-9._:-]");
      }
      out.tenant = std::string(value.as_string());
    } else if (key == "mode") {
      const bool known =
          value.is_string() && (value.as_string() == "all" || value.as_string() == "fail_fast" ||
                                value.as_string() == "tasks");
      if (!known) return bad("mode must be \"all\" (the default), \"fail_fast\" or \"tasks\"");
      out.fail_fast = value.as_string() == "fail_fast";
      out.tasks = value.as_string() == "tasks";
    } else if (key == "sequential") {
      if (!value.is_bool()) return bad("sequential must be true or false");
      out.sequential = value.as_bool();
    } else if (key == "timeout_ms") {
      if (std::string why = read_timeout(value, out.timeout); !why.empty()) return bad(why);
    } else {
      return bad(fmt::format(
          "unknown key '{}' (a batch has calls, trajectory, tenant, surface, mode, sequential, "
          "timeout_ms)",
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
  return PlainReader(body, max_calls).body(out);
}

}  // namespace toolbridge::frontend
