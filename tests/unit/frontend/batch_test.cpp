#include "frontend/batch.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cstdint>
#include <random>

#include "frontend/batch_codec.h"
#include "frontend/call_run.h"
#include "json/envelope.h"
#include "json/parse.h"

namespace toolbridge::frontend {
namespace {

namespace bj = boost::json;
using call::Fault;
using call::Result;

BatchRefusal read(std::string_view text, BatchRequest& out) {
  boost::system::error_code ec;
  const bj::value v = json::parse(text, ec);
  EXPECT_FALSE(ec) << text;
  return read_batch_request(v, out, 256);
}

TEST(BatchRequest, ReadsEveryField) {
  BatchRequest r;
  const BatchRefusal refusal = read(
      R"({"calls":[{"tool":"a__b","arguments":{"x":1},"timeout_ms":250},{"tool":"c__d"}],
          "trajectory":"t-1","tenant":"run-a","mode":"fail_fast","sequential":true,
          "timeout_ms":1000})",
      r);
  ASSERT_TRUE(refusal.empty()) << refusal.message;
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[0].tool, "a__b");
  EXPECT_EQ(r.calls[0].arguments, R"({"x":1})");
  EXPECT_EQ(r.calls[0].timeout.count(), 250);
  EXPECT_EQ(r.calls[1].arguments, "{}");
  EXPECT_EQ(r.calls[1].timeout.count(), 0);
  EXPECT_EQ(r.trajectory, "t-1");
  EXPECT_EQ(r.tenant, "run-a");
  EXPECT_TRUE(r.fail_fast);
  EXPECT_TRUE(r.sequential);
  EXPECT_EQ(r.timeout.count(), 1000);
}

TEST(BatchRequest, AMalformedCallIsAnErrorEntryNotARefusal) {
  BatchRequest r;
  const BatchRefusal refusal = read(
      R"({"calls":[3,{"tool":""},{"tool":"a","arguments":[1]},{"tool":"a","x":1},
          {"tool":"a","timeout_ms":0},{"tool":"a","arguments":null},{"arguments":{}}]})",
      r);
  ASSERT_TRUE(refusal.empty()) << refusal.message;
  ASSERT_EQ(r.calls.size(), 7u);
  EXPECT_EQ(r.calls[0].error, R"(calls[0] must be an object {"tool": NAME, "arguments": {...}})");
  EXPECT_EQ(r.calls[1].error,
            "calls[1].tool must be a non-empty string (the tool's name, server__tool)");
  EXPECT_EQ(r.calls[2].error, "calls[2].arguments must be an object");
  EXPECT_EQ(r.calls[3].error, "calls[3]: unknown key 'x' (a call has tool, arguments, timeout_ms, id)");
  EXPECT_NE(r.calls[4].error.find("calls[4].timeout_ms must be more than 0"), std::string::npos);
  EXPECT_TRUE(r.calls[5].error.empty()) << "null arguments mean {}";
  EXPECT_EQ(r.calls[6].error, "calls[6].tool is missing (the tool's name, server__tool)");
}

TEST(BatchRequest, ACallsIdIsItsIdempotencyKey) {
  BatchRequest r;
  const BatchRefusal refusal = read(
      R"({"calls":[{"tool":"a","id":"k-1"},{"tool":"a","id":7},{"tool":"a","id":"has space"},
          {"tool":"a","id":""}]})",
      r);
  ASSERT_TRUE(refusal.empty()) << refusal.message;
  ASSERT_EQ(r.calls.size(), 4u);
  EXPECT_EQ(r.calls[0].id, "k-1");
  EXPECT_TRUE(r.calls[0].error.empty()) << r.calls[0].error;
  for (std::size_t i = 1; i < 4; ++i) {
    EXPECT_EQ(r.calls[i].error.rfind("calls[" + std::to_string(i) + "].id must be a string of "
                                     "1-256 ASCII characters", 0),
              0u)
        << r.calls[i].error;
  }
}

TEST(BatchRequest, TheRequestsOwnFaultsAreRefusedWithTheirStatus) {
  struct Case {
    const char* body;
    int status;
    const char* message_part;
  };
  const Case cases[] = {
      {"[]", 400, "the body must be an object"},
      {"{}", 400, "calls is missing"},
      {R"({"calls":[]})", 400, "calls is empty"},
      {R"({"calls":"x"})", 400, "calls must be an array"},
      {R"({"calls":[{"tool":"a"}],"mode":"fast"})", 400, "mode must be"},
      {R"({"calls":[{"tool":"a"}],"sequential":1})", 400, "sequential must be true or false"},
      {R"({"calls":[{"tool":"a"}],"tenant":"a b"})", 400, "tenant must be 1-128 characters"},
      {R"({"calls":[{"tool":"a"}],"trajectory":"/x"})", 400, "trajectory: character 1"},
      {R"({"calls":[{"tool":"a"}],"timeout_ms":"5"})", 400, "timeout_ms must be a number"},
      {R"({"calls":[{"tool":"a"}],"timeout_ms":1e12})", 400, "at most 2592000000"},
      {R"({"calls":[{"tool":"a"}],"other":1})", 400, "unknown key 'other'"},
  };
  for (const Case& c : cases) {
    BatchRequest r;
    const BatchRefusal refusal = read(c.body, r);
    EXPECT_EQ(refusal.status, c.status) << c.body;
    EXPECT_NE(refusal.message.find(c.message_part), std::string::npos)
        << c.body << ": " << refusal.message;
  }
}

TEST(BatchRequest, MoreCallsThanTheLimitIs413) {
  std::string body = R"({"calls":[)";
  for (std::size_t i = 0; i <= 256; ++i)
    body += std::string(i ? "," : "") + R"({"tool":"a"})";
  body += "]}";
  BatchRequest r;
  const BatchRefusal refusal = read(body, r);
  EXPECT_EQ(refusal.status, 413);
  EXPECT_EQ(refusal.code, "too_many_calls");
  EXPECT_EQ(refusal.message, "a batch carries at most 256 calls (gateway.batch_max_calls); this one has 257: split it");
}

TEST(BatchCodec, EncodingByContentType) {
  EXPECT_EQ(encoding_of(""), Encoding::kJson);
  EXPECT_EQ(encoding_of("application/json; charset=utf-8"), Encoding::kJson);
  EXPECT_EQ(encoding_of("application/msgpack"), Encoding::kMsgpack);
  EXPECT_EQ(encoding_of("application/x-msgpack"), Encoding::kMsgpack);
  EXPECT_EQ(encoding_of("application/vnd.msgpack"), Encoding::kMsgpack);
  EXPECT_EQ(encoding_of("text/plain"), Encoding::kUnsupported);
}

std::vector<BatchEntry> sample_entries() {
  std::vector<BatchEntry> e(4);
  e[0].tool = "a__ok";
  e[0].result =
      Result{Fault::kNone,
             R"({"jsonrpc":"2.0","id":0,"result":{"content":[{"type":"text","text":"hi"}]}})",
             {}};
  e[1].tool = "a__err";
  e[1].result =
      Result{Fault::kServerError,
             R"({"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"boom"}})", "boom"};
  e[2].tool = "a__late";
  e[2].result = Result::failure(Fault::kTimeout, "a__late timed out \"quoted\"");
  e[3].tool = "a__shed";
  e[3].result = Result::failure(Fault::kShed, "a is overloaded");
  // Not whole numbers: msgpack-cxx packs a double with an integral value as an integer.
  for (auto& x : e) {
    x.queue_ms = 0.5;
    x.execution_ms = 1.25;
    x.total_ms = 1.75;
  }
  return e;
}

TEST(BatchCodec, JsonSplicesServerAnswersAndNamesGatewayFaults) {
  const std::string out = encode_response(Encoding::kJson, sample_entries(), 2.5);
  boost::system::error_code ec;
  const bj::value v = json::parse(out, ec);
  ASSERT_FALSE(ec) << out;
  const auto& results = v.at("results").as_array();
  ASSERT_EQ(results.size(), 4u);
  EXPECT_EQ(results[0].at("outcome"), "ok");
  EXPECT_EQ(results[0].at("result").at("content").at(0).at("text"), "hi");
  EXPECT_EQ(results[0].at("timing").at("execution_ms").as_double(), 1.25);
  EXPECT_EQ(results[1].at("outcome"), "server_error");
  EXPECT_EQ(results[1].at("error").at("code").as_int64(), -32000);
  EXPECT_EQ(results[2].at("outcome"), "timeout");
  EXPECT_EQ(results[2].at("error").at("message"), "a__late timed out \"quoted\"");
  EXPECT_EQ(results[3].at("outcome"), "shed");
  EXPECT_EQ(v.at("timing").at("total_ms").as_double(), 2.5);
}

TEST(BatchCodec, MsgpackRoundTripsToTheSameDocumentAsJson) {
  const std::string json_out = encode_response(Encoding::kJson, sample_entries(), 2.5);
  const std::string packed = encode_response(Encoding::kMsgpack, sample_entries(), 2.5);
  const base::Expected<bj::value> from_msgpack = decode_body(Encoding::kMsgpack, packed);
  ASSERT_TRUE(from_msgpack) << from_msgpack.error();
  boost::system::error_code ec;
  EXPECT_EQ(*from_msgpack, json::parse(json_out, ec));
}

// A result whose place its writer knew (a cache hit) is taken from there: the same bytes a scan
// finds. A span that a later rewrite of the response left stale is not trusted.
TEST(BatchCodec, AKnownResultSpanGivesTheEntryAScanGives) {
  const std::string hit =
      R"({"jsonrpc":"2.0","id":12,"result":{"content":[],"_meta":{"toolbridge/cache":{}}}})";
  const json::Span span = json::parse_envelope(hit).result;
  ASSERT_FALSE(span.empty());
  const auto entry = [](const std::string& response, json::Span at) {
    BatchEntry e;
    e.tool = "a__b";
    e.result = Result{Fault::kNone, response, {}};
    e.result.result_at = at;
    e.queue_ms = 0.5;
    return std::vector<BatchEntry>{e};
  };
  const std::string rewritten[] = {
      hit,
      json::with_id(hit, json::parse_envelope(hit).id, "123456"),
      json::with_id(hit, json::parse_envelope(hit).id, "34"),  // same length: still framed
      R"({"jsonrpc":"2.0","id":12,"result":{"content":[],"_meta":{"toolbridge/cache":{}},"x":1}})",
      R"({"jsonrpc":"2.0","id":12,"error":{"code":-32000,"message":"boom"}})",
      R"({"jsonrpc":"2.0","id":12,"result":{}})",
  };
  for (const std::string& response : rewritten) {
    for (const Encoding encoding : {Encoding::kJson, Encoding::kMsgpack}) {
      EXPECT_EQ(encode_response(encoding, entry(response, span), 1.5),
                encode_response(encoding, entry(response, json::Span{}), 1.5))
          << response;
    }
  }
}

TEST(BatchCodec, MsgpackBodiesThatCannotBeJsonAreRefused) {
  // fixarray of one bin8 value.
  std::string problem = decode_body(Encoding::kMsgpack, std::string("\x91\xc4\x01x", 4)).error();
  EXPECT_NE(problem.find("binary values are not accepted"), std::string::npos) << problem;
  problem = decode_body(Encoding::kMsgpack, std::string(200, '\x91') + "\xc0").error();
  EXPECT_NE(problem.find("nested deeper than 128"), std::string::npos) << problem;
  problem = decode_body(Encoding::kMsgpack, "\xc0\xc0").error();
  EXPECT_NE(problem.find("bytes follow it"), std::string::npos) << problem;
  // A truncated map: every prefix of a valid body is refused, never crashes.
  const std::string packed = encode_response(Encoding::kMsgpack, sample_entries(), 2.5);
  for (std::size_t n = 0; n < packed.size(); ++n) {
    const auto prefix = decode_body(Encoding::kMsgpack, std::string_view(packed).substr(0, n));
    EXPECT_FALSE(prefix.ok()) << "prefix of " << n << " bytes";
    EXPECT_FALSE(prefix.error().empty()) << "prefix of " << n << " bytes";
  }
}

// ---- A JSON body read from its text: the DOM path is the reference ----

// What decode_body + read_batch_request make of `body`: nullopt if the body is refused or any entry
// is in error (the plain reader must then decline it).
std::optional<BatchRequest> read_with_dom(std::string_view body, std::size_t max_calls) {
  const base::Expected<bj::value> v = decode_body(Encoding::kJson, body);
  if (!v) return std::nullopt;
  BatchRequest r;
  if (!read_batch_request(*v, r, max_calls).empty()) return std::nullopt;
  for (const auto& c : r.calls) {
    if (!c.error.empty()) return std::nullopt;
  }
  return r;
}

// The plain reader reads `body` as the DOM path does, or declines it; returns whether it read.
bool agrees_with_dom(std::string_view body, std::size_t max_calls = 256) {
  BatchRequest plain;
  const bool read = read_plain_batch_request(body, plain, max_calls);
  const std::optional<BatchRequest> dom = read_with_dom(body, max_calls);
  if (!read) return false;
  EXPECT_TRUE(dom) << "read a body the DOM path refuses: " << body;
  if (!dom) return true;
  EXPECT_EQ(plain.trajectory, dom->trajectory) << body;
  EXPECT_EQ(plain.tenant, dom->tenant) << body;
  EXPECT_EQ(plain.fail_fast, dom->fail_fast) << body;
  EXPECT_EQ(plain.sequential, dom->sequential) << body;
  EXPECT_EQ(plain.timeout, dom->timeout) << body;
  EXPECT_EQ(plain.calls.size(), dom->calls.size()) << body;
  for (std::size_t i = 0; i < std::min(plain.calls.size(), dom->calls.size()); ++i) {
    const BatchCallSpec& p = plain.calls[i];
    const BatchCallSpec& d = dom->calls[i];
    EXPECT_EQ(p.tool, d.tool) << body;
    EXPECT_EQ(p.timeout, d.timeout) << body;
    EXPECT_TRUE(p.error.empty());
    // The body's own bytes, the same value as the DOM's serialisation.
    boost::system::error_code ec;
    const bj::value args = json::parse(p.arguments, ec);
    EXPECT_FALSE(ec) << p.arguments;
    EXPECT_EQ(args, json::parse(d.arguments, ec)) << body;
    EXPECT_TRUE(args.is_object()) << p.arguments;
  }
  return true;
}

std::string nested(std::size_t levels) {
  return std::string(levels, '[') + std::string(levels, ']');
}

TEST(BatchPlainRead, ReadsWellFormedBodiesLikeTheDom) {
  const std::string bodies[] = {
      R"({"calls":[{"tool":"fixture__lookup","arguments":{"query":"cpu","delay_ms":0}}]})",
      // Python's json.dumps: spaces after separators.
      R"({"calls": [{"tool": "a__b", "arguments": {"x": [1, 2.5, -3e2, true, null]}}], "mode": "all"})",
      " \n{ \"calls\" : [ { \"tool\" : \"a\" } , {\"arguments\":null,\"tool\":\"b\"} ] } \t",
      R"({"calls":[{"tool":"a__b","arguments":{"x":1},"timeout_ms":250},{"tool":"c__d"}],
          "trajectory":"t-1","tenant":"run-a","mode":"fail_fast","sequential":true,
          "timeout_ms":1000})",
      R"({"sequential":false,"calls":[{"timeout_ms":2592000000,"tool":"a"}]})",
      // Escapes, non-ASCII, a surrogate pair: the arguments pass as written.
      R"({"calls":[{"tool":"a","arguments":{"s":"tab\t \"q\" \u00e9 é 😀 \ud83d\ude00 \/"}}]})",
      // Escaped member names are read by their value (the body's) or passed on (the arguments').
      R"({"c\u0061lls":[{"tool":"a","arguments":{"k\u0065y":1}}]})",
      R"({"calls":[{"tool":"a","arguments":{"x":)" + nested(124) + "}}]}",  // 128 levels
      R"({"calls":[{"tool":"a","arguments":{"big":18446744073709551616,"f":1.0E+2}}]})",
  };
  for (const std::string& body : bodies) {
    EXPECT_TRUE(agrees_with_dom(body)) << "declined: " << body;
  }
}

TEST(BatchPlainRead, DeclinesWhatTheDomPathMustAnswer) {
  const std::string bodies[] = {
      "",
      "[]",
      "{}",
      R"({"calls":[]})",
      R"({"calls":{}})",
      R"({"calls":[{"tool":"a"}],"other":1})",
      R"({"calls":[{"tool":"a"}],"calls":[{"tool":"b"}]})",  // duplicates
      R"({"calls":[{"tool":"a","tool":"b"}]})",
      R"({"calls":[{"tool":"a","arguments":[1]}]})",
      R"({"calls":[{"tool":"a","arguments":"x"}]})",
      R"({"calls":[{"tool":""}]})",
      R"({"calls":[{"arguments":{}}]})",
      R"({"calls":[3]})",
      R"({"calls":[{"tool":"a","timeout_ms":0}]})",
      R"({"calls":[{"tool":"a","timeout_ms":2592000001}]})",
      R"({"calls":[{"tool":"a","timeout_ms":2.5}]})",  // read by the DOM path: a fraction
      R"({"calls":[{"tool":"a\u0062"}]})",             // read by the DOM path: an escape
      R"({"calls":[{"t\u006fol":"a"}]})",              // in a call's member name too
      R"({"calls":[{"tool":"a","arguments":{},"arguments":{"x":1}}]})",
      R"({"calls":[{"tool":"a","timeout_ms":5,"timeout_ms":6}]})",
      R"({"calls":[{"tool":"a"},{}]})",
      R"({"calls":[{"tool":"a"}],"mode":"some"})",
      R"({"calls":[{"tool":"a"}],"trajectory":"../x"})",
      R"({"calls":[{"tool":"a"}],"tenant":"a b"})",
      R"({"calls":[{"tool":"a","arguments":{"x":)" + nested(125) + "}}]}",  // 129 levels
      R"({"calls":[{"tool":"a","arguments":{"s":"\ud83d"}}]})",             // lone surrogates
      R"({"calls":[{"tool":"a","arguments":{"s":"\ude00\ud83d"}}]})",
      R"({"calls":[{"tool":"a","arguments":{"s":"\ud83d\u0041"}}]})",
      "{\"calls\":[{\"tool\":\"a\",\"arguments\":{\"s\":\"\xff\"}}]}",  // invalid UTF-8
      "{\"calls\":[{\"tool\":\"a\",\"arguments\":{\"s\":\"\xed\xa0\x80\"}}]}",
      R"({"calls":[{"tool":"a","arguments":{"n":1e9999999999}}]})",
      R"({"calls":[{"tool":"a"}]} x)",
  };
  for (const std::string& body : bodies) {
    EXPECT_FALSE(agrees_with_dom(body)) << "read: " << body;
  }
  std::string many = R"({"calls":[)";
  for (int i = 0; i < 4; ++i) many += std::string(i ? "," : "") + R"({"tool":"a"})";
  many += "]}";
  EXPECT_TRUE(agrees_with_dom(many, 4));
  EXPECT_FALSE(agrees_with_dom(many, 3)) << "more calls than the limit is the DOM path's 413";
}

// Every prefix of a body and every byte of it replaced: the plain reader never reads what the DOM
// path would refuse or read differently.
TEST(BatchPlainRead, AgreesWithTheDomAtEveryByte) {
  const std::string body =
      R"({"calls":[{"tool":"a__b","arguments":{"q":"x\u00e9\ud83d\ude00","n":[1,{"d":-0.5e1}]},)"
      R"("timeout_ms":25},{"tool":"c"}],"tenant":"t","mode":"all","sequential":true})";
  ASSERT_TRUE(agrees_with_dom(body));
  for (std::size_t n = 0; n < body.size(); ++n) agrees_with_dom(body.substr(0, n));
  for (std::size_t i = 0; i < body.size(); ++i) {
    for (const char c : {'{', '}', '[', ']', '"', '\\', ',', ':', ' ', '0', 'u', '\x80', '\x01'}) {
      std::string mutated = body;
      mutated[i] = c;
      agrees_with_dom(mutated);
    }
  }
}

// Bytes changed at random, a few at a time, in bodies that mix every form the reader handles.
TEST(BatchPlainRead, AgreesWithTheDomOnRandomDamage) {
  const std::string bodies[] = {
      R"({"calls":[{"tool":"a","arguments":{"x":[[{"y":"\u00e9\ud83d\ude00"}]],"z":1e5}},)"
      R"({"timeout_ms":7,"tool":"b","arguments":null}],"timeout_ms":9,"trajectory":"t"})",
      "{ \"calls\" : [ { \"tool\" : \"a\" , \"arguments\" : { \"s\" : \"\xc3\xa9 \\\" \" } } ] }",
  };
  const char alphabet[] = "{}[]\",:\\ u0189abdefntrl-.eE\x80\xbf\xc3\xed\xf0\x01";
  std::mt19937_64 random(7);
  for (const std::string& body : bodies) {
    ASSERT_TRUE(agrees_with_dom(body)) << body;
    for (int round = 0; round < 20'000; ++round) {
      std::string damaged = body;
      for (int k = 1 + static_cast<int>(random() % 3); k > 0; --k) {
        damaged[random() % damaged.size()] = alphabet[random() % (sizeof alphabet - 1)];
      }
      agrees_with_dom(damaged);
    }
  }
}

TEST(BatchCodec, MillisecondsAreWrittenAsFmtWritesThem) {
  const auto check = [](double ms) {
    std::string out;
    append_ms(out, ms);
    EXPECT_EQ(out, fmt::format("{:.3f}", ms)) << ms;
  };
  // Ties in binary (odd multiples of 1/16) go to even, like fmt.
  for (double ms : {0.0, 0.0625, 0.1875, 1.0625, 0.0005, 0.00025, 0.3125, 999.9995, 1e11, 1e12,
                    12.3455, -0.5, -1.0625, 1e300}) {
    check(ms);
  }
  // Timings come as nanoseconds over 1e6.
  for (std::int64_t ns = 0; ns < 2'000'000; ns += 7) check(static_cast<double>(ns) / 1e6);
  std::mt19937_64 random(42);
  for (int i = 0; i < 200'000; ++i) {
    check(static_cast<double>(random() % 100'000'000'000'000ULL) / 1e6);
    check(std::uniform_real_distribution<double>(0, 1e6)(random));
  }
}

TEST(BatchCodec, QuotesLikeTheEnvelopeBuilders) {
  for (std::string_view s : {"", "fixture__lookup", "a\"b", "back\\slash", "tab\t", "é", "\x7f"}) {
    std::string out;
    append_quoted(out, s);
    EXPECT_EQ(out, json::quote(s));
  }
}

TEST(BatchToolCall, CheckedArgumentsGiveTheMembersAScanWouldFind) {
  CallScope scope;
  scope.key = "batch/1";
  scope.traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
  for (std::string_view tool : {"fixture__lookup", "we\"ird", "é"}) {
    for (std::string_view args :
         {"{}", R"({"query":"cpu","delay_ms":0})", R"({ "a" : [1, {}] })"}) {
      const auto checked =
          make_tool_call(3, tool, CheckedArguments{args}, scope, std::chrono::milliseconds(5));
      const auto scanned = make_tool_call(3, tool, args, scope, std::chrono::milliseconds(5));
      EXPECT_EQ(checked->params, scanned->params);
      ASSERT_EQ(checked->members.size(), scanned->members.size());
      for (std::size_t i = 0; i < checked->members.size(); ++i) {
        EXPECT_EQ(checked->members[i].name, scanned->members[i].name);
        EXPECT_EQ(checked->members[i].value.offset, scanned->members[i].value.offset);
        EXPECT_EQ(checked->members[i].value.length, scanned->members[i].value.length);
      }
      EXPECT_EQ(checked->method, "tools/call");
      EXPECT_EQ(checked->id, "3");
      EXPECT_EQ(checked->trajectory, scanned->trajectory);
      EXPECT_EQ(checked->meta, scanned->meta);
      EXPECT_EQ(checked->requested_timeout, scanned->requested_timeout);
    }
  }
}

}  // namespace
}  // namespace toolbridge::frontend
