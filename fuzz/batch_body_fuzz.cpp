// libFuzzer target: POST /v1/batch's plain JSON reader against the DOM path it stands in for. A
// body the plain reader takes must be one the DOM path takes too, with the same calls: the same
// tools, timeouts and options, and arguments of the same JSON value.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "frontend/batch.h"
#include "frontend/batch_codec.h"
#include "json/parse.h"

namespace {

namespace bj = boost::json;
namespace frontend = toolbridge::frontend;
namespace json = toolbridge::json;

constexpr std::size_t kMaxCalls = 256;

void require(bool ok) {
  if (!ok) std::abort();
}

// The same JSON value. Numbers may differ by one ULP: the DOM path writes a long number back as
// a double, which Boost.JSON 1.81 reads again to within one ULP, not always to the nearest.
bool same_value(const bj::value& a, const bj::value& b) {
  if (a.is_double() && b.is_double()) {
    const double x = a.as_double();
    const double y = b.as_double();
    return x == y || std::nextafter(x, y) == y;
  }
  if (a.is_array() && b.is_array()) {
    const auto& x = a.as_array();
    const auto& y = b.as_array();
    if (x.size() != y.size()) return false;
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (!same_value(x[i], y[i])) return false;
    }
    return true;
  }
  if (a.is_object() && b.is_object()) {
    const auto& x = a.as_object();
    const auto& y = b.as_object();
    if (x.size() != y.size()) return false;
    for (const auto& [key, value] : x) {
      const bj::value* other = y.if_contains(key);
      if (!other || !same_value(value, *other)) return false;
    }
    return true;
  }
  return a == b;
}

bj::value parsed(std::string_view text) {
  boost::system::error_code ec;
  bj::value v = json::parse(text, ec);
  require(!ec);
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  frontend::BatchRequest plain;
  if (!frontend::read_plain_batch_request(text, plain, kMaxCalls)) return 0;

  const toolbridge::base::Expected<bj::value> decoded =
      frontend::decode_body(frontend::Encoding::kJson, text);
  require(decoded.ok());
  const bj::value& body = *decoded;
  frontend::BatchRequest dom;
  require(frontend::read_batch_request(body, dom, kMaxCalls).empty());

  require(plain.trajectory == dom.trajectory && plain.tenant == dom.tenant);
  require(plain.fail_fast == dom.fail_fast && plain.sequential == dom.sequential);
  require(plain.timeout == dom.timeout);
  require(plain.calls.size() == dom.calls.size());
  for (std::size_t i = 0; i < plain.calls.size(); ++i) {
    const frontend::BatchCallSpec& p = plain.calls[i];
    const frontend::BatchCallSpec& d = dom.calls[i];
    require(p.tool == d.tool && p.timeout == d.timeout && p.error == d.error);
    require(same_value(parsed(p.arguments), parsed(d.arguments)));
  }
  return 0;
}
