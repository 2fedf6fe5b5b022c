#pragma once
// JSON-RPC 2.0 envelope: the few top-level members a router needs (id, method, params span,
// result/error presence), read in one scan without building a DOM of the payload. Large tool
// results pass through as byte ranges; a new id is written by splicing.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/expected.h"

namespace toolbridge::json {

enum class Kind { kRequest, kNotification, kResponse, kInvalid };

// The one JSON nesting limit: arrays and objects of one message, its own object included. The
// envelope scanner and every Boost.JSON parse (json/parse.h) apply it; legitimate messages
// (tool schemas, arguments) stay far below it.
inline constexpr std::size_t kMaxDepth = 128;

// Exponents of numbers are read up to this many significant digits; a longer one makes the
// message invalid (Boost.JSON's parser refuses exponents past INT_MAX).
inline constexpr std::size_t kMaxExponentDigits = 9;

struct Span {
  std::size_t offset = 0;
  std::size_t length = 0;
  bool empty() const { return length == 0; }
  std::string_view in(std::string_view text) const { return text.substr(offset, length); }
};

struct Envelope {
  Kind kind = Kind::kInvalid;
  Span id;              // raw JSON of "id" (number or string), empty if absent
  std::string method;   // unescaped
  Span params;          // raw JSON of "params", empty if absent
  Span result;          // raw JSON of "result"
  Span error;           // raw JSON of "error"
  // "result" is an object whose own "isError" member is true (an MCP tool result that failed),
  // read on the scan's way through it.
  bool is_error = false;
  std::string problem;  // why kind is kInvalid
  // kInvalid because nested deeper than kMaxDepth; `id` is still set when it was readable, so
  // the request it answers can be told.
  bool too_deep = false;
  // Some string holds invalid UTF-8 or a \u escape of a lone UTF-16 surrogate, which the
  // gateway's parser rejects: pass on repair_strings(text) (json/utf8.h) and its envelope instead.
  bool needs_repair = false;
};

// `text` must stay alive while spans are used. Accepts any JSON object; classifies it.
Envelope parse_envelope(std::string_view text);

// One member of a JSON object: its unescaped name and the raw span of its value.
struct Member {
  std::string name;
  Span value;
};
// The top-level members of the object `text`, in order, in one validating scan (values are
// skipped, not parsed); nullopt if `text` is not exactly one JSON object.
std::optional<std::vector<Member>> object_members(std::string_view text);
// `text` (an object whose members are `members`) rebuilt with the values of the members named
// in `replace` replaced by raw JSON (appended if absent) and the members named in `drop` left
// out. Every other value is copied as it was, unparsed.
std::string rewrite_object(std::string_view text, const std::vector<Member>& members,
                           const std::vector<std::pair<std::string_view, std::string>>& replace,
                           const std::vector<std::string_view>& drop);
// `text` with the value of every member named `name` replaced by raw JSON `value`, and every
// other byte as it was; nullopt if no member has that name.
std::optional<std::string> with_member_value(std::string_view text,
                                             const std::vector<Member>& members,
                                             std::string_view name, std::string_view value);

// Is `text` (after leading whitespace) a JSON array? Batches are split with split_batch.
bool is_batch(std::string_view text);
// Raw texts of the array's elements, or why it is not valid JSON.
base::Expected<std::vector<std::string>> split_batch(std::string_view text);

// Copy of `message` with the span `id` replaced by `new_id` (raw JSON).
std::string with_id(std::string_view message, Span id, std::string_view new_id);
// Where `span` of `message` lies in with_id(message, id, new_id), new_id being `new_id_length`
// bytes long.
Span span_after_id(Span span, Span id, std::size_t new_id_length);

// Builders for messages the gateway writes itself. `id`, `params`, `result` are raw JSON.
std::string make_request(std::string_view id, std::string_view method, std::string_view params);
std::string make_notification(std::string_view method, std::string_view params);
std::string make_result(std::string_view id, std::string_view result);
std::string make_error(std::string_view id, int code, std::string_view message,
                       std::string_view data = {});

// JSON string literal for `s` (quotes included).
std::string quote(std::string_view s);

// JSON-RPC error codes.
inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;
// Implementation-defined server errors used by the gateway.
inline constexpr int kUpstreamUnavailable = -32001;  // server not running / restarting
inline constexpr int kRequestTimeout = -32002;
inline constexpr int kUpstreamFailed = -32003;  // instance died with the call pending
inline constexpr int kOverloaded = -32004;
// The instance failed before the request reached it: running it elsewhere cannot run it twice.
inline constexpr int kNotSent = -32005;

}  // namespace toolbridge::json
