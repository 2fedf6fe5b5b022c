#pragma once
// UTF-8 checks for bytes that came from outside (servers, clients). The gateway's rule: invalid
// UTF-8 (and a lone surrogate escape) inside a JSON string is replaced by U+FFFD, so whatever it
// passes on is valid JSON.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace toolbridge::json {

// Length (1-4) of the well-formed UTF-8 sequence at the start of `bytes`, 0 if it is not one
// (overlong forms, surrogates and code points past U+10FFFF are not well-formed).
std::size_t utf8_sequence_length(std::string_view bytes);

bool is_valid_utf8(std::string_view bytes);

// `bytes` with every byte that starts no well-formed sequence replaced by U+FFFD.
std::string replace_invalid_utf8(std::string_view bytes);

// The value of four hex digits (a \u escape's), nullopt if `four` is not exactly that.
std::optional<unsigned> hex4(std::string_view four);

// JSON text with invalid UTF-8 replaced as above and every \u escape of a UTF-16 surrogate
// without its other half replaced by \ufffd (same length), so Boost.JSON accepts what the
// envelope scanner flagged (Envelope::needs_repair).
std::string repair_strings(std::string_view json_text);

}  // namespace toolbridge::json
