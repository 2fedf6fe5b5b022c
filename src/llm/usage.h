#pragma once
// Reads a worker's reported usage (prompt_tokens, prompt_tokens_details.cached_tokens,
// completion_tokens) out of a response body or an SSE stream as it passes, without parsing it: the last value of each key
// wins (usage comes in the last chunk of a stream). Pieces may split a key anywhere.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace toolbridge::llm {

class UsageScanner {
 public:
  void feed(std::string_view piece);
  std::optional<std::uint64_t> prompt_tokens() const { return prompt_; }
  std::optional<std::uint64_t> cached_tokens() const { return cached_; }
  std::optional<std::uint64_t> completion_tokens() const { return completion_; }

 private:
  void scan(std::string_view text);
  std::string tail_;  // the end of the previous piece, where a key may have been cut
  std::optional<std::uint64_t> prompt_;
  std::optional<std::uint64_t> cached_;
  std::optional<std::uint64_t> completion_;
};

// Who answered a model request and what it reported using: a slot of the request's call
// (gateway::Call::slots), set by the proxy stage, read by its span.
struct Served {
  std::string worker;
  std::optional<std::uint64_t> input_tokens;
  std::optional<std::uint64_t> cached_tokens;
  std::optional<std::uint64_t> output_tokens;
};

}  // namespace toolbridge::llm
