#pragma once
// "did you mean": the known word a typo most likely meant, for config errors.
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace toolbridge::config {

// Levenshtein distance, ignoring ASCII case.
std::size_t edit_distance(std::string_view a, std::string_view b);

// The candidate a typo most likely meant (the first of the nearest), or nullopt when none is
// near enough. Short words get less slack so "env" does not "correct" to everything three letters
// long. Case differences alone always count as a typo.
std::optional<std::string_view> closest(std::string_view word,
                                        std::span<const std::string_view> candidates);

// "a, b, c": the words an error lists as expected.
std::string join_words(std::span<const std::string_view> words);

}  // namespace toolbridge::config
