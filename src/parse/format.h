#pragma once
// Tool-call text formats: how a model writes its calls into its output, read incrementally.
// Every grammar lives in this one block (what each format's file implements; ws = whitespace):
//
//   hermes        "<tool_call>" ws JSON "</tool_call>", JSON = {"name": N, "arguments": A}
//                 ("parameters" for "arguments"); A an object or a string holding one (decoded
//                 again). A final block without "</tool_call>" is accepted when its JSON is
//                 whole. "<tool_call>" not followed by "{" is a mention, not a call.
//   qwen3_coder   "<tool_call>" ws "<function=" N ">" PARAM* "</function>" ws "</tool_call>",
//                 PARAM = "<parameter=" P ">" VALUE "</parameter>" (one newline trimmed at
//                 each end of VALUE). "<tool_call>" may be missing; a missing "</parameter>"
//                 ends at the next "<parameter=" or "</function>", a missing "</function>" at
//                 "</tool_call>" (or the end). VALUE is converted by the tool's schema type.
//   llama3_json   ["<|python_tag|>"] OBJ (";" OBJ)*, OBJ = {"name": N, "arguments"|
//                 "parameters": A}; without the tag OBJ must open the output (after any
//                 reasoning). An object without those keys is content.
//   mistral       "[TOOL_CALLS]" ws "[" OBJ ("," OBJ)* "]" (before v11), or
//                 "[TOOL_CALLS]" N ["[ARGS]"] A (v11+; each call has its own "[TOOL_CALLS]").
//   deepseek_v3   "<｜tool▁calls▁begin｜>" CALL* "<｜tool▁calls▁end｜>", CALL =
//                 "<｜tool▁call▁begin｜>" TYPE "<｜tool▁sep｜>" N "\n```json\n" A "\n```"
//                 "<｜tool▁call▁end｜>"; deepseek_v31: CALL = "<｜tool▁call▁begin｜>" N
//                 "<｜tool▁sep｜>" A "<｜tool▁call▁end｜>". Each reads both shapes.
//   use_mcp_tool  "<use_mcp_tool>" ws "<server_name>" S "</server_name>" ws "<tool_name>" T
//                 "</tool_name>" ws "<arguments>" A "</arguments>" ws "</use_mcp_tool>"; A is
//                 repaired like JSON from a model and its null values dropped (MiroFlow).
//
// Around every format (src/parse/extractor.cpp): "<think>…</think>" is reasoning (also a
// "</think>" with no opening tag before any call: the template opened it); text in a code fence
// ("```" … "```") or an inline code span ("`…`" on one line) is content, never a call; a call
// whose syntax is broken or cut off is reported as unparsed with the reason, never dropped.
//
// Adding a format: one file implementing Format, one line in registry.cpp.
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace toolbridge::parse {

// One call as the model wrote it, before the catalog is consulted.
struct RawCall {
  std::string name;    // the tool as written (use_mcp_tool: the tool's own name)
  std::string server;  // use_mcp_tool: the server named; else empty
  // The arguments as JSON text: an object, a JSON string holding one (decoded again), or text
  // that needs repair. Empty when `parameters` carry them (qwen3_coder).
  std::string arguments;
  std::vector<std::pair<std::string, std::string>> parameters;  // qwen3_coder, as written
  bool drop_nulls = false;         // use_mcp_tool: null values are dropped
  std::vector<std::string> fixes;  // JSON repairs made to read the call (kinds, in order)
  std::string text;                // the call's text in the output
};

// A call that could not be read, with why. Never dropped silently.
struct Unparsed {
  std::string text;
  std::string reason;
};

// What reading at a position found.
struct Read {
  enum class Status {
    kNeedMore,  // cannot decide before more text comes (never returned when final)
    kMention,   // the marker at this position does not start a call: it is content
    kDone,      // `end` is past what was read: calls, unparsed entries, or a block's end
  };
  Status status = Status::kDone;
  std::size_t end = 0;
  std::vector<RawCall> calls;
  std::vector<Unparsed> unparsed;
  bool in_block = false;                 // another call of the same block may follow at `end`
  const class Format* format = nullptr;  // auto: the format that read it (for in_block reads)
};

// One executed call's answer, for render().
struct ToolResponse {
  std::string call_id;
  std::string name;
  std::string text;  // the result's text blocks, or the error's message
  bool is_error = false;
};

class Format {
 public:
  virtual ~Format() = default;
  virtual std::string_view name() const = 0;
  // The first position at or after `from` where a call may begin; npos if none. `fresh`: the
  // output so far (after reasoning) is whitespace only.
  virtual std::size_t find_start(std::string_view text, std::size_t from, bool fresh) const = 0;
  // Reads at `at`: a position find_start returned, or (in_block) the end of the previous read
  // that said in_block. `final`: no more text will come.
  virtual Read read(std::string_view text, std::size_t at, bool in_block, bool final) const = 0;
  // The answers in the format's tool-response convention, ready to append to the conversation.
  virtual std::string render(const std::vector<ToolResponse>& responses) const = 0;
};

// Every format, in the order `auto` tries them (deepseek_v31 reads as deepseek_v3 does).
const std::vector<const Format*>& formats();
// By name ("hermes", "qwen3_coder", ..., "auto"); null if unknown.
const Format* find_format(std::string_view name);
// "hermes, qwen3_coder, ..." for error messages.
std::string format_names();

}  // namespace toolbridge::parse
