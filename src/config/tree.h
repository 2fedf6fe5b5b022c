#pragma once
// One tree for both config formats, so validation is written once and every node knows where it
// was written. Internal to the config component.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace toolbridge::config {

struct Mark {
  int line = 0;  // 1-based; 0 when unknown
  int column = 0;
};

struct Entry;
struct Node {
  enum class Kind { kNull, kScalar, kList, kMap };
  Kind kind = Kind::kNull;
  Mark mark;
  std::string scalar;  // JSON numbers and booleans keep their source spelling
  std::vector<Node> items;
  std::vector<Entry> entries;  // file order; duplicate keys are kept so they can be reported
};
struct Entry {
  std::string key;
  Mark key_mark;
  Node value;
};

// Throws ConfigError "SOURCE:LINE:COL: PATH: MESSAGE" (position and path left out when unknown).
[[noreturn]] void throw_config_error(const std::string& source, Mark mark, std::string_view path,
                                     std::string_view message);

// Bounds on a YAML document with its aliases expanded (each use of an alias counts again), so an
// alias bomb is a config error rather than the gateway running out of memory.
inline constexpr std::size_t kMaxYamlNodes = 100'000;
inline constexpr std::size_t kMaxYamlTextBytes = 16 * 1024 * 1024;  // keys and scalars
inline constexpr int kMaxYamlDepth = 64;

// Each throws ConfigError with the position of the first syntax error.
Node parse_yaml(const std::string& text, const std::string& source);
// JSONC as Cursor and VS Code write it: comments and trailing commas are accepted.
Node parse_json(std::string_view text, const std::string& source);

}  // namespace toolbridge::config
