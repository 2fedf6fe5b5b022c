#pragma once
// Spans written straight into their OTLP encoding (protobuf, or OTLP's JSON), with no span object
// in between: begin() with the span's ids, name, kind and times, then its attributes, then end()
// with its status. The call path writes its spans this way (gateway/call_spans.cpp): nothing is
// allocated per attribute, and the bytes written are the bytes the exporter queues.
#include <boost/container/small_vector.hpp>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "otel/span.h"

namespace toolbridge::otel {

enum class Encoding : std::uint8_t { kProtobuf, kJson };

// What a span is before its attributes.
struct SpanHead {
  TraceId trace_id{};
  SpanId span_id{};
  SpanId parent_id{};  // all zero: a root span
  std::string_view name;
  SpanKind kind = SpanKind::kInternal;
  std::uint64_t start_ns = 0;  // Unix epoch, nanoseconds
  std::uint64_t end_ns = 0;
};

// Appends spans to `out`: in protobuf, each as the `spans` field of ScopeSpans (the fields
// concatenate); in JSON, each as one object followed by ','. Text (names, values, the status
// message) that is not UTF-8 is written with U+FFFD in place of its invalid bytes, as OTLP
// requires; keys are literals and written as they are.
class SpanWriter {
 public:
  SpanWriter(std::string& out, Encoding encoding) : out_(out), encoding_(encoding) {}

  void begin(const SpanHead& head);
  void add(std::string_view key, std::string_view value);
  void add(std::string_view key, const char* value) { add(key, std::string_view(value)); }
  void add(std::string_view key, std::int64_t value);
  void add(std::string_view key, double value);
  void add(std::string_view key, bool value);
  // `message` is written with kError only.
  void end(StatusCode status = StatusCode::kUnset, std::string_view message = {});

  // Where each span ended in `out`, in the order written.
  std::span<const std::size_t> ends() const { return {ends_.data(), ends_.size()}; }
  void clear() { ends_.clear(); }

 private:
  void json_key(std::string_view key);  // JSON: `{"key":KEY,"value":` (after a ',' if not first)

  std::string& out_;
  const Encoding encoding_;
  std::size_t body_at_ = 0;      // protobuf: where the open span's body starts
  bool first_attribute_ = true;  // JSON: no ',' before the first attribute
  // Where each finished span ends; a call's few spans need no allocation.
  boost::container::small_vector<std::size_t, 4> ends_;
};

// A span object written with a writer (batch and parse requests, tests).
void write_span(SpanWriter& writer, const Span& span);

}  // namespace toolbridge::otel
