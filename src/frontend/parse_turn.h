#pragma once
// One model turn being parsed for /v1/parse (whole, or chunk by chunk on a stream): the
// request's options, the extractor, the calls resolved against the catalog (each started at
// once when executing), and the JSON answers.
#include <boost/json/value.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "frontend/call_run.h"
#include "gateway/request_span.h"
#include "parse/extractor.h"
#include "parse/tool_index.h"
#include "surfaces/surface_stage.h"

namespace toolbridge::frontend {

struct ParseOptions {
  std::string text;
  bool has_text = false;
  const parse::Format* format = nullptr;  // "auto" when not named
  std::string trajectory;
  std::string tenant;
  std::string surface;  // the tool surface the output names tools by; empty: none
  bool execute = false;
  bool render = false;
  bool fail_fast = false;
  bool sequential = false;
  std::chrono::milliseconds timeout{0};
  // The turn's idempotency id ("id"): its N-th call runs with the key "ID/N", so the same turn
  // sent again (a lost connection) gets its calls' first results. Empty: no keys.
  std::string id;
};

// Reads a /v1/parse (or stream-opening) body; the refusal says what is wrong with it.
BatchRefusal read_parse_options(const boost::json::value& body, ParseOptions& out);
// Reads {"turns": [{...}, ...], ...}: the keys beside `turns` are every turn's defaults, each
// turn's own keys override them; every turn needs text. At most `max_turns` (more: 413).
BatchRefusal read_parse_turns(const boost::json::value& body, std::vector<ParseOptions>& out,
                              std::size_t max_turns);
// Reads a stream append {"text": CHUNK, "done": BOOL}.
BatchRefusal read_append(const boost::json::value& body, std::string& text, bool& done);

class Turn {
 public:
  Turn(ParseOptions options, CallScope scope)
      : options_(std::move(options)), scope_(std::move(scope)), extractor_(*options_.format) {}

  const ParseOptions& options() const { return options_; }
  const CallScope& scope() const { return scope_; }
  parse::Extractor& extractor() { return extractor_; }
  std::shared_ptr<CallRun>& run() { return run_; }
  // The request's span when span export is on (exported when the turn's answer is sent).
  std::optional<gateway::RequestSpan>& request_span() { return request_span_; }
  std::size_t calls() const { return calls_.size(); }
  std::size_t unparsed() const { return unparsed_.size(); }

  // Resolves the calls the extractor settled since the last time; with `start`, runs each at
  // once on run() (which must exist), else only records it.
  // Within a surface (scope().surface) a call names its tool as the surface shows it: it is
  // found (or repaired, with `repair_modes`) among the surface's names only.
  void settle(const parse::ToolIndex& index, std::uint64_t& next_id, bool start);
  void set_repair_modes(surfaces::RepairModeOf modes) { repair_modes_ = std::move(modes); }
  // Puts every call recorded (not started) on run() and starts them (sequential, fail_fast).
  void start_all();

  // {"calls": [...], "unparsed": [...]} of the entries from `calls_from` / `unparsed_from` on.
  std::string progress_json(std::size_t calls_from, std::size_t unparsed_from) const;
  // The whole answer: content, reasoning, calls (with results when executed), unparsed,
  // messages and the rendered answers.
  std::string final_json(double total_ms);

 private:
  // Gives the turn's `index`-th call its idempotency key, when the turn has an id.
  void keyed(call::Call& call, std::size_t index) const;
  // index.resolve(raw, call), within the turn's surface if it has one.
  base::Status resolve(const parse::ToolIndex& index, const parse::RawCall& raw,
                       parse::ParsedCall& call) const;
  void append_call(std::string& out, std::size_t i, bool with_result) const;
  void append_unparsed(std::string& out, std::size_t from) const;

  ParseOptions options_;
  CallScope scope_;
  std::optional<gateway::RequestSpan> request_span_;
  parse::Extractor extractor_;
  std::shared_ptr<CallRun> run_;
  std::vector<parse::ParsedCall> calls_;
  std::vector<parse::Unparsed> unparsed_;
  std::vector<BatchEntry> entries_;  // with execute, filled by final_json
  std::size_t raw_calls_ = 0;
  std::size_t raw_unparsed_ = 0;
  surfaces::RepairModeOf repair_modes_;
};

// The text of a tool result (its text blocks), or the error's message, for the conversation.
std::string result_text(const call::Result& result, bool& is_error);

}  // namespace toolbridge::frontend
