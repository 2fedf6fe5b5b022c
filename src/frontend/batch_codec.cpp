#include "frontend/batch_codec.h"

#include <fmt/format.h>

#include <boost/json.hpp>

#include "json/envelope.h"
#include "json/parse.h"

namespace toolbridge::frontend {

namespace bj = boost::json;
using gateway::Fault;

Encoding encoding_of(std::string_view content_type) {
  if (content_type.empty() || content_type.find("application/json") != std::string_view::npos) {
    return Encoding::kJson;
  }
  return Encoding::kUnsupported;
}

std::string_view content_type(Encoding) {
  return "application/json";
}

bj::value decode_body(Encoding, std::string_view body, std::string& problem) {
  boost::system::error_code ec;
  bj::value v = json::parse(body, ec);
  if (ec) problem = "the body is not JSON (or is nested deeper than 128 levels): " + ec.message();
  return v;
}

std::string_view outcome_name(Fault f) {
  return f == Fault::kNone ? std::string_view("ok") : gateway::to_string(f);
}

namespace {

void append_entry(std::string& out, const BatchEntry& e) {
  out += R"({"tool":)";
  out += json::quote(e.tool);
  out += R"(,"outcome":")";
  out += outcome_name(e.result.fault);
  out += '"';
  const std::string& response = e.result.response;
  bool done = false;
  if (!response.empty()) {
    // The server's own answer: its result (tool results, isError ones included) or its error
    // object, as it sent it.
    const json::Envelope env = json::parse_envelope(response);
    if (!env.result.empty()) {
      out += R"(,"result":)";
      out += env.result.in(response);
      done = true;
    } else if (!env.error.empty()) {
      out += R"(,"error":)";
      out += env.error.in(response);
      done = true;
    }
  }
  if (!done) {
    out += R"(,"error":{"code":)";
    out += std::to_string(gateway::error_code(e.result.fault));
    out += R"(,"message":)";
    out += json::quote(e.result.why);
    out += '}';
  }
  out += fmt::format(R"(,"timing":{{"queue_ms":{:.3f},"execution_ms":{:.3f},"total_ms":{:.3f}}}}})",
                     e.queue_ms, e.execution_ms, e.total_ms);
}

}  // namespace

std::string encode_response(Encoding, const std::vector<BatchEntry>& entries, double total_ms) {
  std::size_t size = 64;
  for (const auto& e : entries) size += e.result.response.size() + e.result.why.size() + 160;
  std::string out;
  out.reserve(size);
  out += R"({"results":[)";
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (i) out += ',';
    append_entry(out, entries[i]);
  }
  out += fmt::format(R"(],"timing":{{"total_ms":{:.3f}}}}})", total_ms);
  return out;
}

}  // namespace toolbridge::frontend
