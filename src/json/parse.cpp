#include "json/parse.h"

#include <boost/json/parse.hpp>
#include <cmath>
#include <limits>

namespace toolbridge::json {

namespace {
// Boost.JSON reads 1e999 as infinity and 0e999 as NaN (0 times an infinite power of ten), and
// would write them back as `Infinity` and `NaN`, which are not JSON: a server's schema with such
// a bound would make every client's tools/list unreadable, and a call's arguments could reach
// its server as no JSON at all. They become the largest double and zero.
void clamp_non_finite(boost::json::value& v) {
  switch (v.kind()) {
    case boost::json::kind::double_:
      if (std::isinf(v.get_double())) {
        const double max = std::numeric_limits<double>::max();
        v = v.get_double() > 0 ? max : -max;
      } else if (std::isnan(v.get_double())) {
        v = 0.0;  // JSON has no NaN: only a zero with a huge exponent reads as one
      }
      return;
    case boost::json::kind::array:
      for (auto& e : v.get_array()) clamp_non_finite(e);
      return;
    case boost::json::kind::object:
      for (auto& m : v.get_object()) clamp_non_finite(m.value());
      return;
    default:
      return;
  }
}
}  // namespace

boost::json::parse_options parse_options() {
  boost::json::parse_options options;
  options.max_depth = kMaxDepth;
  return options;
}

boost::json::value parse(std::string_view text, boost::system::error_code& ec) {
  // parse(..., ec) still throws std::bad_alloc; nothing else escapes.
  boost::json::value v = boost::json::parse(text, ec, {}, parse_options());
  if (!ec) clamp_non_finite(v);  // depth is bounded by kMaxDepth, so is this recursion
  return v;
}

}  // namespace toolbridge::json
