// OTLP request bodies: the protobuf ExportTraceServiceRequest walked field by field as a
// collector reads it, and the JSON encoding parsed back.
#include "otel/otlp.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cstring>

#include "otel/span_writer.h"
#include "proto_reader.h"

namespace toolbridge::otel {
namespace {

using testing::all;
using testing::fields;
using testing::one;

Span sample_span() {
  Span s;
  for (std::size_t i = 0; i < 16; ++i) s.trace_id[i] = static_cast<std::uint8_t>(i + 1);
  for (std::size_t i = 0; i < 8; ++i) s.span_id[i] = static_cast<std::uint8_t>(0xa0 + i);
  s.parent_id[7] = 9;
  s.name = "tools/call fixture__echo";
  s.kind = SpanKind::kServer;
  s.start_ns = 1'700'000'000'000'000'000ull;
  s.end_ns = s.start_ns + 1500;
  s.add("gen_ai.tool.name", "fixture__echo");
  s.add("toolbridge.result_bytes", std::int64_t{-5});
  s.add("toolbridge.cached", true);
  s.add("ratio", 0.5);
  s.status = StatusCode::kError;
  s.status_message = "timeout";
  return s;
}

std::string bytes(const auto& id) {
  return {reinterpret_cast<const char*>(id.data()), id.size()};
}

TEST(Otlp, ProtobufRequestHasResourceScopeAndSpans) {
  const Resource resource{.service_name = "toolbridge", .instance_id = "gw-1"};
  const std::vector<Span> spans{sample_span(), sample_span()};
  const std::string body = encode_protobuf(resource, spans);

  const auto request = fields(body);
  const auto resource_spans = fields(one(request, 1).bytes);
  const auto res = fields(one(resource_spans, 1).bytes);
  const auto res_attrs = all(res, 1);
  ASSERT_EQ(res_attrs.size(), 2u);
  const auto service = fields(res_attrs[0].bytes);
  EXPECT_EQ(one(service, 1).bytes, "service.name");
  EXPECT_EQ(one(fields(one(service, 2).bytes), 1).bytes, "toolbridge");

  const auto scope_spans = fields(one(resource_spans, 2).bytes);
  EXPECT_EQ(one(fields(one(scope_spans, 1).bytes), 1).bytes, "toolbridge");
  const auto encoded = all(scope_spans, 2);
  ASSERT_EQ(encoded.size(), 2u);

  const Span want = sample_span();
  const auto span = fields(encoded[0].bytes);
  EXPECT_EQ(one(span, 1).bytes, bytes(want.trace_id));
  EXPECT_EQ(one(span, 2).bytes, bytes(want.span_id));
  EXPECT_EQ(one(span, 4).bytes, bytes(want.parent_id));
  EXPECT_EQ(one(span, 5).bytes, want.name);
  EXPECT_EQ(one(span, 6).value, 2u);  // SPAN_KIND_SERVER
  EXPECT_EQ(one(span, 7).wire, 1);    // fixed64
  EXPECT_EQ(one(span, 7).value, want.start_ns);
  EXPECT_EQ(one(span, 8).value, want.end_ns);
  const auto attrs = all(span, 9);
  ASSERT_EQ(attrs.size(), 4u);
  const auto a0 = fields(attrs[0].bytes);
  EXPECT_EQ(one(a0, 1).bytes, "gen_ai.tool.name");
  EXPECT_EQ(one(fields(one(a0, 2).bytes), 1).bytes, "fixture__echo");  // string_value
  const auto a1 = fields(one(fields(attrs[1].bytes), 2).bytes);
  EXPECT_EQ(static_cast<std::int64_t>(one(a1, 3).value), -5);  // int_value, two's complement
  const auto a2 = fields(one(fields(attrs[2].bytes), 2).bytes);
  EXPECT_EQ(one(a2, 2).value, 1u);  // bool_value
  const auto a3 = fields(one(fields(attrs[3].bytes), 2).bytes);
  double d = 0;
  const std::uint64_t raw = one(a3, 4).value;
  std::memcpy(&d, &raw, sizeof d);
  EXPECT_EQ(d, 0.5);  // double_value
  const auto status = fields(one(span, 15).bytes);
  EXPECT_EQ(one(status, 2).bytes, "timeout");
  EXPECT_EQ(one(status, 3).value, 2u);  // STATUS_CODE_ERROR
}

TEST(Otlp, ARootSpanHasNoParentField) {
  Span s = sample_span();
  s.parent_id = {};
  s.status = StatusCode::kUnset;
  const std::vector<Span> spans{s};
  const auto scope_spans =
      fields(one(fields(one(fields(encode_protobuf({}, spans)), 1).bytes), 2).bytes);
  const auto span = fields(one(scope_spans, 2).bytes);
  EXPECT_TRUE(all(span, 4).empty());
  EXPECT_TRUE(all(span, 15).empty());
}

TEST(Otlp, JsonUsesHexIdsAndStringIntegers) {
  const std::vector<Span> spans{sample_span()};
  const auto v = boost::json::parse(encode_json({.service_name = "tb"}, spans));
  const auto& rs = v.at("resourceSpans").at(0);
  EXPECT_EQ(rs.at("resource").at("attributes").at(0).at("value").at("stringValue"), "tb");
  const auto& span = rs.at("scopeSpans").at(0).at("spans").at(0);
  EXPECT_EQ(span.at("traceId"), "0102030405060708090a0b0c0d0e0f10");
  EXPECT_EQ(span.at("spanId"), "a0a1a2a3a4a5a6a7");
  EXPECT_EQ(span.at("parentSpanId"), "0000000000000009");
  EXPECT_EQ(span.at("kind"), 2);
  EXPECT_EQ(span.at("startTimeUnixNano"), "1700000000000000000");
  EXPECT_EQ(span.at("attributes").at(1).at("value").at("intValue"), "-5");
  EXPECT_EQ(span.at("attributes").at(2).at("value").at("boolValue"), true);
  EXPECT_EQ(span.at("attributes").at(3).at("value").at("doubleValue"), 0.5);
  EXPECT_EQ(span.at("status").at("code"), 2);
  EXPECT_EQ(span.at("status").at("message"), "timeout");
}

TEST(Otlp, HostileTextStaysInsideItsField) {
  Span s = sample_span();
  s.name = std::string("a\"b\\c\n\0d", 8);
  s.attributes = {{"k", std::string("\xff\"}")}};
  const std::vector<Span> spans{s};
  const auto v = boost::json::parse(encode_json({}, spans));
  const auto& span = v.at("resourceSpans").at(0).at("scopeSpans").at(0).at("spans").at(0);
  EXPECT_EQ(span.at("name").as_string(), s.name);
  // Invalid UTF-8 (a collector would refuse the batch) becomes U+FFFD.
  EXPECT_EQ(span.at("attributes").at(0).at("value").at("stringValue").as_string(),
            "\xef\xbf\xbd\"}");
  const auto pb = fields(
      one(fields(one(fields(one(fields(encode_protobuf({}, spans)), 1).bytes), 2).bytes), 2).bytes);
  EXPECT_EQ(one(pb, 5).bytes, s.name);
  EXPECT_EQ(one(fields(one(fields(one(pb, 9).bytes), 2).bytes), 1).bytes, "\xef\xbf\xbd\"}");
}

TEST(Otlp, ASpanWrittenAttributeByAttributeReadsBackWhole) {
  // Lengths past one varint byte: a long name and a long value.
  Span s = sample_span();
  s.name = std::string(300, 'n');
  s.add("toolbridge.trajectory", std::string(200, 't'));
  s.add("negative", std::int64_t{-1});
  std::string bytes;
  SpanWriter w(bytes, Encoding::kProtobuf);
  write_span(w, s);
  write_span(w, sample_span());
  ASSERT_EQ(w.ends().size(), 2u);
  EXPECT_EQ(w.ends().back(), bytes.size());
  const auto back = testing::read_spans(bytes);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].name, s.name);
  EXPECT_EQ(back[0].trace_id, s.trace_id);
  EXPECT_EQ(back[0].parent_id, s.parent_id);
  EXPECT_EQ(back[0].start_ns, s.start_ns);
  EXPECT_EQ(back[0].status, StatusCode::kError);
  EXPECT_EQ(back[0].status_message, "timeout");
  ASSERT_EQ(back[0].attributes.size(), s.attributes.size());
  for (std::size_t i = 0; i < s.attributes.size(); ++i) {
    EXPECT_EQ(back[0].attributes[i].key, s.attributes[i].key);
    EXPECT_EQ(back[0].attributes[i].value, s.attributes[i].value) << s.attributes[i].key;
  }
  EXPECT_EQ(back[1].name, sample_span().name);
}

TEST(Otlp, EmptyTextIsWrittenAsEmpty) {
  std::string bytes;
  SpanWriter w(bytes, Encoding::kProtobuf);
  w.begin({.trace_id = sample_span().trace_id, .span_id = sample_span().span_id});  // no name
  w.add("toolbridge.worker", std::string_view{});  // a default view: its data is null
  w.end();
  const auto back = testing::read_spans(bytes);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].name, "");
  ASSERT_EQ(back[0].attributes.size(), 1u);
  EXPECT_EQ(std::get<std::string>(back[0].attributes[0].value), "");
}

}  // namespace
}  // namespace toolbridge::otel
