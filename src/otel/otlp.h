#pragma once
// The OTLP/HTTP request bodies of a batch of spans: ExportTraceServiceRequest in the protobuf
// encoding (opentelemetry/proto/collector/trace/v1) or in OTLP's JSON encoding (ids as hex,
// 64-bit integers as strings, enums as numbers).
#include <span>
#include <string>

#include "otel/span.h"

namespace toolbridge::otel {

inline constexpr std::string_view kScopeNameText = "toolbridge";  // InstrumentationScope.name

std::string encode_protobuf(const Resource& resource, std::span<const Span> spans);
std::string encode_json(const Resource& resource, std::span<const Span> spans);

}  // namespace toolbridge::otel
