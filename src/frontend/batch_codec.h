#pragma once
// The encodings of POST /v1/batch, chosen by the request's Content-Type: JSON (the default) or
// MessagePack, the answer in the same encoding. Results pass through as the server's raw JSON
// (spliced, not re-parsed) in JSON answers; a MessagePack answer re-encodes them.
#include <boost/json/value.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "base/expected.h"
#include "call/call.h"
#include "json/quote.h"

namespace toolbridge::frontend {

enum class Encoding { kJson, kMsgpack, kUnsupported };

inline constexpr std::string_view kSupportedMediaTypes =
    "Unsupported Media Type: POST /v1/batch takes Content-Type application/json or "
    "application/msgpack";

// By the Content-Type header (empty: JSON).
Encoding encoding_of(std::string_view content_type);
std::string_view content_type(Encoding e);

// The request body as a value, or why it cannot be decoded.
base::Expected<boost::json::value> decode_body(Encoding e, std::string_view body);

// One call's answer, in request order.
struct BatchEntry {
  std::string tool;
  call::Result result;
  double queue_ms = 0;
  double execution_ms = 0;
  double total_ms = 0;
};

// "ok" for a result, else the fault's name (tool_error, timeout, shed, ...).
std::string_view outcome_name(call::Fault f);

// The JSON string literal of `s` appended to `out` (json/quote.h).
using json::append_quoted;

// `ms` with three decimals, exactly as fmt's {:.3f} writes it (to nearest, ties to even), at a
// fraction of its cost: an answer writes three per entry.
void append_ms(std::string& out, double ms);

// `"outcome":…,"result"|"error":…,"timing":{…}` of one entry (JSON, no braces around it).
void append_outcome(std::string& out, const BatchEntry& e);

std::string encode_response(Encoding e, const std::vector<BatchEntry>& entries, double total_ms);

}  // namespace toolbridge::frontend
