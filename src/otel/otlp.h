#pragma once
// The OTLP/HTTP request bodies of a batch of spans: ExportTraceServiceRequest in the protobuf
// encoding (opentelemetry/proto/collector/trace/v1) or in OTLP's JSON encoding (ids as hex,
// 64-bit integers as strings, enums as numbers).
#include <span>
#include <string>
#include <string_view>

#include "otel/span.h"

namespace toolbridge::otel {

inline constexpr std::string_view kScopeNameText = "toolbridge";  // InstrumentationScope.name

std::string encode_protobuf(const Resource& resource, std::span<const Span> spans);
std::string encode_json(const Resource& resource, std::span<const Span> spans);

// The same in two steps, so spans can be encoded one by one as they end and sent later: a span
// as the protobuf `spans` field of ScopeSpans (the fields concatenate), or as one JSON object
// (joined with ','); then the request around the concatenated spans, written into `out`.
void append_span_protobuf(std::string& out, const Span& span);
void append_span_json(std::string& out, const Span& span);
void wrap_protobuf(const Resource& resource, std::string_view spans, std::string& out);
void wrap_json(const Resource& resource, std::string_view spans, std::string& out);

}  // namespace toolbridge::otel
