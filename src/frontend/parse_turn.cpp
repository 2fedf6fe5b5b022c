#include "frontend/parse_turn.h"

#include <fmt/format.h>

#include <boost/json.hpp>

#include "call/trajectory_name.h"
#include "config/surfaces.h"
#include "idempotency/key_meta.h"
#include "json/envelope.h"
#include "json/parse.h"

namespace toolbridge::frontend {

namespace bj = boost::json;
using call::Fault;
using call::Result;

namespace {

BatchRefusal bad(std::string message) {
  return BatchRefusal{400, "invalid_request", std::move(message)};
}

constexpr double kMaxTimeoutMs = 30.0 * 24 * 3600 * 1000;

BatchRefusal read_flag(const bj::value& v, std::string_view key, bool& out) {
  if (!v.is_bool()) return bad(std::string(key) + " must be true or false");
  out = v.as_bool();
  return {};
}

// A turn's id leaves room for "/N" in its calls' idempotency keys.
constexpr std::size_t kMaxTurnIdBytes = idempotency::kMaxKeyBytes - 16;

BatchRefusal read_option(std::string_view key, const bj::value& v, ParseOptions& out) {
  if (key == "text") {
    if (!v.is_string()) return bad("text must be a string (the model's output)");
    out.text = std::string(v.as_string());
    out.has_text = true;
  } else if (key == "format") {
    if (v.is_string()) out.format = parse::find_format(v.as_string());
    if (!v.is_string() || !out.format) {
      return bad("format must be one of " + parse::format_names());
    }
  } else if (key == "trajectory") {
    if (!v.is_string()) return bad("trajectory must be a string");
    if (base::Status named = call::check_trajectory_name(v.as_string()); !named) {
      return bad("trajectory: " + named.error());
    }
    out.trajectory = std::string(v.as_string());
  } else if (key == "surface") {
    if (!v.is_string()) return bad("surface must be a string");
    if (base::Status named = config::check_surface_name(v.as_string()); !named) {
      return bad("surface: " + named.error());
    }
    out.surface = std::string(v.as_string());
  } else if (key == "tenant") {
    if (!v.is_string() || v.as_string().empty() || v.as_string().size() > 128) {
      return bad("tenant must be 1-128 characters of [A-Za-z0-9._:-]");
    }
    for (char c : v.as_string()) {
      const bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' ||
                      c == ':' || c == '-';
      if (!ok) return bad("tenant must be 1-128 characters of [A-Za-z0-9._:-]");
    }
    out.tenant = std::string(v.as_string());
  } else if (key == "execute") {
    return read_flag(v, key, out.execute);
  } else if (key == "render") {
    return read_flag(v, key, out.render);
  } else if (key == "sequential") {
    return read_flag(v, key, out.sequential);
  } else if (key == "mode") {
    const bool known = v.is_string() && (v.as_string() == "all" || v.as_string() == "fail_fast");
    if (!known) return bad("mode must be \"all\" (the default) or \"fail_fast\"");
    out.fail_fast = v.as_string() == "fail_fast";
  } else if (key == "id") {
    if (base::Status valid = idempotency::check_key(v, "id"); !valid) return bad(valid.error());
    if (v.as_string().size() > kMaxTurnIdBytes) {
      return bad(fmt::format("id must be at most {} characters (its calls' keys add /N)",
                             kMaxTurnIdBytes));
    }
    out.id = std::string(v.as_string());
  } else if (key == "timeout_ms") {
    const double ms = v.is_number() ? v.to_number<double>() : 0;
    if (!(ms > 0) || ms > kMaxTimeoutMs) {
      return bad("timeout_ms must be a number of milliseconds, more than 0 and at most 30 days");
    }
    out.timeout = std::chrono::milliseconds(std::max<long long>(1, static_cast<long long>(ms)));
  } else {
    return bad(fmt::format(
        "unknown key '{}' (a parse request has text or turns, format, trajectory, tenant, "
        "surface, execute, render, mode, sequential, timeout_ms, id)",
        key));
  }
  return {};
}

void append_repairs(std::string& out, const std::vector<call::CallRepair>& repairs) {
  out += R"("repairs":[)";
  for (std::size_t i = 0; i < repairs.size(); ++i) {
    const auto& r = repairs[i];
    if (i) out += ',';
    out += R"({"kind":)" + json::quote(r.kind) + R"(,"path":)" + json::quote(r.path) +
           R"(,"from":)" + json::quote(r.from) + R"(,"to":)" + json::quote(r.to) + "}";
  }
  out += ']';
}

}  // namespace

BatchRefusal read_parse_options(const bj::value& body, ParseOptions& out) {
  if (!body.is_object()) return bad("the body must be an object {\"text\": ..., \"format\": ...}");
  out.format = parse::find_format("auto");
  for (const auto& [key, value] : body.as_object()) {
    if (BatchRefusal r = read_option(key, value, out); !r.empty()) return r;
  }
  return {};
}

BatchRefusal read_parse_turns(const bj::value& body, std::vector<ParseOptions>& out,
                              std::size_t max_turns) {
  const bj::object& o = body.as_object();
  const bj::value& turns = o.at("turns");
  if (!turns.is_array() || turns.as_array().empty()) {
    return bad("turns must be a non-empty array of turns {\"text\": MODEL_OUTPUT, ...}");
  }
  if (turns.as_array().size() > max_turns) {
    return {413, "too_many_turns",
            fmt::format("{} turns; a request holds at most {} (gateway.parse_max_turns)",
                        turns.as_array().size(), max_turns)};
  }
  ParseOptions defaults;
  defaults.format = parse::find_format("auto");
  for (const auto& [key, value] : o) {
    if (key == "turns") continue;
    if (key == "text") return bad("with turns, text goes in each turn");
    if (BatchRefusal r = read_option(key, value, defaults); !r.empty()) return r;
  }
  out.reserve(turns.as_array().size());
  for (const bj::value& t : turns.as_array()) {
    const std::string where = fmt::format("turns[{}]: ", out.size());
    if (!t.is_object()) return bad(where + "a turn must be an object {\"text\": MODEL_OUTPUT}");
    ParseOptions turn = defaults;
    for (const auto& [key, value] : t.as_object()) {
      if (key == "turns") return bad(where + "a turn cannot hold turns");
      if (BatchRefusal r = read_option(key, value, turn); !r.empty()) {
        r.message = where + r.message;
        return r;
      }
    }
    if (!turn.has_text) return bad(where + "text is missing");
    out.push_back(std::move(turn));
  }
  return {};
}

BatchRefusal read_append(const bj::value& body, std::string& text, bool& done) {
  if (!body.is_object())
    return bad("the body must be an object {\"text\": CHUNK, \"done\": false}");
  for (const auto& [key, value] : body.as_object()) {
    if (key == "text") {
      if (!value.is_string()) return bad("text must be a string (the next chunk of the output)");
      text = std::string(value.as_string());
    } else if (key == "done") {
      if (BatchRefusal r = read_flag(value, key, done); !r.empty()) return r;
    } else {
      return bad(
          fmt::format("unknown key '{}' (an append has text and done)", std::string_view(key)));
    }
  }
  return {};
}

void Turn::settle(const parse::ToolIndex& index, std::uint64_t& next_id, bool start) {
  const parse::Extraction& x = extractor_.result();
  for (; raw_unparsed_ < x.unparsed.size(); ++raw_unparsed_) {
    unparsed_.push_back(x.unparsed[raw_unparsed_]);
  }
  for (; raw_calls_ < x.calls.size(); ++raw_calls_) {
    const parse::RawCall& raw = x.calls[raw_calls_];
    parse::ParsedCall call;
    if (base::Status resolved = resolve(index, raw, call); !resolved) {
      unparsed_.push_back({raw.text, resolved.error()});
      continue;
    }
    call.id = fmt::format("call_{:x}", ++next_id);
    calls_.push_back(std::move(call));
    if (!start) continue;
    const parse::ParsedCall& c = calls_.back();
    std::optional<Result> preset;
    if (!c.resolved) preset = Result::failure(Fault::kInvalidParams, c.problem);
    auto pipeline_call =
        make_tool_call(calls_.size() - 1, c.name, c.arguments, scope_, options_.timeout);
    keyed(*pipeline_call, calls_.size() - 1);
    run_->add(std::move(pipeline_call), std::move(preset));
  }
}

base::Status Turn::resolve(const parse::ToolIndex& index, const parse::RawCall& raw,
                           parse::ParsedCall& call) const {
  const surfaces::View* view = scope_.surface.get();
  if (!view) return index.resolve(raw, call);
  const std::string written = raw.server.empty() ? raw.name : raw.server + " " + raw.name;
  const surfaces::Tool* tool = view->find(raw.name);
  if (!tool && !raw.server.empty()) {
    // use_mcp_tool names a server and its own tool name: a tool the surface shows unrenamed.
    for (const surfaces::Tool& t : view->tools()) {
      if (t.server == raw.server && t.original == raw.name && t.shown == t.exposed) tool = &t;
    }
  }
  std::optional<call::CallRepair> renamed;
  if (!tool) {
    tool = surfaces::repair_within(*view, raw.name, config::RepairMode::kSafe, repair_modes_);
    if (tool) renamed = call::CallRepair{"tool_name", "", raw.name, tool->shown};
  }
  if (!tool) {
    // Nothing outside the surface is reached, nor repaired to.
    call.name = raw.name;
    call.written = written;
    call.problem = surfaces::unknown_tool_message(*view, raw.name);
    return {};
  }
  parse::RawCall exact = raw;
  exact.name = tool->exposed;
  exact.server.clear();
  if (base::Status resolved = index.resolve(exact, call); !resolved) return resolved;
  // The call keeps the surface's name: the surface stage maps it back when it runs.
  call.name = tool->shown;
  call.written = written;
  if (renamed) call.repairs.insert(call.repairs.begin(), *renamed);
  return {};
}

void Turn::keyed(call::Call& call, std::size_t index) const {
  if (!options_.id.empty())
    call.slots.get<idempotency::Key>().value = fmt::format("{}/{}", options_.id, index);
}

void Turn::start_all() {
  const std::size_t n = calls_.size();
  run_->calls.resize(n);
  run_->results.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (!calls_[i].resolved) {
      run_->results[i] = Result::failure(Fault::kInvalidParams, calls_[i].problem);
      continue;
    }
    run_->calls[i] =
        make_tool_call(i, calls_[i].name, calls_[i].arguments, scope_, options_.timeout);
    keyed(*run_->calls[i], i);
  }
  run_->start();
}

void Turn::append_call(std::string& out, std::size_t i, bool with_result) const {
  const parse::ParsedCall& c = calls_[i];
  out += R"({"id":)" + json::quote(c.id) + R"(,"name":)" + json::quote(c.name) +
         R"(,"arguments":)" + c.arguments + R"(,"written":)" + json::quote(c.written) + ',';
  append_repairs(out, c.repairs);
  if (!c.resolved) out += R"(,"problem":)" + json::quote(c.problem);
  if (with_result && i < entries_.size()) {
    out += ',';
    append_outcome(out, entries_[i]);
  }
  out += '}';
}

void Turn::append_unparsed(std::string& out, std::size_t from) const {
  out += R"("unparsed":[)";
  for (std::size_t i = from; i < unparsed_.size(); ++i) {
    if (i > from) out += ',';
    out += R"({"text":)" + json::quote(unparsed_[i].text) + R"(,"reason":)" +
           json::quote(unparsed_[i].reason) + R"(,"fault":"agent"})";
  }
  out += ']';
}

std::string Turn::progress_json(std::size_t calls_from, std::size_t unparsed_from) const {
  std::string out = R"({"calls":[)";
  for (std::size_t i = calls_from; i < calls_.size(); ++i) {
    if (i > calls_from) out += ',';
    append_call(out, i, false);
  }
  out += "],";
  append_unparsed(out, unparsed_from);
  return out + "}";
}

std::string result_text(const Result& result, bool& is_error) {
  is_error = result.fault != Fault::kNone;
  if (result.response.empty()) return result.why;
  const json::Envelope env = json::parse_envelope(result.response);
  boost::system::error_code ec;
  if (env.result.empty()) {
    const bj::value error = json::parse(env.error.in(result.response), ec);
    const bj::value* message =
        error.is_object() ? error.as_object().if_contains("message") : nullptr;
    return message && message->is_string() ? std::string(message->as_string()) : result.why;
  }
  const bj::value v = json::parse(env.result.in(result.response), ec);
  const bj::value* content = v.is_object() ? v.as_object().if_contains("content") : nullptr;
  if (!content || !content->is_array()) return std::string(env.result.in(result.response));
  std::string text;
  for (const auto& block : content->as_array()) {
    const bj::value* t = block.is_object() ? block.as_object().if_contains("text") : nullptr;
    if (!t || !t->is_string()) continue;
    if (!text.empty()) text += '\n';
    text += t->as_string();
  }
  return text.empty() ? bj::serialize(*content) : text;
}

std::string Turn::final_json(double total_ms) {
  const parse::Extraction& x = extractor_.result();
  const bool executed = options_.execute && run_;
  if (executed) {
    entries_.clear();
    for (std::size_t i = 0; i < calls_.size(); ++i) {
      entries_.push_back(run_->entry(i, calls_[i].name, scope_.arrived));
    }
  }
  const parse::Format* format = x.detected ? x.detected : options_.format;
  if (format->name() == "auto") format = parse::find_format("hermes");
  std::string out = R"({"format":)" + json::quote(format->name());
  out += R"(,"content":)" + json::quote(x.content);
  out += R"(,"reasoning":)" + (x.has_reasoning ? json::quote(x.reasoning) : std::string("null"));
  out += R"(,"calls":[)";
  for (std::size_t i = 0; i < calls_.size(); ++i) {
    if (i) out += ',';
    append_call(out, i, executed);
  }
  out += "],";
  append_unparsed(out, 0);
  if (executed) {
    std::vector<parse::ToolResponse> responses;
    out += R"(,"messages":[)";
    for (std::size_t i = 0; i < calls_.size(); ++i) {
      bool is_error = false;
      std::string text = result_text(entries_[i].result, is_error);
      if (i) out += ',';
      out += R"({"role":"tool","tool_call_id":)" + json::quote(calls_[i].id) + R"(,"name":)" +
             json::quote(calls_[i].name) + R"(,"content":)" + json::quote(text) + "}";
      responses.push_back({calls_[i].id, calls_[i].name, std::move(text), is_error});
    }
    out += ']';
    if (options_.render) out += R"(,"rendered":)" + json::quote(format->render(responses));
  }
  out += fmt::format(R"(,"timing":{{"total_ms":{:.3f}}}}})", total_ms);
  return out;
}

}  // namespace toolbridge::frontend
