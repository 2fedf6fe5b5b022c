#include "json/parse.h"

#include <boost/json/parse.hpp>

namespace toolbridge::json {

boost::json::parse_options parse_options() {
  boost::json::parse_options options;
  options.max_depth = kMaxDepth;
  return options;
}

boost::json::value parse(std::string_view text, boost::system::error_code& ec) {
  // parse(..., ec) still throws std::bad_alloc; nothing else escapes.
  return boost::json::parse(text, ec, {}, parse_options());
}

}  // namespace toolbridge::json
