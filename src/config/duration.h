#pragma once
// Human-written durations and byte sizes as they appear in config files ("30s", "4MiB").
#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace toolbridge::config {

// Accepts a number with a unit: "250ms", "30s", "2m", "1h", fractions ("1.5s"), and Go-style
// sequences ("1h30m", "1m30s"). A bare number ("30", "0.5") means seconds, because that is what
// other MCP clients' configs write. Fractions of a millisecond round to the nearest millisecond.
// Returns nullopt for anything else: empty, signs, spaces, unknown units, or values past
// std::chrono::milliseconds' range.
std::optional<std::chrono::milliseconds> parse_duration(std::string_view text);

// The longest duration a config key accepts: 30 days. Longer ones overflow the clock's
// nanoseconds once added to "now" (2562048h is the int64 limit), and no timeout means that.
inline constexpr std::chrono::milliseconds kMaxConfigDuration = std::chrono::hours(720);

// The shortest form parse_duration reads back exactly: "250ms", "30s", "1.5s", "1m30s", "2h".
std::string format_duration(std::chrono::milliseconds d);

// Accepts a byte count with an optional unit, case-insensitive:
//   "512", "512B"               bytes (a bare number must be whole)
//   "64KiB", "4MiB", "1GiB", "1TiB"  binary, powers of 1024: what buffer limits usually mean
//   "64KB", "4MB", "1GB", "1TB"      decimal, powers of 1000: the SI meaning of the prefix
// Fractions with a unit ("1.5MiB") round to the nearest byte. Returns nullopt for anything
// else, including a bare "4M" (ambiguous between the two) and values past size_t.
std::optional<std::size_t> parse_size(std::string_view text);

// The largest unit that divides the value exactly, binary first: "4MiB", "64KiB", "4MB", "1023"
// (bytes); parse_size reads it back to the same value.
std::string format_size(std::size_t bytes);

}  // namespace toolbridge::config
