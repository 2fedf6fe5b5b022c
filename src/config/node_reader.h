#pragma once
// Reads config tree nodes as typed values. Every failure throws ConfigError at the node's
// position, worded for the format being read ("a mapping" in YAML, "an object" in JSON).
#include <cstddef>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "config/tree.h"

namespace toolbridge::config {

// Characters of server names and tool-name separators.
bool is_name_char(char c);
// "path.key", or "key" at the top level.
std::string join_path(std::string_view path, std::string_view key);

class NodeReader {
 public:
  // Keys already read in one mapping, with where they were written.
  using Seen = std::map<std::string, Mark, std::less<>>;

  NodeReader(std::string source, bool json) : source_(std::move(source)), json_(json) {}

  const std::string& source() const { return source_; }
  // JSON files are shared with other MCP clients, whose keys are ignored rather than errors.
  bool json() const { return json_; }

  [[noreturn]] void fail(Mark mark, std::string_view path, std::string_view message) const;

  std::string_view map_noun() const { return json_ ? "an object" : "a mapping"; }
  std::string_view list_noun() const { return json_ ? "an array" : "a list"; }
  // What a node is, for "expected X, got Y".
  std::string describe(const Node& n) const;

  // Returns whether `e` is a key this mapping understands, after rejecting repeats. Unknown keys
  // are errors, except under `lenient`, where they belong to another tool; even there a near
  // miss of one of ours ("comand") is reported, since silently dropping it would hide the typo.
  // `also_accepted` keys are understood but not suggested or listed.
  bool check_key(const Entry& e, std::string_view path, std::span<const std::string_view> known,
                 bool lenient, Seen& seen,
                 std::span<const std::string_view> also_accepted = {}) const;

  // A null node reads as an empty mapping: "servers:" with nothing under it means no servers.
  const std::vector<Entry>& entries(const Node& n, std::string_view path) const;
  const std::vector<Node>& items(const Node& n, std::string_view path) const;

  const std::string& text(const Node& n, std::string_view path) const;
  bool boolean(const Node& n, std::string_view path) const;
  Duration duration(const Node& n, std::string_view path, bool allow_zero) const;
  std::size_t size(const Node& n, std::string_view path) const;
  std::size_t count(const Node& n, std::string_view path) const;
  std::size_t zero_or_count(const Node& n, std::string_view path, std::size_t max = 10) const;
  std::string_view one_of(const Node& n, std::string_view path,
                          std::span<const std::string_view> choices) const;

 private:
  std::string source_;
  bool json_;
};

}  // namespace toolbridge::config
