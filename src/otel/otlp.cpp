#include "otel/otlp.h"

#include <fmt/format.h>

#include <cmath>

#include "json/envelope.h"
#include "json/utf8.h"
#include "otel/protobuf.h"

namespace toolbridge::otel {

namespace {

namespace pb = protobuf;

// Field numbers of opentelemetry/proto (trace/v1, common/v1, resource/v1, collector/trace/v1).
enum : std::uint32_t {
  kRequestResourceSpans = 1,
  kResourceSpansResource = 1,
  kResourceSpansScopeSpans = 2,
  kResourceAttributes = 1,
  kScopeSpansScope = 1,
  kScopeSpansSpans = 2,
  kScopeName = 1,
  kScopeVersion = 2,
  kSpanTraceId = 1,
  kSpanSpanId = 2,
  kSpanParentSpanId = 4,
  kSpanName = 5,
  kSpanKind = 6,
  kSpanStart = 7,
  kSpanEnd = 8,
  kSpanAttributes = 9,
  kSpanStatus = 15,
  kStatusMessage = 2,
  kStatusCode = 3,
  kKeyValueKey = 1,
  kKeyValueValue = 2,
  kAnyString = 1,
  kAnyBool = 2,
  kAnyInt = 3,
  kAnyDouble = 4,
};

// Protobuf strings must be UTF-8 (a collector may refuse the whole batch otherwise), and so must
// JSON text: invalid bytes (a server's message, say) become U+FFFD.
void put_text(std::string& out, std::uint32_t field, std::string_view text) {
  if (json::is_valid_utf8(text)) return pb::put_bytes_field(out, field, text);
  pb::put_bytes_field(out, field, json::replace_invalid_utf8(text));
}
std::string quoted(std::string_view text) {
  return json::quote(json::is_valid_utf8(text) ? std::string(text)
                                               : json::replace_invalid_utf8(text));
}

std::string_view bytes_of(const auto& id) {
  return {reinterpret_cast<const char*>(id.data()), id.size()};
}

void put_attribute(std::string& out, std::uint32_t field, std::string_view key,
                   const Attribute::Value& value) {
  pb::Nested kv(out, field);
  pb::put_bytes_field(out, kKeyValueKey, key);
  pb::Nested any(out, kKeyValueValue);
  if (const auto* s = std::get_if<std::string>(&value)) {
    put_text(out, kAnyString, *s);
  } else if (const auto* i = std::get_if<std::int64_t>(&value)) {
    pb::put_varint_field(out, kAnyInt, static_cast<std::uint64_t>(*i));
  } else if (const auto* d = std::get_if<double>(&value)) {
    pb::put_double_field(out, kAnyDouble, *d);
  } else {
    pb::put_varint_field(out, kAnyBool, std::get<bool>(value) ? 1 : 0);
  }
}

void put_span(std::string& out, const Span& s) {
  pb::Nested span(out, kScopeSpansSpans);
  pb::put_bytes_field(out, kSpanTraceId, bytes_of(s.trace_id));
  pb::put_bytes_field(out, kSpanSpanId, bytes_of(s.span_id));
  if (!is_zero(s.parent_id)) pb::put_bytes_field(out, kSpanParentSpanId, bytes_of(s.parent_id));
  put_text(out, kSpanName, s.name);
  pb::put_varint_field(out, kSpanKind, static_cast<std::uint8_t>(s.kind));
  pb::put_fixed64_field(out, kSpanStart, s.start_ns);
  pb::put_fixed64_field(out, kSpanEnd, s.end_ns);
  for (const Attribute& a : s.attributes) put_attribute(out, kSpanAttributes, a.key, a.value);
  if (s.status != StatusCode::kUnset) {
    pb::Nested status(out, kSpanStatus);
    if (!s.status_message.empty()) put_text(out, kStatusMessage, s.status_message);
    pb::put_varint_field(out, kStatusCode, static_cast<std::uint8_t>(s.status));
  }
}

std::vector<Attribute> resource_attributes(const Resource& r) {
  std::vector<Attribute> out{{"service.name", r.service_name}};
  if (!r.service_version.empty()) out.push_back({"service.version", r.service_version});
  if (!r.instance_id.empty()) out.push_back({"service.instance.id", r.instance_id});
  return out;
}

void json_value(std::string& out, const Attribute::Value& value) {
  if (const auto* s = std::get_if<std::string>(&value)) {
    out += R"({"stringValue":)" + quoted(*s) + "}";
  } else if (const auto* i = std::get_if<std::int64_t>(&value)) {
    out += fmt::format(R"({{"intValue":"{}"}})", *i);
  } else if (const auto* d = std::get_if<double>(&value)) {
    // JSON has no NaN or infinity; OTLP/JSON would want them as strings, a span never has them.
    out += fmt::format(R"({{"doubleValue":{}}})", std::isfinite(*d) ? *d : 0.0);
  } else {
    out += std::get<bool>(value) ? R"({"boolValue":true})" : R"({"boolValue":false})";
  }
}

void json_attributes(std::string& out, const std::vector<Attribute>& attributes) {
  out += R"("attributes":[)";
  bool first = true;
  for (const Attribute& a : attributes) {
    if (!first) out += ',';
    first = false;
    out += R"({"key":)" + json::quote(a.key) + R"(,"value":)";
    json_value(out, a.value);
    out += '}';
  }
  out += ']';
}

void json_span(std::string& out, const Span& s) {
  out += fmt::format(R"({{"traceId":"{}","spanId":"{}",)", hex(s.trace_id), hex(s.span_id));
  if (!is_zero(s.parent_id)) out += fmt::format(R"("parentSpanId":"{}",)", hex(s.parent_id));
  out += R"("name":)" + quoted(s.name);
  out += fmt::format(R"(,"kind":{},"startTimeUnixNano":"{}","endTimeUnixNano":"{}",)",
                     static_cast<int>(s.kind), s.start_ns, s.end_ns);
  json_attributes(out, s.attributes);
  if (s.status != StatusCode::kUnset) {
    out += fmt::format(R"(,"status":{{"code":{})", static_cast<int>(s.status));
    if (!s.status_message.empty()) out += R"(,"message":)" + quoted(s.status_message);
    out += '}';
  }
  out += '}';
}

}  // namespace

void append_span_protobuf(std::string& out, const Span& span) {
  put_span(out, span);
}

void append_span_json(std::string& out, const Span& span) {
  json_span(out, span);
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
    for (const Attribute& a : resource_attributes(resource))
      put_attribute(resource_spans, kResourceAttributes, a.key, a.value);
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
