#pragma once
// Every Boost.JSON parse of bytes from outside goes through here: never throws, and applies the
// gateway's one JSON depth limit (the envelope scanner applies the same one).
#include <boost/json/parse_options.hpp>
#include <boost/json/value.hpp>
#include <string_view>

#include "json/envelope.h"

namespace toolbridge::json {

boost::json::parse_options parse_options();

// The value of `text`; null with `ec` set if it is not JSON, holds invalid UTF-8 or is nested
// deeper than kMaxDepth. Numbers past the range of a double become ±DBL_MAX (never infinity,
// which would serialise as non-JSON).
boost::json::value parse(std::string_view text, boost::system::error_code& ec);

}  // namespace toolbridge::json
