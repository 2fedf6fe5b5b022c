#pragma once
// A span as the gateway exports it over OTLP: ids, a name, a kind, times, attributes and a
// status. Attribute keys are string literals (static storage): a span built on the call path
// copies no key.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace toolbridge::otel {

using TraceId = std::array<std::uint8_t, 16>;
using SpanId = std::array<std::uint8_t, 8>;

// OTLP's SpanKind and Status.code values.
enum class SpanKind : std::uint8_t { kInternal = 1, kServer = 2, kClient = 3 };
enum class StatusCode : std::uint8_t { kUnset = 0, kOk = 1, kError = 2 };

struct Attribute {
  using Value = std::variant<std::string, std::int64_t, double, bool>;
  std::string_view key;  // a literal
  Value value;
};

struct Span {
  TraceId trace_id{};
  SpanId span_id{};
  SpanId parent_id{};  // all zero: a root span
  std::string name;
  SpanKind kind = SpanKind::kInternal;
  std::uint64_t start_ns = 0;  // Unix epoch, nanoseconds
  std::uint64_t end_ns = 0;
  std::vector<Attribute> attributes;
  StatusCode status = StatusCode::kUnset;
  std::string status_message;  // with kError

  // Out of line: inlined, GCC 12 warns of an uninitialised variant member (a false positive).
  void add(std::string_view key, std::string value);
  void add(std::string_view key, std::string_view value) { add(key, std::string(value)); }
  void add(std::string_view key, const char* value) { add(key, std::string(value)); }
  void add(std::string_view key, std::int64_t value);
  void add(std::string_view key, double value);
  void add(std::string_view key, bool value);
};

// What every exported span shares (OTLP Resource and InstrumentationScope).
struct Resource {
  std::string service_name = "toolbridge";
  std::string service_version;
  std::string instance_id;  // service.instance.id: the gateway's id, or host:pid
};

bool is_zero(const TraceId& id);
bool is_zero(const SpanId& id);
// Lowercase hex, as W3C traceparent and OTLP/JSON write ids.
std::string hex(const TraceId& id);
std::string hex(const SpanId& id);

}  // namespace toolbridge::otel
