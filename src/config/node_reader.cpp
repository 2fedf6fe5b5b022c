#include "config/node_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>

#include "config/duration.h"
#include "config/suggestion.h"

namespace toolbridge::config {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

std::string join_path(std::string_view path, std::string_view key) {
  return path.empty() ? std::string(key) : fmt::format("{}.{}", path, key);
}

void NodeReader::fail(Mark mark, std::string_view path, std::string_view message) const {
  throw_config_error(source_, mark, path, message);
}

std::string NodeReader::describe(const Node& n) const {
  switch (n.kind) {
    case Node::Kind::kNull:
      return "nothing";
    case Node::Kind::kList:
      return std::string(list_noun());
    case Node::Kind::kMap:
      return std::string(map_noun());
    case Node::Kind::kScalar:
      break;
  }
  if (n.scalar.size() > 40) return fmt::format("'{}...'", n.scalar.substr(0, 40));
  return fmt::format("'{}'", n.scalar);
}

bool NodeReader::check_key(const Entry& e, std::string_view path,
                           std::span<const std::string_view> known, bool lenient, Seen& seen,
                           std::span<const std::string_view> also_accepted) const {
  const auto has = [&e](std::span<const std::string_view> keys) {
    return std::find(keys.begin(), keys.end(), e.key) != keys.end();
  };
  if (!has(known) && !has(also_accepted)) {
    auto suggestion = closest(e.key, known);
    if (lenient && suggestion) {
      // Short keys are too easily near something of another tool's ("dev" vs "env").
      const bool only_case_differs = edit_distance(e.key, *suggestion) == 0;
      if (suggestion->size() < 5 && !only_case_differs) suggestion.reset();
    }
    if (lenient && !suggestion) return false;
    if (suggestion)
      fail(e.key_mark, path,
           fmt::format("unknown key '{}' (did you mean '{}'?)", e.key, *suggestion));
    fail(e.key_mark, path,
         fmt::format("unknown key '{}'; expected one of: {}", e.key, join_words(known)));
  }
  auto [it, inserted] = seen.emplace(e.key, e.key_mark);
  if (!inserted)
    fail(e.key_mark, path,
         fmt::format("duplicate key '{}' (first at line {})", e.key, it->second.line));
  return true;
}

const std::vector<Entry>& NodeReader::entries(const Node& n, std::string_view path) const {
  static const std::vector<Entry> kNone;
  if (n.kind == Node::Kind::kNull) return kNone;
  if (n.kind != Node::Kind::kMap)
    fail(n.mark, path, fmt::format("expected {}, got {}", map_noun(), describe(n)));
  return n.entries;
}

const std::vector<Node>& NodeReader::items(const Node& n, std::string_view path) const {
  static const std::vector<Node> kNone;
  if (n.kind == Node::Kind::kNull) return kNone;
  if (n.kind != Node::Kind::kList)
    fail(n.mark, path, fmt::format("expected {}, got {}", list_noun(), describe(n)));
  return n.items;
}

const std::string& NodeReader::text(const Node& n, std::string_view path) const {
  if (n.kind == Node::Kind::kNull)
    fail(n.mark, path, "expected a value (write \"\" for an empty string)");
  if (n.kind != Node::Kind::kScalar)
    fail(n.mark, path, fmt::format("expected a string, got {}", describe(n)));
  // "\u0000" would silently cut an argument or variable short at exec time.
  if (n.scalar.find('\0') != std::string::npos)
    fail(n.mark, path, "must not contain a NUL character");
  return n.scalar;
}

bool NodeReader::boolean(const Node& n, std::string_view path) const {
  if (n.kind == Node::Kind::kScalar) {
    static constexpr std::array<std::string_view, 4> kTrue{"true", "True", "yes", "on"};
    static constexpr std::array<std::string_view, 4> kFalse{"false", "False", "no", "off"};
    if (std::find(kTrue.begin(), kTrue.end(), n.scalar) != kTrue.end()) return true;
    if (std::find(kFalse.begin(), kFalse.end(), n.scalar) != kFalse.end()) return false;
  }
  fail(n.mark, path, fmt::format("expected true or false, got {}", describe(n)));
}

Duration NodeReader::duration(const Node& n, std::string_view path, bool allow_zero) const {
  if (n.kind == Node::Kind::kScalar) {
    if (auto d = parse_duration(n.scalar)) {
      if (d->count() == 0 && !allow_zero) fail(n.mark, path, "must be longer than 0");
      if (*d > kMaxConfigDuration) {
        fail(n.mark, path,
             fmt::format("{} is longer than the limit of {} (30 days)", n.scalar,
                         format_duration(kMaxConfigDuration)));
      }
      return *d;
    }
  }
  fail(n.mark, path, fmt::format("expected a duration like 30s or 500ms, got {}", describe(n)));
}

std::size_t NodeReader::size(const Node& n, std::string_view path) const {
  if (n.kind == Node::Kind::kScalar) {
    if (auto bytes = parse_size(n.scalar)) {
      if (*bytes == 0) fail(n.mark, path, "must be at least 1 byte");
      return *bytes;
    }
  }
  fail(n.mark, path,
       fmt::format("expected a size like 4MiB, 64KiB or 512 (bytes), got {}", describe(n)));
}

std::size_t NodeReader::count(const Node& n, std::string_view path) const {
  if (n.kind == Node::Kind::kScalar) {
    std::size_t value = 0;
    const char* end = n.scalar.data() + n.scalar.size();
    auto [ptr, ec] = std::from_chars(n.scalar.data(), end, value);
    if (ec == std::errc() && ptr == end && value >= 1) return value;
  }
  fail(n.mark, path, fmt::format("expected a whole number of at least 1, got {}", describe(n)));
}

std::size_t NodeReader::zero_or_count(const Node& n, std::string_view path, std::size_t max) const {
  if (n.kind == Node::Kind::kScalar) {
    std::size_t value = 0;
    const char* end = n.scalar.data() + n.scalar.size();
    auto [ptr, ec] = std::from_chars(n.scalar.data(), end, value);
    if (ec == std::errc() && ptr == end && value <= max) return value;
  }
  fail(n.mark, path, fmt::format("expected a whole number from 0 to {}, got {}", max, describe(n)));
}

std::string_view NodeReader::one_of(const Node& n, std::string_view path,
                                    std::span<const std::string_view> choices) const {
  const std::string& value = text(n, path);
  for (std::string_view choice : choices) {
    if (choice == value) return choice;
  }
  std::string message = fmt::format("expected one of {}, got '{}'", join_words(choices), value);
  if (auto suggestion = closest(value, choices))
    message += fmt::format(" (did you mean '{}'?)", *suggestion);
  fail(n.mark, path, message);
}

}  // namespace toolbridge::config
