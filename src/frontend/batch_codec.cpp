#include "frontend/batch_codec.h"

#include <fmt/format.h>

#include <boost/json.hpp>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <msgpack.hpp>

#include "json/envelope.h"
#include "json/parse.h"
#include "json/utf8.h"

namespace toolbridge::frontend {

namespace bj = boost::json;
using call::Fault;

Encoding encoding_of(std::string_view content_type) {
  if (content_type.empty() || content_type.find("application/json") != std::string_view::npos) {
    return Encoding::kJson;
  }
  for (std::string_view type :
       {"application/msgpack", "application/x-msgpack", "application/vnd.msgpack"}) {
    if (content_type.find(type) != std::string_view::npos) return Encoding::kMsgpack;
  }
  return Encoding::kUnsupported;
}

std::string_view content_type(Encoding e) {
  return e == Encoding::kMsgpack ? "application/msgpack" : "application/json";
}

namespace {

// A MessagePack value as JSON: binary and extension values have no JSON form and are refused;
// invalid UTF-8 in strings becomes U+FFFD (the gateway's rule for every string it passes on).
base::Expected<bj::value> from_msgpack(const msgpack::object& o) {
  switch (o.type) {
    case msgpack::type::NIL:
      return nullptr;
    case msgpack::type::BOOLEAN:
      return o.via.boolean;
    case msgpack::type::POSITIVE_INTEGER:
      return o.via.u64;
    case msgpack::type::NEGATIVE_INTEGER:
      return o.via.i64;
    case msgpack::type::FLOAT32:
    case msgpack::type::FLOAT64:
      if (!std::isfinite(o.via.f64))
        return base::fail("a float is NaN or infinite (JSON has no such number)");
      return o.via.f64;
    case msgpack::type::STR: {
      const std::string_view s(o.via.str.ptr, o.via.str.size);
      if (json::is_valid_utf8(s)) return bj::string(s);
      return bj::string(json::replace_invalid_utf8(s));
    }
    case msgpack::type::ARRAY: {
      bj::array a;
      a.reserve(o.via.array.size);
      for (std::uint32_t i = 0; i < o.via.array.size; ++i) {
        base::Expected<bj::value> item = from_msgpack(o.via.array.ptr[i]);
        if (!item) return item;
        a.push_back(std::move(*item));
      }
      return a;
    }
    case msgpack::type::MAP: {
      bj::object m;
      m.reserve(o.via.map.size);
      for (std::uint32_t i = 0; i < o.via.map.size; ++i) {
        const auto& kv = o.via.map.ptr[i];
        if (kv.key.type != msgpack::type::STR) return base::fail("a map key is not a string");
        base::Expected<bj::value> key = from_msgpack(kv.key);
        if (!key) return key;
        base::Expected<bj::value> value = from_msgpack(kv.val);
        if (!value) return value;
        m[key->as_string()] = std::move(*value);
      }
      return m;
    }
    case msgpack::type::BIN:
      return base::fail("binary values are not accepted (send text as strings)");
    case msgpack::type::EXT:
      return base::fail("extension values are not accepted");
  }
  return base::fail("an unknown MessagePack type");
}

base::Expected<bj::value> decode_msgpack(std::string_view body) {
  // The same depth bound as JSON; counts bounded by the body's size (max_body_bytes).
  const auto n = static_cast<std::size_t>(body.size());
  const msgpack::unpack_limit limit(n, n, n, n, n, json::kMaxDepth);
  std::size_t offset = 0;
  try {
    const msgpack::object_handle handle =
        msgpack::unpack(body.data(), body.size(), offset, nullptr, nullptr, limit);
    if (offset != body.size())
      return base::fail("the body is not one MessagePack value (bytes follow it)");
    base::Expected<bj::value> v = from_msgpack(handle.get());
    if (!v) return base::fail("the body is not usable MessagePack: " + v.error());
    return v;
  } catch (const std::exception& e) {
    return base::fail(
        std::string("the body is not MessagePack (or is nested deeper than 128 levels): ") +
        e.what());
  }
}

}  // namespace

base::Expected<bj::value> decode_body(Encoding e, std::string_view body) {
  if (e == Encoding::kMsgpack) return decode_msgpack(body);
  boost::system::error_code ec;
  bj::value v = json::parse(body, ec);
  if (ec)
    return base::fail("the body is not JSON (or is nested deeper than 128 levels): " +
                      ec.message());
  return v;
}

std::string_view outcome_name(Fault f) {
  if (f == Fault::kNone) return "ok";
  // An isError result the gateway wrote (schema under enforce): tool_error as before; its
  // class (agent) tells it apart.
  if (f == Fault::kInvalidCall) return "tool_error";
  return call::to_string(f);
}

namespace {

// 64 significand bits: a double (53) times 1000 (10) is exact, so its rounding below is too.
static_assert(std::numeric_limits<long double>::digits >= 64, "append_ms needs x87 long double");

// `ms` in thousandths, rounded to nearest, ties to even, from the exact product.
std::uint64_t exact_thousandths(double ms) {
  const long double thousandths = static_cast<long double>(ms) * 1000;
  const long double whole = std::floor(thousandths);
  const long double rest = thousandths - whole;  // exact: the low bits of `thousandths`
  auto n = static_cast<std::uint64_t>(whole);
  if (rest > 0.5L || (rest == 0.5L && (n & 1) != 0)) ++n;  // to nearest, ties to even
  return n;
}

// The same in double arithmetic where it cannot differ: below 2^32 the product is within 2^-21
// of the exact one, so one farther than 1e-6 from a half rounds as the exact one does. Timings
// almost always are; the x87 path above costs about twice as many instructions.
std::uint64_t thousandths(double ms) {
  const double product = ms * 1000;
  if (product >= 4294967296.0) return exact_thousandths(ms);
  auto n = static_cast<std::uint64_t>(product);
  const double rest = product - static_cast<double>(n);  // exact
  if (std::abs(rest - 0.5) <= 1e-6) return exact_thousandths(ms);
  return rest > 0.5 ? n + 1 : n;
}

}  // namespace

void append_ms(std::string& out, double ms) {
  // Timings are never negative and stay far below 1e12 ms; anything else takes the general path.
  if (!(ms >= 0 && ms < 1e12)) {
    out += fmt::format("{:.3f}", ms);
    return;
  }
  const std::uint64_t n = thousandths(ms);
  char digits[24];
  const auto end = std::to_chars(digits, digits + sizeof digits, n / 1000).ptr;
  out.append(digits, end);
  const auto frac = static_cast<unsigned>(n % 1000);
  const char tail[4] = {'.', static_cast<char>('0' + frac / 100),
                        static_cast<char>('0' + frac / 10 % 10),
                        static_cast<char>('0' + frac % 10)};
  out.append(tail, sizeof tail);
}

namespace {

// What the answer takes from a response the server answered: its result or its error object.
struct Answer {
  std::string_view result;
  std::string_view error;
};

Answer answer_of(const call::Result& r) {
  if (r.response.empty()) return {};
  if (const std::string_view known = call::known_result(r); !known.empty()) return {known, {}};
  const json::Envelope env = json::parse_envelope(r.response);
  return {env.result.in(r.response), env.error.in(r.response)};
}

void append_entry(std::string& out, const BatchEntry& e) {
  out += R"({"tool":)";
  append_quoted(out, e.tool);
  out += ',';
  append_outcome(out, e);
  out += '}';
}

}  // namespace

void append_outcome(std::string& out, const BatchEntry& e) {
  out += R"("outcome":")";
  out += outcome_name(e.result.fault);
  out += R"(","fault":")";
  out += call::to_string(call::fault_class(e.result.fault));
  out += '"';
  // The server's own answer: its result (tool results, isError ones included) or its error
  // object, as it sent it.
  const Answer answer = answer_of(e.result);
  if (!answer.result.empty()) {
    out += R"(,"result":)";
    out += answer.result;
  } else if (!answer.error.empty()) {
    out += R"(,"error":)";
    out += answer.error;
  } else {
    out += R"(,"error":{"code":)";
    out += std::to_string(call::error_code(e.result.fault));
    out += R"(,"message":)";
    append_quoted(out, e.result.why);
    out += '}';
  }
  out += R"(,"timing":{"queue_ms":)";
  append_ms(out, e.queue_ms);
  out += R"(,"execution_ms":)";
  append_ms(out, e.execution_ms);
  out += R"(,"total_ms":)";
  append_ms(out, e.total_ms);
  out += '}';
}

namespace {

using Packer = msgpack::packer<msgpack::sbuffer>;

void pack_str(Packer& p, std::string_view s) {
  p.pack_str(static_cast<std::uint32_t>(s.size()));
  p.pack_str_body(s.data(), static_cast<std::uint32_t>(s.size()));
}

void pack_json(Packer& p, const bj::value& v) {
  switch (v.kind()) {
    case bj::kind::null:
      p.pack_nil();
      return;
    case bj::kind::bool_:
      v.get_bool() ? p.pack_true() : p.pack_false();
      return;
    case bj::kind::int64:
      p.pack_int64(v.get_int64());
      return;
    case bj::kind::uint64:
      p.pack_uint64(v.get_uint64());
      return;
    case bj::kind::double_:
      p.pack_double(v.get_double());
      return;
    case bj::kind::string:
      pack_str(p, v.get_string());
      return;
    case bj::kind::array:
      p.pack_array(static_cast<std::uint32_t>(v.get_array().size()));
      for (const auto& x : v.get_array()) pack_json(p, x);
      return;
    case bj::kind::object:
      p.pack_map(static_cast<std::uint32_t>(v.get_object().size()));
      for (const auto& [k, x] : v.get_object()) {
        pack_str(p, k);
        pack_json(p, x);
      }
      return;
  }
}

// The server's raw JSON (a result or an error object) as MessagePack; it was checked when it
// came in, so a parse failure only means it was cut short: packed as a string then.
void pack_raw(Packer& p, std::string_view raw) {
  boost::system::error_code ec;
  const bj::value v = json::parse(raw, ec);
  if (ec) return pack_str(p, raw);
  pack_json(p, v);
}

std::string encode_msgpack(const std::vector<BatchEntry>& entries, double total_ms) {
  msgpack::sbuffer buffer;
  Packer p(buffer);
  p.pack_map(2);
  pack_str(p, "results");
  p.pack_array(static_cast<std::uint32_t>(entries.size()));
  for (const auto& e : entries) {
    p.pack_map(5);
    pack_str(p, "tool");
    pack_str(p, e.tool);
    pack_str(p, "outcome");
    pack_str(p, outcome_name(e.result.fault));
    pack_str(p, "fault");
    pack_str(p, call::to_string(call::fault_class(e.result.fault)));
    const Answer answer = answer_of(e.result);
    if (!answer.result.empty() || !answer.error.empty()) {
      const bool ok = !answer.result.empty();
      pack_str(p, ok ? "result" : "error");
      pack_raw(p, ok ? answer.result : answer.error);
    } else {
      pack_str(p, "error");
      p.pack_map(2);
      pack_str(p, "code");
      p.pack_int(call::error_code(e.result.fault));
      pack_str(p, "message");
      pack_str(p, e.result.why);
    }
    pack_str(p, "timing");
    p.pack_map(3);
    pack_str(p, "queue_ms");
    p.pack_double(e.queue_ms);
    pack_str(p, "execution_ms");
    p.pack_double(e.execution_ms);
    pack_str(p, "total_ms");
    p.pack_double(e.total_ms);
  }
  pack_str(p, "timing");
  p.pack_map(1);
  pack_str(p, "total_ms");
  p.pack_double(total_ms);
  return std::string(buffer.data(), buffer.size());
}

}  // namespace

std::string encode_response(Encoding encoding, const std::vector<BatchEntry>& entries,
                            double total_ms) {
  if (encoding == Encoding::kMsgpack) return encode_msgpack(entries, total_ms);
  std::size_t size = 64;
  for (const auto& e : entries) size += e.result.response.size() + e.result.why.size() + 160;
  std::string out;
  out.reserve(size);
  out += R"({"results":[)";
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (i) out += ',';
    append_entry(out, entries[i]);
  }
  out += R"(],"timing":{"total_ms":)";
  append_ms(out, total_ms);
  out += "}}";
  return out;
}

}  // namespace toolbridge::frontend
