#pragma once
// Reads the token ids, logprobs and usage out of a worker's answer as it passes to the client,
// without building a document and without touching the bytes that go out: a SAX parse
// (boost::json::basic_parser) of the body, or of each `data:` line of a Server-Sent Events
// stream, that keeps only what a trainer needs (docs/token-records.md):
//   vLLM    `prompt_token_ids` (anywhere), a choice's `token_ids` (appended across chunks);
//   SGLang  `output_ids` and `meta_info.output_token_logprobs` ([[logprob, id, text], ...];
//           both cumulative in a stream: the last one wins), `meta_info.input_token_logprobs`
//           (prompt ids when no `prompt_token_ids` came);
//   OpenAI  a choice's `logprobs.content[].logprob` (chat) or `logprobs.token_logprobs`
//           (completions), appended across chunks; the top-level `usage` (the last one wins).
// Only the choice with `index` 0 (or none) is kept. Everything is bounded: at most
// `max_values` ids and logprobs in all (then `truncated`), a nesting depth of 32, keys of 64
// bytes; a value of the wrong type is skipped and counted in `malformed`.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace toolbridge::llm {

// What one answer held.
struct TokenData {
  std::vector<std::uint32_t> prompt_ids;
  std::vector<std::uint32_t> completion_ids;
  std::vector<float> completion_logprobs;  // NaN where the worker wrote null
  std::optional<std::uint64_t> prompt_tokens, completion_tokens, total_tokens, cached_tokens;
  std::string finish_reason;    // the last non-null one of choice 0 (at most 64 bytes)
  std::string_view shape = "";  // "vllm", "sglang", "openai" (logprobs only) or "" (none)
  bool truncated = false;       // over max_values: the rest was not kept
  std::uint32_t malformed = 0;  // values of the wrong type, and events that did not parse
};

class TokenScanner {
 public:
  // `stream`: the answer is an SSE stream (feed() its pieces); else one JSON document.
  TokenScanner(bool stream, std::size_t max_values);
  ~TokenScanner();
  TokenScanner(const TokenScanner&) = delete;
  TokenScanner& operator=(const TokenScanner&) = delete;

  // The next bytes of the answer, split anywhere.
  void feed(std::string_view piece);
  // The answer ended: what it held (call once).
  TokenData finish();

  struct Parser;  // the SAX parser and its handler (token_scan.cpp)

 private:
  void feed_stream(std::string_view piece);
  void end_event();

  bool stream_;
  std::unique_ptr<Parser> parser_;
  // SSE framing: where in the current line we are.
  enum class Line { kStart, kData, kSkip } line_ = Line::kStart;
  std::string head_;          // the first bytes of a line, until it is known to be `data:` or not
  bool event_bytes_ = false;  // the current `data:` line fed the parser something
  std::string event_start_;   // its first bytes: `[DONE]` is the end, not a malformed event
};

}  // namespace toolbridge::llm
