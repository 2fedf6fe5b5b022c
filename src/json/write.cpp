// The messages the gateway writes itself (envelope.h's builders) and id splicing: the writing
// half of the envelope, beside envelope.cpp's scanning half.

#include <boost/json.hpp>

#include "json/envelope.h"
#include "json/quote.h"

namespace toolbridge::json {

std::string with_id(std::string_view message, Span id, std::string_view new_id) {
  std::string out;
  out.reserve(message.size() + new_id.size());
  out.append(message.substr(0, id.offset));
  out.append(new_id);
  out.append(message.substr(id.offset + id.length));
  return out;
}

Span span_after_id(Span span, Span id, std::size_t new_id_length) {
  if (!span.empty() && span.offset > id.offset)
    span.offset = span.offset + new_id_length - id.length;
  return span;
}

namespace {
// Printable ASCII without '"' or '\\' is its own JSON string body (method names, most messages).
bool needs_escaping(std::string_view s) {
  for (const char c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f || c == '"' ||
        c == '\\')
      return true;
  }
  return false;
}

// {"jsonrpc":"2.0"[,"id":ID],"method":"M"[,"params":P]}: requests and notifications alike,
// built in one allocation (this runs for every forwarded call).
std::string method_message(std::string_view id, std::string_view method, std::string_view params) {
  std::string out;
  out.reserve(48 + id.size() + method.size() + params.size());
  out += R"({"jsonrpc":"2.0")";
  if (!id.empty()) {
    out += R"(,"id":)";
    out += id;
  }
  out += R"(,"method":)";
  append_quoted(out, method);
  if (!params.empty()) {
    out += R"(,"params":)";
    out += params;
  }
  out += '}';
  return out;
}
}  // namespace

void append_quoted(std::string& out, std::string_view s) {
  if (needs_escaping(s)) {
    out += boost::json::serialize(boost::json::string(s));
    return;
  }
  out += '"';
  out += s;
  out += '"';
}

std::string quote(std::string_view s) {
  std::string out;
  append_quoted(out, s);
  return out;
}

std::string make_request(std::string_view id, std::string_view method, std::string_view params) {
  return method_message(id, method, params);
}

std::string make_notification(std::string_view method, std::string_view params) {
  return method_message({}, method, params);
}

std::string make_result(std::string_view id, std::string_view result) {
  std::string out = R"({"jsonrpc":"2.0","id":)";
  out += id.empty() ? "null" : id;
  out += R"(,"result":)";
  out += result;
  out += '}';
  return out;
}

std::string make_error(std::string_view id, int code, std::string_view message,
                       std::string_view data) {
  std::string out = R"({"jsonrpc":"2.0","id":)";
  out += id.empty() ? "null" : id;
  out += R"(,"error":{"code":)";
  out += std::to_string(code);
  out += R"(,"message":)";
  out += quote(message);
  if (!data.empty()) {
    out += R"(,"data":)";
    out += data;
  }
  out += "}}";
  return out;
}

}  // namespace toolbridge::json
