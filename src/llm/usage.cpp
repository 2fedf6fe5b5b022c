#include "llm/usage.h"

namespace toolbridge::llm {

namespace {

constexpr std::size_t kTail = 48;  // longer than a key, its colon, spaces and a number

// The number after `"key"` and a colon at `at`, if the text holds all of it.
std::optional<std::uint64_t> number_after(std::string_view text, std::size_t at) {
  std::size_t i = at;
  while (i < text.size() && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n')) ++i;
  if (i >= text.size() || text[i] != ':') return std::nullopt;
  ++i;
  while (i < text.size() && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n')) ++i;
  std::uint64_t v = 0;
  std::size_t digits = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9' && digits < 15) {
    v = v * 10 + static_cast<std::uint64_t>(text[i] - '0');
    ++i;
    ++digits;
  }
  // A number cut at the end of the text is read again with the next piece.
  if (digits == 0 || i >= text.size()) return std::nullopt;
  return v;
}

void find_last(std::string_view text, std::string_view key, std::optional<std::uint64_t>& out) {
  std::size_t pos = 0;
  while ((pos = text.find(key, pos)) != std::string_view::npos) {
    pos += key.size();
    if (auto v = number_after(text, pos)) out = v;
  }
}

}  // namespace

void UsageScanner::scan(std::string_view text) {
  find_last(text, "\"prompt_tokens\"", prompt_);
  find_last(text, "\"cached_tokens\"", cached_);
  find_last(text, "\"completion_tokens\"", completion_);
}

void UsageScanner::feed(std::string_view piece) {
  if (piece.empty()) return;
  if (!tail_.empty()) {
    // Only what straddles the boundary: the tail and the start of this piece.
    std::string joint = tail_;
    joint.append(piece.substr(0, kTail));
    scan(joint);
  }
  scan(piece);
  if (piece.size() >= kTail) {
    tail_.assign(piece.substr(piece.size() - kTail));
  } else {
    tail_.append(piece);
    if (tail_.size() > kTail) tail_.erase(0, tail_.size() - kTail);
  }
}

}  // namespace toolbridge::llm
