#include "otel/otlp.h"

#include <fmt/format.h>

#include "json/envelope.h"
#include "json/utf8.h"
#include "otel/protobuf.h"
#include "otel/span_writer.h"

namespace toolbridge::otel {

namespace {

namespace pb = protobuf;

// Field numbers of opentelemetry/proto (collector/trace/v1, trace/v1, resource/v1, common/v1)
// around the spans (span_writer.cpp writes the spans).
enum : std::uint32_t {
  kRequestResourceSpans = 1,
  kResourceSpansResource = 1,
  kResourceSpansScopeSpans = 2,
  kResourceAttributes = 1,
  kScopeSpansScope = 1,
  kScopeName = 1,
  kScopeVersion = 2,
  kKeyValueKey = 1,
  kKeyValueValue = 2,
  kAnyString = 1,
};

// The resource's attributes, all text (the gateway's own names, UTF-8 checked at start).
using TextAttributes = std::vector<std::pair<std::string_view, std::string_view>>;

TextAttributes resource_attributes(const Resource& r) {
  TextAttributes out{{"service.name", r.service_name}};
  if (!r.service_version.empty()) out.emplace_back("service.version", r.service_version);
  if (!r.instance_id.empty()) out.emplace_back("service.instance.id", r.instance_id);
  return out;
}

// Protobuf strings and JSON text must be UTF-8: invalid bytes become U+FFFD.
std::string utf8(std::string_view text) {
  return json::is_valid_utf8(text) ? std::string(text) : json::replace_invalid_utf8(text);
}

void json_attributes(std::string& out, const TextAttributes& attributes) {
  out += R"("attributes":[)";
  bool first = true;
  for (const auto& [key, value] : attributes) {
    if (!first) out += ',';
    first = false;
    out += R"({"key":)" + json::quote(key) + R"(,"value":{"stringValue":)" +
           json::quote(utf8(value)) + "}}";
  }
  out += ']';
}

}  // namespace

void append_span_protobuf(std::string& out, const Span& span) {
  SpanWriter w(out, Encoding::kProtobuf);
  write_span(w, span);
}

void append_span_json(std::string& out, const Span& span) {
  SpanWriter w(out, Encoding::kJson);
  write_span(w, span);
  out.pop_back();  // the ',' after the span
}

void wrap_protobuf(const Resource& resource, std::string_view spans, std::string& out) {
  std::string head;  // ScopeSpans: the scope, then its spans
  {
    pb::Nested scope(head, kScopeSpansScope);
    pb::put_bytes_field(head, kScopeName, kScopeNameText);
    if (!resource.service_version.empty())
      pb::put_bytes_field(head, kScopeVersion, resource.service_version);
  }
  std::string resource_spans;  // ResourceSpans: the resource, then the ScopeSpans
  {
    pb::Nested r(resource_spans, kResourceSpansResource);
    for (const auto& [key, value] : resource_attributes(resource)) {
      pb::Nested kv(resource_spans, kResourceAttributes);
      pb::put_bytes_field(resource_spans, kKeyValueKey, key);
      pb::Nested any(resource_spans, kKeyValueValue);
      pb::put_bytes_field(resource_spans, kAnyString, utf8(value));
    }
  }
  // The lengths go in front of the spans, which are written once, never moved.
  pb::put_tag(resource_spans, kResourceSpansScopeSpans, pb::Wire::kLength);
  pb::put_varint(resource_spans, head.size() + spans.size());
  out.clear();
  pb::put_tag(out, kRequestResourceSpans, pb::Wire::kLength);
  pb::put_varint(out, resource_spans.size() + head.size() + spans.size());
  out.reserve(out.size() + resource_spans.size() + head.size() + spans.size());
  out += resource_spans;
  out += head;
  out += spans;
}

void wrap_json(const Resource& resource, std::string_view spans, std::string& out) {
  out = R"({"resourceSpans":[{"resource":{)";
  json_attributes(out, resource_attributes(resource));
  out += R"(},"scopeSpans":[{"scope":{"name":)" + json::quote(kScopeNameText);
  if (!resource.service_version.empty())
    out += R"(,"version":)" + json::quote(resource.service_version);
  out += R"(},"spans":[)";
  out += spans;
  out += "]}]}]}";
}

std::string encode_protobuf(const Resource& resource, std::span<const Span> spans) {
  std::string body, out;
  for (const Span& s : spans) append_span_protobuf(body, s);
  wrap_protobuf(resource, body, out);
  return out;
}

std::string encode_json(const Resource& resource, std::span<const Span> spans) {
  std::string body, out;
  for (const Span& s : spans) {
    if (!body.empty()) body += ',';
    append_span_json(body, s);
  }
  wrap_json(resource, body, out);
  return out;
}

}  // namespace toolbridge::otel
