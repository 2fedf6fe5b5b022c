#include "llm/token_scan.h"

#include <boost/json/basic_parser_impl.hpp>
#include <cmath>
#include <limits>

namespace toolbridge::llm {

namespace bj = boost::json;
using boost::system::error_code;

namespace {

constexpr std::size_t kMaxKey = 64;
constexpr std::size_t kMaxFinishReason = 64;
constexpr std::size_t kMaxHead = 5;        // "data:"
constexpr std::size_t kMaxEventStart = 7;  // enough to tell "[DONE]" from "[DONE]x"

// What a container is, by where it sits; scalars are read by their container's role and key.
enum class Role : std::uint8_t {
  kOther,
  kRoot,
  kChoices,         // root.choices
  kChoice,          // an element of it
  kPromptIds,       // prompt_token_ids (vLLM, anywhere)
  kTokenIds,        // a choice's token_ids (vLLM)
  kOutputIds,       // output_ids (SGLang)
  kMetaInfo,        // meta_info (SGLang)
  kOutLogprobs,     // meta_info.output_token_logprobs
  kOutLogprobItem,  // [logprob, id, text]
  kInLogprobs,      // meta_info.input_token_logprobs
  kInLogprobItem,
  kLogprobs,        // a choice's logprobs (OpenAI)
  kLogprobContent,  // logprobs.content (chat)
  kLogprobItem,     // {token, logprob, top_logprobs, ...}
  kTokenLogprobs,   // logprobs.token_logprobs (completions)
  kUsage,           // root.usage
  kUsageDetails,    // usage.prompt_tokens_details
};

struct Frame {
  Role role;
  bool array;
  std::uint32_t index = 0;  // arrays: elements so far
};

// The handler basic_parser calls; it keeps the scan's state between pieces.
struct Handler {
  static constexpr std::size_t max_object_size = std::numeric_limits<std::size_t>::max();
  static constexpr std::size_t max_array_size = std::numeric_limits<std::size_t>::max();
  static constexpr std::size_t max_key_size = std::numeric_limits<std::size_t>::max();
  static constexpr std::size_t max_string_size = std::numeric_limits<std::size_t>::max();

  explicit Handler(std::size_t max_values) : max_values(max_values) {}

  std::size_t max_values;
  TokenData out;
  // Separate until finish(): which source wins depends on what came.
  std::vector<std::uint32_t> vllm_ids, sglang_ids, sglang_lp_ids, sglang_prompt_ids;
  std::vector<float> sglang_lps;
  bool saw_vllm = false, saw_sglang = false, saw_logprobs = false, saw_prompt_ids = false;

  std::vector<Frame> stack;
  std::string key;  // the member key being read or just read
  bool key_long = false;
  bool skip_choice = false;  // the current choice's index is not 0
  std::string str;           // a string value being read (finish_reason only)
  bool str_wanted = false;

  std::size_t values() const {
    return out.prompt_ids.size() + vllm_ids.size() + sglang_ids.size() + sglang_lp_ids.size() +
           sglang_prompt_ids.size() + sglang_lps.size() + out.completion_logprobs.size();
  }
  bool room() {
    if (values() < max_values) return true;
    out.truncated = true;
    return false;
  }

  Role parent() const { return stack.empty() ? Role::kOther : stack.back().role; }
  bool in_skipped_choice() const {
    if (!skip_choice) return false;
    for (const auto& f : stack)
      if (f.role == Role::kChoice) return true;
    return false;
  }

  // The role of a container that begins here.
  Role role_of_new(bool array) const {
    if (stack.empty()) return array ? Role::kOther : Role::kRoot;
    const Frame& p = stack.back();
    if (p.role == Role::kOther || in_skipped_choice()) return Role::kOther;
    if (p.array) {
      switch (p.role) {
        case Role::kChoices:
          return array ? Role::kOther : Role::kChoice;
        case Role::kOutLogprobs:
          return array ? Role::kOutLogprobItem : Role::kOther;
        case Role::kInLogprobs:
          return array ? Role::kInLogprobItem : Role::kOther;
        case Role::kLogprobContent:
          return array ? Role::kOther : Role::kLogprobItem;
        default:
          return Role::kOther;
      }
    }
    if (key_long) return Role::kOther;
    if (array) {
      if (key == "prompt_token_ids") return Role::kPromptIds;
      if (p.role == Role::kRoot && key == "choices") return Role::kChoices;
      if (key == "token_ids" && p.role == Role::kChoice) return Role::kTokenIds;
      if (key == "output_ids") return Role::kOutputIds;
      if (p.role == Role::kMetaInfo && key == "output_token_logprobs") return Role::kOutLogprobs;
      if (p.role == Role::kMetaInfo && key == "input_token_logprobs") return Role::kInLogprobs;
      if (p.role == Role::kLogprobs && key == "content") return Role::kLogprobContent;
      if (p.role == Role::kLogprobs && key == "token_logprobs") return Role::kTokenLogprobs;
      return Role::kOther;
    }
    if (key == "meta_info") return Role::kMetaInfo;
    if (p.role == Role::kChoice && key == "logprobs") return Role::kLogprobs;
    if (p.role == Role::kRoot && key == "usage") return Role::kUsage;
    if (p.role == Role::kUsage && key == "prompt_tokens_details") return Role::kUsageDetails;
    return Role::kOther;
  }

  void begin(bool array) {
    const Role r = role_of_new(array);
    if (!stack.empty() && stack.back().array) ++stack.back().index;
    switch (r) {
      case Role::kPromptIds:
        out.prompt_ids.clear();
        saw_prompt_ids = saw_vllm = true;
        break;
      case Role::kOutputIds:
        sglang_ids.clear();
        saw_sglang = true;
        break;
      case Role::kOutLogprobs:
        sglang_lps.clear();
        sglang_lp_ids.clear();
        saw_sglang = true;
        break;
      case Role::kInLogprobs:
        sglang_prompt_ids.clear();
        break;
      case Role::kTokenIds:
        saw_vllm = true;
        break;
      case Role::kLogprobContent:
      case Role::kTokenLogprobs:
        saw_logprobs = true;
        break;
      default:
        break;
    }
    stack.push_back(Frame{r, array});
  }
  void end() {
    if (!stack.empty()) {
      if (stack.back().role == Role::kChoice) skip_choice = false;
      stack.pop_back();
    }
  }

  // A token id where one is expected: a 32-bit unsigned integer.
  void id(std::vector<std::uint32_t>& into, std::optional<std::uint64_t> v) {
    if (!v || *v > std::numeric_limits<std::uint32_t>::max()) {
      ++out.malformed;
      return;
    }
    if (room()) into.push_back(static_cast<std::uint32_t>(*v));
  }
  void logprob(std::vector<float>& into, std::optional<double> v, bool null) {
    if (!v && !null) {
      ++out.malformed;
      return;
    }
    if (room()) into.push_back(v ? static_cast<float>(*v) : std::nanf(""));
  }
  void usage(std::optional<std::uint64_t>& into, std::optional<std::uint64_t> v) {
    if (v) {
      into = v;
    } else {
      ++out.malformed;
    }
  }

  // A scalar: `u` if it is a non-negative integer, `d` if a number, `null` if null.
  void scalar(std::optional<std::uint64_t> u, std::optional<double> d, bool null) {
    if (stack.empty() || in_skipped_choice()) return;
    Frame& p = stack.back();
    const std::uint32_t at = p.array ? p.index++ : 0;
    switch (p.role) {
      case Role::kPromptIds:
        id(out.prompt_ids, u);
        return;
      case Role::kTokenIds:
        id(vllm_ids, u);
        return;
      case Role::kOutputIds:
        id(sglang_ids, u);
        return;
      case Role::kTokenLogprobs:
        logprob(out.completion_logprobs, d, null);
        return;
      case Role::kOutLogprobItem:
        if (at == 0) logprob(sglang_lps, d, null);
        if (at == 1) id(sglang_lp_ids, u);
        return;
      case Role::kInLogprobItem:
        if (at == 1) id(sglang_prompt_ids, u);
        return;
      case Role::kLogprobItem:
        if (!key_long && key == "logprob") logprob(out.completion_logprobs, d, null);
        return;
      case Role::kChoice:
        if (!key_long && key == "index" && u.value_or(1) != 0) skip_choice = true;
        return;
      case Role::kUsage:
        if (key_long) return;
        if (key == "prompt_tokens") usage(out.prompt_tokens, u);
        if (key == "completion_tokens") usage(out.completion_tokens, u);
        if (key == "total_tokens") usage(out.total_tokens, u);
        return;
      case Role::kUsageDetails:
        if (!key_long && key == "cached_tokens") usage(out.cached_tokens, u);
        return;
      default:
        return;
    }
  }

  // A string's first part: in a slot that wants a number it is a wrong type.
  void string_begins() {
    if (stack.empty() || in_skipped_choice()) return;
    const Frame& p = stack.back();
    str_wanted = p.role == Role::kChoice && !key_long && key == "finish_reason";
    str.clear();
    switch (p.role) {
      case Role::kPromptIds:
      case Role::kTokenIds:
      case Role::kOutputIds:
      case Role::kTokenLogprobs:
        ++out.malformed;
        break;
      default:
        break;
    }
  }
  void string_ends() {
    if (stack.empty()) return;
    Frame& p = stack.back();
    if (p.array) ++p.index;
    if (str_wanted) out.finish_reason = str;
    str_wanted = false;
  }

  // basic_parser's callbacks.
  bool on_document_begin(error_code&) { return true; }
  bool on_document_end(error_code&) { return true; }
  bool on_array_begin(error_code&) {
    begin(true);
    return true;
  }
  bool on_array_end(std::size_t, error_code&) {
    end();
    return true;
  }
  bool on_object_begin(error_code&) {
    begin(false);
    return true;
  }
  bool on_object_end(std::size_t, error_code&) {
    end();
    return true;
  }
  bool on_string_part(bj::string_view s, std::size_t n, error_code&) {
    if (n == s.size()) string_begins();
    if (str_wanted && str.size() + s.size() <= kMaxFinishReason) str.append(s.data(), s.size());
    return true;
  }
  bool on_string(bj::string_view s, std::size_t n, error_code& ec) {
    on_string_part(s, n, ec);
    string_ends();
    return true;
  }
  bool on_key_part(bj::string_view s, std::size_t n, error_code&) {
    if (n == s.size()) {
      key.clear();
      key_long = false;
    }
    if (key.size() + s.size() > kMaxKey) {
      key_long = true;
    } else {
      key.append(s.data(), s.size());
    }
    return true;
  }
  bool on_key(bj::string_view s, std::size_t n, error_code& ec) { return on_key_part(s, n, ec); }
  bool on_number_part(bj::string_view, error_code&) { return true; }
  bool on_int64(std::int64_t i, bj::string_view, error_code&) {
    std::optional<std::uint64_t> u;
    if (i >= 0) u = static_cast<std::uint64_t>(i);
    scalar(u, static_cast<double>(i), false);
    return true;
  }
  bool on_uint64(std::uint64_t u, bj::string_view, error_code&) {
    scalar(u, static_cast<double>(u), false);
    return true;
  }
  bool on_double(double d, bj::string_view, error_code&) {
    scalar(std::nullopt, d, false);
    return true;
  }
  bool on_bool(bool, error_code&) {
    scalar(std::nullopt, std::nullopt, false);
    return true;
  }
  bool on_null(error_code&) {
    scalar(std::nullopt, std::nullopt, true);
    return true;
  }
  bool on_comment_part(bj::string_view, error_code&) { return true; }
  bool on_comment(bj::string_view, error_code&) { return true; }
};

}  // namespace

struct TokenScanner::Parser {
  explicit Parser(std::size_t max_values) : p(bj::parse_options{}, max_values) {}
  bj::basic_parser<Handler> p;
  bool failed = false;  // this document did not parse: the rest of it is skipped
};

TokenScanner::TokenScanner(bool stream, std::size_t max_values)
    : stream_(stream), parser_(std::make_unique<Parser>(max_values)) {}

TokenScanner::~TokenScanner() = default;

void TokenScanner::feed(std::string_view piece) {
  if (stream_) {
    feed_stream(piece);
    return;
  }
  if (parser_->failed || piece.empty()) return;
  error_code ec;
  parser_->p.write_some(true, piece.data(), piece.size(), ec);
  if (ec) {
    parser_->failed = true;
    ++parser_->p.handler().out.malformed;
  }
}

void TokenScanner::feed_stream(std::string_view piece) {
  std::size_t i = 0;
  while (i < piece.size()) {
    const char c = piece[i];
    if (c == '\n' || c == '\r') {
      if (line_ == Line::kData) end_event();
      line_ = Line::kStart;
      head_.clear();
      ++i;
      continue;
    }
    if (line_ == Line::kStart) {
      head_ += c;
      ++i;
      if (std::string_view("data:").starts_with(head_)) {
        if (head_.size() == kMaxHead) {
          line_ = Line::kData;
          event_bytes_ = false;
        }
      } else {
        line_ = Line::kSkip;  // an event name, an id, a comment
      }
      continue;
    }
    // Up to the end of the line in one step.
    std::size_t end = i;
    while (end < piece.size() && piece[end] != '\n' && piece[end] != '\r') ++end;
    if (line_ == Line::kData) {
      for (std::size_t k = i; k < end && event_start_.size() < kMaxEventStart; ++k)
        if (piece[k] != ' ') event_start_ += piece[k];
    }
    if (line_ == Line::kData && !parser_->failed) {
      error_code ec;
      parser_->p.write_some(true, piece.data() + i, end - i, ec);
      event_bytes_ = true;
      if (ec) parser_->failed = true;
    }
    i = end;
  }
}

void TokenScanner::end_event() {
  if (event_bytes_ && !parser_->failed) {
    error_code ec;
    parser_->p.write_some(false, nullptr, 0, ec);
    if (ec) parser_->failed = true;
  }
  // `data: [DONE]` ends the stream: not a document, not a fault.
  if (parser_->failed && event_bytes_ && event_start_ != "[DONE]")
    ++parser_->p.handler().out.malformed;
  event_start_.clear();
  parser_->p.reset();
  parser_->p.handler().stack.clear();
  parser_->p.handler().skip_choice = false;
  parser_->failed = false;
  event_bytes_ = false;
}

TokenData TokenScanner::finish() {
  if (stream_) {
    if (line_ == Line::kData) end_event();
  } else if (!parser_->failed) {
    error_code ec;
    parser_->p.write_some(false, nullptr, 0, ec);
    if (ec) ++parser_->p.handler().out.malformed;
  }
  Handler& h = parser_->p.handler();
  TokenData out = std::move(h.out);
  if (!h.saw_prompt_ids && !h.sglang_prompt_ids.empty())
    out.prompt_ids = std::move(h.sglang_prompt_ids);
  if (!h.sglang_ids.empty()) {
    out.completion_ids = std::move(h.sglang_ids);
  } else if (!h.vllm_ids.empty()) {
    out.completion_ids = std::move(h.vllm_ids);
  } else {
    out.completion_ids = std::move(h.sglang_lp_ids);
  }
  if (out.completion_logprobs.empty()) out.completion_logprobs = std::move(h.sglang_lps);
  out.shape = h.saw_sglang ? "sglang" : h.saw_vllm ? "vllm" : h.saw_logprobs ? "openai" : "";
  return out;
}

}  // namespace toolbridge::llm
