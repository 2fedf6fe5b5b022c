#pragma once
// The canonical form of a tool call's arguments, the part of a cache key that identifies what
// was asked. Two argument texts that mean the same JSON value get the same form:
//   - whitespace between tokens is dropped;
//   - object members are sorted by name (bytes of the UTF-8 name, i.e. code point order);
//     members with the same name keep their order;
//   - strings are decoded (\u00e9 and é are the same) and written back with the fewest escapes:
//     only '"', '\\' and control characters are escaped (\b \f \n \r \t, else \u00XX);
//   - numbers are normalised: an integer literal that fits 64 bits (signed or unsigned) is
//     written as it came, exactly ("-0" is "0"); any other number is read as the nearest double
//     (one too large for a double has no canonical form, one too small is 0) and, if integral
//     and at most 2^53 in magnitude, written as an integer (1.0, 1e0 and 10E-1 are all "1"),
//     else as the shortest text that reads back as the same double, in scientific notation above
//     2^53 ("40000000000000600000" and "4.00000000000006e19" are both "4.00000000000006e+19");
//     such a number written with more than 15 significant digits, which two different texts could
//     share as a double, makes the arguments uncanonical (never a wrong hit: such a call is not
//     cached). The form of a form is itself;
//   - arrays keep their order.
// Invalid JSON, invalid UTF-8 or nesting deeper than json::kMaxDepth has no canonical form.
#include <optional>
#include <string>
#include <string_view>

namespace toolbridge::cache {

std::optional<std::string> canonical_json(std::string_view text);
// Appends the canonical form of `text` to `out`; false, with `out` as it was, if it has none.
bool append_canonical_json(std::string& out, std::string_view text);

}  // namespace toolbridge::cache
