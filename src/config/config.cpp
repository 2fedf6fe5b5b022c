#include "config/config.h"

#include <boost/url/parse.hpp>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <boost/json/parse.hpp>
#include <boost/json/parse_options.hpp>
#include <boost/json/parser.hpp>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <utility>

#include "config/duration.h"

namespace toolbridge::config {
namespace {

// ---------------------------------------------------------------------------------------------
// One tree for both formats, so validation is written once and every node knows where it was.

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

[[noreturn]] void throw_config_error(const std::string& source, Mark mark, std::string_view path,
                                     std::string_view message) {
  std::string where =
      mark.line > 0 ? fmt::format("{}:{}:{}", source, mark.line, mark.column) : source;
  if (path.empty()) throw ConfigError(fmt::format("{}: {}", where, message));
  throw ConfigError(fmt::format("{}: {}: {}", where, path, message));
}

// ---------------------------------------------------------------------------------------------
// YAML

Mark yaml_mark(const YAML::Mark& m) {
  if (m.is_null()) return {};
  return {m.line + 1, m.column + 1};
}

Node from_yaml(const YAML::Node& y, const std::string& source) {
  Node n;
  n.mark = yaml_mark(y.Mark());
  switch (y.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      break;
    case YAML::NodeType::Scalar:
      n.kind = Node::Kind::kScalar;
      n.scalar = y.Scalar();
      break;
    case YAML::NodeType::Sequence:
      n.kind = Node::Kind::kList;
      for (const YAML::Node& item : y) n.items.push_back(from_yaml(item, source));
      break;
    case YAML::NodeType::Map:
      n.kind = Node::Kind::kMap;
      for (const auto& kv : y) {
        if (!kv.first.IsScalar())
          throw_config_error(source, yaml_mark(kv.first.Mark()), "", "a key must be plain text");
        Entry e{kv.first.Scalar(), yaml_mark(kv.first.Mark()), from_yaml(kv.second, source)};
        // yaml-cpp marks an empty value ("key:") at the next token, often on the next line.
        if (e.value.kind == Node::Kind::kNull) e.value.mark = e.key_mark;
        n.entries.push_back(std::move(e));
      }
      break;
  }
  return n;
}

Node parse_yaml(const std::string& text, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw_config_error(source, yaml_mark(e.mark), "", "invalid YAML: " + e.msg);
  }
  return from_yaml(root, source);
}

// ---------------------------------------------------------------------------------------------
// JSON. Boost.JSON validates (and reports syntax errors by offset); a small scanner over the
// now-known-good text then builds the tree, because Boost.JSON values carry no positions and
// silently keep only the last of duplicate keys.

class JsonTree {
 public:
  JsonTree(std::string_view text, const std::string& source) : text_(text), source_(source) {
    line_starts_.push_back(0);
    for (std::size_t i = 0; i < text_.size(); ++i) {
      if (text_[i] == '\n') line_starts_.push_back(i + 1);
    }
  }

  Node parse() {
    boost::json::parse_options options;
    // Cursor and VS Code write JSONC: comments and trailing commas are common in mcp.json.
    options.allow_comments = true;
    options.allow_trailing_commas = true;
    options.max_depth = 64;
    boost::json::parser parser({}, options);
    boost::system::error_code ec;
    const std::size_t consumed = parser.write(text_.data(), text_.size(), ec);
    if (ec) {
      std::string message = "invalid JSON: " + ec.message();
      if (consumed < text_.size() && text_[consumed] > ' ' && text_[consumed] < 0x7f) {
        message += fmt::format(" at '{}'", text_[consumed]);
      }
      throw_config_error(source_, mark_at(consumed), "", message);
    }
    return value();
  }

 private:
  Mark mark_at(std::size_t offset) const {
    auto line = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset) - 1;
    return {static_cast<int>(line - line_starts_.begin()) + 1,
            static_cast<int>(offset - *line) + 1};
  }

  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }

  void skip_space() {
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos_;
      } else if (text_.substr(pos_, 2) == "//") {
        pos_ = std::min(text_.find('\n', pos_), text_.size());
      } else if (text_.substr(pos_, 2) == "/*") {
        const std::size_t end = text_.find("*/", pos_ + 2);
        pos_ = end == std::string_view::npos ? text_.size() : end + 2;
      } else {
        return;
      }
    }
  }

  std::string string_token() {
    const std::size_t begin = pos_++;
    bool escaped = false;
    while (pos_ < text_.size() && text_[pos_] != '"') {
      if (text_[pos_] == '\\') {
        escaped = true;
        ++pos_;
      }
      ++pos_;
    }
    ++pos_;
    const std::string_view token = text_.substr(begin, pos_ - begin);
    if (!escaped) return std::string(token.substr(1, token.size() - 2));
    const boost::json::value decoded = boost::json::parse(token);
    const boost::json::string& decoded_text = decoded.as_string();
    return std::string(decoded_text.data(), decoded_text.size());
  }

  Node value() {
    skip_space();
    Node n;
    n.mark = mark_at(pos_);
    const char c = peek();
    if (c == '{') {
      n.kind = Node::Kind::kMap;
      ++pos_;
      for (skip_space(); peek() == '"'; skip_space()) {
        Entry e;
        e.key_mark = mark_at(pos_);
        e.key = string_token();
        skip_space();
        ++pos_;  // ':'
        e.value = value();
        n.entries.push_back(std::move(e));
        skip_space();
        if (peek() == ',') ++pos_;
      }
      ++pos_;  // '}'
    } else if (c == '[') {
      n.kind = Node::Kind::kList;
      ++pos_;
      for (skip_space(); peek() != ']' && peek() != '\0'; skip_space()) {
        n.items.push_back(value());
        skip_space();
        if (peek() == ',') ++pos_;
      }
      ++pos_;  // ']'
    } else if (c == '"') {
      n.kind = Node::Kind::kScalar;
      n.scalar = string_token();
    } else {
      const std::size_t begin = pos_;
      while (pos_ < text_.size() &&
             std::string_view(" \t\r\n,]}/").find(text_[pos_]) == std::string_view::npos) {
        ++pos_;
      }
      n.scalar = std::string(text_.substr(begin, pos_ - begin));
      if (n.scalar != "null") n.kind = Node::Kind::kScalar;
    }
    return n;
  }

  std::string_view text_;
  const std::string& source_;
  std::vector<std::size_t> line_starts_;
  std::size_t pos_ = 0;
};

// ---------------------------------------------------------------------------------------------
// "did you mean"

std::size_t edit_distance(std::string_view a, std::string_view b) {
  const auto lower = [](char c) {
    return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  };
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      const std::size_t substitute = diagonal + (lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1);
      row[j] = std::min({above + 1, row[j - 1] + 1, substitute});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The candidate a typo most likely meant; short words get less slack so "env" does not
// "correct" to everything three letters long. Case differences alone always count as a typo.
std::optional<std::string_view> closest(std::string_view word,
                                        std::span<const std::string_view> candidates) {
  std::optional<std::string_view> best;
  std::size_t best_distance = 0;
  for (std::string_view candidate : candidates) {
    const std::size_t limit =
        std::min<std::size_t>(3, std::max<std::size_t>(1, candidate.size() / 3));
    const std::size_t d = edit_distance(word, candidate);
    if (d <= limit && (!best || d < best_distance)) {
      best = candidate;
      best_distance = d;
    }
  }
  return best;
}

std::string join_words(std::span<const std::string_view> words) {
  std::string out;
  for (std::string_view w : words) {
    if (!out.empty()) out += ", ";
    out += w;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Keys

constexpr std::array<std::string_view, 4> kTopKeys{"gateway", "toolbridge", "servers",
                                                   "mcpServers"};

constexpr std::array<std::string_view, 11> kGatewayKeys{
    "listen",       "allowed_origins",  "max_body_bytes",    "max_sessions",
    "session_idle_ttl", "start_concurrency", "tool_naming", "separator",
    "log_level",    "shutdown_grace",   "session_dir_root",
};

constexpr std::array<std::string_view, 39> kServerKeys{
    "command",         "args",           "env",          "inherit_env",
    "cwd",             "enabled",        "startup_timeout", "call_timeout",
    "tool_timeouts",   "restart_backoff", "stop_grace",  "ping_timeout",
    "max_line_bytes",  "max_in_flight",  "idempotent_tools", "max_retries",
    "breaker_threshold", "breaker_cooldown", "policy",   "min_instances",
    "max_instances",   "spares",         "target_in_flight", "checkout_timeout",
    "max_calls",       "max_age",        "max_rss_mb",   "rss_check_interval",
    "idle_ttl",        "rebind_on_exit", "keep_session_dir",
    "url",             "transport",      "type",         "headers",
    "tls_verify",      "ca_file",        "max_connections", "connect_timeout",
};
constexpr std::array<std::string_view, 3> kPolicies{"shared", "pool", "per_session"};
// Keys that only mean something for some policies, checked after the whole entry is read.
constexpr std::array<std::string_view, 2> kPoolOnlyKeys{"min_instances", "target_in_flight"};
constexpr std::array<std::string_view, 2> kPerSessionOnlyKeys{"rebind_on_exit", "keep_session_dir"};
constexpr std::array<std::string_view, 3> kNotSharedKeys{"max_instances", "spares",
                                                         "checkout_timeout"};
// Keys other MCP clients write into the same entries, which we interpret rather than ignore.
constexpr std::array<std::string_view, 4> kForeignServerKeys{"disabled", "timeout", "serverUrl",
                                                             "httpUrl"};
// Keys that belong to one kind of server only (stdio command vs remote url).
constexpr std::array<std::string_view, 5> kStdioOnlyKeys{"args", "env", "inherit_env", "cwd",
                                                         "max_rss_mb"};
constexpr std::array<std::string_view, 6> kRemoteOnlyKeys{"transport",      "headers",
                                                          "tls_verify",     "ca_file",
                                                          "max_connections", "connect_timeout"};
constexpr std::array<std::string_view, 3> kTransports{"auto", "streamable_http", "sse"};
// `type` as other clients write it: "http" and "streamable-http" are Streamable HTTP.
constexpr std::array<std::string_view, 6> kTypes{"stdio", "http", "streamable-http",
                                                 "streamable_http", "streamableHttp", "sse"};

constexpr std::array<std::string_view, 2> kBackoffKeys{"initial", "max"};
constexpr std::array<std::string_view, 2> kToolNamings{"prefixed", "unprefixed_when_unique"};
constexpr std::array<std::string_view, 5> kLogLevels{"trace", "debug", "info", "warn", "error"};


// Cline and Roo Code write "timeout" in seconds (1-3600); Gemini CLI writes milliseconds
// (default 600000). A number no human means as seconds is taken as milliseconds.
constexpr std::uint64_t kLargestTimeoutInSeconds = 3'600;

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

bool is_env_name(std::string_view s) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return is_name_char(c) && c != '-'; });
}

std::string join(std::string_view path, std::string_view key) {
  return path.empty() ? std::string(key) : fmt::format("{}.{}", path, key);
}

// ---------------------------------------------------------------------------------------------
// Tree -> Config

class Reader {
 public:
  Reader(std::string source, bool json) : source_(std::move(source)), json_(json) {}

  Config read(const Node& root) {
    Config config;
    config.source = source_;
    if (root.kind == Node::Kind::kNull) return config;  // an empty file: defaults, no servers
    if (root.kind != Node::Kind::kMap) {
      fail(root.mark, "",
           fmt::format("expected {} at the top level, got {}", map_noun(), describe(root)));
    }

    const Entry* gateway = nullptr;
    const Entry* servers = nullptr;
    Seen seen;
    for (const Entry& e : root.entries) {
      // Other tools keep their own settings beside mcpServers in the same JSON file.
      if (!check_key(e, "", kTopKeys, /*lenient=*/json_, seen)) continue;
      const bool is_gateway = e.key == "gateway" || e.key == "toolbridge";
      const Entry*& slot = is_gateway ? gateway : servers;
      if (slot) {
        fail(e.key_mark, "",
             fmt::format("'{}' and '{}' (line {}) are the same section; keep one", e.key, slot->key,
                         slot->key_mark.line));
      }
      slot = &e;
    }
    // Gateway first: server names are checked against its separator.
    if (gateway) read_gateway(gateway->value, gateway->key, config.gateway);
    if (servers) read_servers(servers->value, servers->key, config);
    return config;
  }

 private:
  using Seen = std::map<std::string, Mark, std::less<>>;

  [[noreturn]] void fail(Mark mark, std::string_view path, std::string_view message) const {
    throw_config_error(source_, mark, path, message);
  }

  std::string_view map_noun() const { return json_ ? "an object" : "a mapping"; }
  std::string_view list_noun() const { return json_ ? "an array" : "a list"; }

  std::string describe(const Node& n) const {
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

  // Returns whether `e` is a key this mapping understands, after rejecting repeats. Unknown keys
  // are errors, except under `lenient`, where they belong to another tool; even there a near
  // miss of one of ours ("comand") is reported, since silently dropping it would hide the typo.
  // `also_accepted` keys are understood but not suggested or listed.
  bool check_key(const Entry& e, std::string_view path, std::span<const std::string_view> known,
                 bool lenient, Seen& seen,
                 std::span<const std::string_view> also_accepted = {}) const {
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

  // A null node reads as an empty mapping: "servers:" with nothing under it means no servers.
  const std::vector<Entry>& entries(const Node& n, std::string_view path) const {
    static const std::vector<Entry> kNone;
    if (n.kind == Node::Kind::kNull) return kNone;
    if (n.kind != Node::Kind::kMap)
      fail(n.mark, path, fmt::format("expected {}, got {}", map_noun(), describe(n)));
    return n.entries;
  }

  const std::vector<Node>& items(const Node& n, std::string_view path) const {
    static const std::vector<Node> kNone;
    if (n.kind == Node::Kind::kNull) return kNone;
    if (n.kind != Node::Kind::kList)
      fail(n.mark, path, fmt::format("expected {}, got {}", list_noun(), describe(n)));
    return n.items;
  }

  const std::string& text(const Node& n, std::string_view path) const {
    if (n.kind == Node::Kind::kNull)
      fail(n.mark, path, "expected a value (write \"\" for an empty string)");
    if (n.kind != Node::Kind::kScalar)
      fail(n.mark, path, fmt::format("expected a string, got {}", describe(n)));
    // "\u0000" would silently cut an argument or variable short at exec time.
    if (n.scalar.find('\0') != std::string::npos)
      fail(n.mark, path, "must not contain a NUL character");
    return n.scalar;
  }

  bool boolean(const Node& n, std::string_view path) const {
    if (n.kind == Node::Kind::kScalar) {
      static constexpr std::array<std::string_view, 4> kTrue{"true", "True", "yes", "on"};
      static constexpr std::array<std::string_view, 4> kFalse{"false", "False", "no", "off"};
      if (std::find(kTrue.begin(), kTrue.end(), n.scalar) != kTrue.end()) return true;
      if (std::find(kFalse.begin(), kFalse.end(), n.scalar) != kFalse.end()) return false;
    }
    fail(n.mark, path, fmt::format("expected true or false, got {}", describe(n)));
  }

  Duration duration(const Node& n, std::string_view path, bool allow_zero) const {
    if (n.kind == Node::Kind::kScalar) {
      if (auto d = parse_duration(n.scalar)) {
        if (d->count() == 0 && !allow_zero) fail(n.mark, path, "must be longer than 0");
        return *d;
      }
    }
    fail(n.mark, path, fmt::format("expected a duration like 30s or 500ms, got {}", describe(n)));
  }

  std::size_t size(const Node& n, std::string_view path) const {
    if (n.kind == Node::Kind::kScalar) {
      if (auto bytes = parse_size(n.scalar)) {
        if (*bytes == 0) fail(n.mark, path, "must be at least 1 byte");
        return *bytes;
      }
    }
    fail(n.mark, path,
         fmt::format("expected a size like 4MiB, 64KiB or 512 (bytes), got {}", describe(n)));
  }

  std::size_t count(const Node& n, std::string_view path) const {
    if (n.kind == Node::Kind::kScalar) {
      std::size_t value = 0;
      const char* end = n.scalar.data() + n.scalar.size();
      auto [ptr, ec] = std::from_chars(n.scalar.data(), end, value);
      if (ec == std::errc() && ptr == end && value >= 1) return value;
    }
    fail(n.mark, path, fmt::format("expected a whole number of at least 1, got {}", describe(n)));
  }

  std::size_t zero_or_count(const Node& n, std::string_view path, std::size_t max = 10) const {
    if (n.kind == Node::Kind::kScalar) {
      std::size_t value = 0;
      const char* end = n.scalar.data() + n.scalar.size();
      auto [ptr, ec] = std::from_chars(n.scalar.data(), end, value);
      if (ec == std::errc() && ptr == end && value <= max) return value;
    }
    fail(n.mark, path, fmt::format("expected a whole number from 0 to {}, got {}", max, describe(n)));
  }

  std::string_view one_of(const Node& n, std::string_view path,
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

  // -------------------------------------------------------------------------------------------

  void read_gateway(const Node& node, const std::string& path, Gateway& g) const {
    Seen seen;
    for (const Entry& e : entries(node, path)) {
      check_key(e, path, kGatewayKeys, /*lenient=*/false, seen);
      const std::string p = join(path, e.key);
      const Node& v = e.value;
      if (e.key == "listen") {
        read_listen(v, p, g);
      } else if (e.key == "allowed_origins") {
        g.allowed_origins.clear();
        const auto& list = items(v, p);
        for (std::size_t i = 0; i < list.size(); ++i) {
          const std::string item_path = fmt::format("{}[{}]", p, i);
          g.allowed_origins.push_back(origin(list[i], item_path));
        }
      } else if (e.key == "max_body_bytes") {
        g.max_body_bytes = size(v, p);
      } else if (e.key == "max_sessions") {
        g.max_sessions = count(v, p);
      } else if (e.key == "session_idle_ttl") {
        g.session_idle_ttl = duration(v, p, /*allow_zero=*/false);
      } else if (e.key == "shutdown_grace") {
        g.shutdown_grace = duration(v, p, /*allow_zero=*/true);
      } else if (e.key == "start_concurrency") {
        g.start_concurrency = count(v, p);
      } else if (e.key == "session_dir_root") {
        g.session_dir_root = text(v, p);
        if (g.session_dir_root.empty() || g.session_dir_root.front() != '/')
          fail(v.mark, p, fmt::format("must be an absolute path, got '{}'", g.session_dir_root));
      } else if (e.key == "tool_naming") {
        g.tool_naming = one_of(v, p, kToolNamings) == "prefixed"
                            ? ToolNaming::kPrefixed
                            : ToolNaming::kUnprefixedWhenUnique;
      } else if (e.key == "separator") {
        const std::string& sep = text(v, p);
        // Tool names that clients accept are [A-Za-z0-9_-]{1,64}; '.' is allowed by newer ones.
        const bool valid =
            !sep.empty() && sep.size() <= 8 &&
            std::all_of(sep.begin(), sep.end(), [](char c) { return is_name_char(c) || c == '.'; });
        if (!valid) {
          fail(
              v.mark, p,
              fmt::format("'{}' must be 1-8 characters from [A-Za-z0-9_.-] so that namespaced tool "
                          "names stay valid",
                          sep));
        }
        g.separator = sep;
      } else if (e.key == "log_level") {
        g.log_level = std::string(one_of(v, p, kLogLevels));
      }
    }
  }

  void read_listen(const Node& v, const std::string& path, Gateway& g) const {
    const std::string& listen = text(v, path);
    std::string_view host;
    std::string_view port;
    if (!listen.empty() && listen[0] == '[') {
      const std::size_t close = listen.find(']');
      if (close == std::string::npos || close + 1 >= listen.size() || listen[close + 1] != ':') {
        fail(v.mark, path,
             fmt::format("expected [address]:port like [::1]:8848, got '{}'", listen));
      }
      host = std::string_view(listen).substr(1, close - 1);
      port = std::string_view(listen).substr(close + 2);
    } else {
      const std::size_t colon = listen.rfind(':');
      if (colon == std::string::npos) {
        fail(v.mark, path, fmt::format("expected host:port like 127.0.0.1:8848, got '{}'", listen));
      }
      host = std::string_view(listen).substr(0, colon);
      port = std::string_view(listen).substr(colon + 1);
      if (host.find(':') != std::string_view::npos) {
        fail(v.mark, path,
             fmt::format("an IPv6 address needs brackets, like [::1]:8848; got '{}'", listen));
      }
    }
    if (host.empty())
      fail(v.mark, path, fmt::format("missing the host in '{}' (127.0.0.1 is local only)", listen));

    unsigned long number = 0;
    auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), number);
    if (port.empty() || ptr != port.data() + port.size() ||
        (ec != std::errc() && ec != std::errc::result_out_of_range)) {
      fail(v.mark, path, fmt::format("expected a port number after ':', got '{}'", listen));
    }
    if (ec == std::errc::result_out_of_range || number > 65535) {
      fail(v.mark, path,
           fmt::format("port {} is out of range 0-65535 (0 picks a free port)", port));
    }
    g.host = std::string(host);
    g.port = static_cast<unsigned short>(number);
  }

  std::string origin(const Node& v, const std::string& path) const {
    const std::string& o = text(v, path);
    std::string_view rest = o;
    bool valid = false;
    for (std::string_view scheme : {"http://", "https://"}) {
      if (rest.starts_with(scheme)) {
        rest.remove_prefix(scheme.size());
        valid = !rest.empty() && rest.find_first_of("/ \t?#") == std::string_view::npos;
        break;
      }
    }
    if (!valid) {
      std::string hint;
      if (o.ends_with("/") && o.size() > 1)
        hint = fmt::format(" (an origin has no path: '{}')", o.substr(0, o.size() - 1));
      fail(v.mark, path,
           fmt::format("expected an origin like http://localhost:3000, got '{}'{}", o, hint));
    }
    return o;
  }

  std::string remote_url(const Node& n, const std::string& path) const {
    const std::string& value = text(n, path);
    auto parsed = boost::urls::parse_uri(value);
    if (!parsed) fail(n.mark, path, fmt::format("'{}' is not a URL: {}", value, parsed.error().message()));
    if (parsed->scheme() != "http" && parsed->scheme() != "https") {
      fail(n.mark, path, fmt::format("'{}': only http:// and https:// URLs are supported", value));
    }
    if (parsed->host().empty()) fail(n.mark, path, fmt::format("'{}' has no host", value));
    return value;
  }

  // Header values may name an environment variable as ${env:NAME}, so API keys stay out of the
  // file. An unset variable is an error: a request without its key would fail less clearly.
  std::string header_value(const Node& n, const std::string& path) const {
    const std::string& raw = text(n, path);
    std::string out;
    std::size_t at = 0;
    for (;;) {
      const std::size_t open = raw.find("${env:", at);
      if (open == std::string::npos) break;
      const std::size_t close = raw.find('}', open);
      if (close == std::string::npos) fail(n.mark, path, "'${env:' without a closing '}'");
      const std::string name = raw.substr(open + 6, close - open - 6);
      if (!is_env_name(name)) {
        fail(n.mark, path, fmt::format("'{}' is not an environment variable name", name));
      }
      const char* env = std::getenv(name.c_str());
      if (!env) fail(n.mark, path, fmt::format("environment variable {} is not set", name));
      out.append(raw, at, open - at);
      out += env;
      at = close + 1;
    }
    out.append(raw, at);
    if (out.find_first_of("\r\n") != std::string::npos) {
      fail(n.mark, path, "a header value must not contain a line break");
    }
    return out;
  }

  static bool is_header_name(std::string_view name) {
    if (name.empty() || name.size() > 256) return false;
    return std::all_of(name.begin(), name.end(), [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
             std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
    });
  }

  void read_servers(const Node& node, const std::string& path, Config& config) const {
    const std::string& separator = config.gateway.separator;
    Seen names;
    for (const Entry& e : entries(node, path)) {
      const bool valid = !e.key.empty() && e.key.size() <= 64 &&
                         std::all_of(e.key.begin(), e.key.end(), is_name_char);
      if (!valid) {
        fail(e.key_mark, path,
             fmt::format("server name '{}' must be 1-64 letters, digits, '_' or '-'", e.key));
      }
      if (e.key.find(separator) != std::string::npos) {
        fail(e.key_mark, path,
             fmt::format("server name '{}' must not contain '{}': it joins server and tool names "
                         "in namespaced tools ({}{}tool)",
                         e.key, separator, e.key, separator));
      }
      auto [it, inserted] = names.emplace(e.key, e.key_mark);
      if (!inserted) {
        fail(e.key_mark, path,
             fmt::format("duplicate server name '{}' (lines {} and {})", e.key, it->second.line,
                         e.key_mark.line));
      }
      config.servers.push_back(read_server(e, join(path, e.key)));
    }
  }

  Server read_server(const Entry& entry, const std::string& path) const {
    Server s;
    s.name = entry.key;
    std::optional<std::pair<bool, Mark>> enabled;
    std::optional<std::pair<bool, Mark>> disabled;
    bool call_timeout_set = false;
    std::optional<Duration> foreign_timeout;
    bool has_command = false;
    std::optional<Mark> url_mark;
    std::string url_key;
    bool type_set = false;
    std::optional<Mark> type_mark;
    bool type_is_stdio = false;

    Seen seen;
    std::map<std::string, Mark, std::less<>> marks;  // where each key was written
    // Entries in JSON may carry keys for other clients (autoApprove, alwaysAllow, ...).
    for (const Entry& e : entries(entry.value, path)) {
      if (!check_key(e, path, kServerKeys, /*lenient=*/json_, seen, kForeignServerKeys)) continue;
      marks.emplace(e.key, e.key_mark);
      const std::string p = join(path, e.key);
      const Node& v = e.value;
      if (e.key == "url" || e.key == "serverUrl" || e.key == "httpUrl") {
        if (url_mark) {
          fail(e.key_mark, p, fmt::format("a second URL; '{}' was given at line {}", url_key,
                                          url_mark->line));
        }
        s.url = remote_url(v, p);
        url_mark = e.key_mark;
        url_key = e.key;
        // Gemini CLI's httpUrl always means Streamable HTTP.
        if (e.key == "httpUrl" && !type_set) s.transport = RemoteTransport::kStreamableHttp;
      } else if (e.key == "transport") {
        const std::string_view t = one_of(v, p, kTransports);
        s.transport = t == "sse"               ? RemoteTransport::kSse
                      : t == "streamable_http" ? RemoteTransport::kStreamableHttp
                                               : RemoteTransport::kAuto;
        type_set = true;
      } else if (e.key == "headers") {
        for (const Entry& h : entries(v, p)) {
          if (!is_header_name(h.key)) {
            fail(h.key_mark, p, fmt::format("'{}' is not an HTTP header name", h.key));
          }
          const std::string value = header_value(h.value, join(p, h.key));
          if (!s.headers.emplace(h.key, value).second) {
            fail(h.key_mark, p, fmt::format("duplicate header '{}'", h.key));
          }
        }
      } else if (e.key == "tls_verify") {
        s.tls_verify = boolean(v, p);
      } else if (e.key == "ca_file") {
        s.ca_file = text(v, p);
        if (s.ca_file.empty()) fail(v.mark, p, "must not be empty");
      } else if (e.key == "max_connections") {
        s.max_connections = count(v, p);
      } else if (e.key == "connect_timeout") {
        s.connect_timeout = duration(v, p, /*allow_zero=*/false);
      } else if (e.key == "command") {
        s.command = text(v, p);
        if (s.command.empty()) fail(v.mark, p, "must not be empty");
        has_command = true;
      } else if (e.key == "args") {
        const auto& list = items(v, p);
        for (std::size_t i = 0; i < list.size(); ++i)
          s.args.push_back(text(list[i], fmt::format("{}[{}]", p, i)));
      } else if (e.key == "env") {
        for (const Entry& var : entries(v, p)) {
          if (var.key.empty() || var.key.find('=') != std::string::npos) {
            fail(var.key_mark, p, fmt::format("'{}' is not an environment variable name", var.key));
          }
          if (!s.env.emplace(var.key, text(var.value, join(p, var.key))).second) {
            fail(var.key_mark, p, fmt::format("duplicate variable '{}'", var.key));
          }
        }
      } else if (e.key == "inherit_env") {
        const auto& list = items(v, p);
        for (std::size_t i = 0; i < list.size(); ++i) {
          const std::string item_path = fmt::format("{}[{}]", p, i);
          const std::string& name = text(list[i], item_path);
          if (!is_env_name(name))
            fail(list[i].mark, item_path,
                 fmt::format("'{}' is not an environment variable name", name));
          s.inherit_env.push_back(name);
        }
      } else if (e.key == "cwd") {
        s.cwd = text(v, p);
      } else if (e.key == "enabled") {
        enabled.emplace(boolean(v, p), v.mark);
      } else if (e.key == "disabled") {
        disabled.emplace(boolean(v, p), v.mark);
      } else if (e.key == "startup_timeout") {
        s.startup_timeout = duration(v, p, /*allow_zero=*/false);
      } else if (e.key == "call_timeout") {
        s.call_timeout = duration(v, p, /*allow_zero=*/false);
        call_timeout_set = true;
      } else if (e.key == "tool_timeouts") {
        for (const Entry& t : entries(v, p)) {
          s.tool_timeouts[t.key] = duration(t.value, join(p, t.key), /*allow_zero=*/false);
        }
      } else if (e.key == "timeout") {
        foreign_timeout = timeout(v, p);
      } else if (e.key == "restart_backoff") {
        read_backoff(v, p, s);
      } else if (e.key == "idempotent_tools") {
        const auto& list = items(v, p);
        for (std::size_t i = 0; i < list.size(); ++i) {
          s.idempotent_tools.push_back(text(list[i], fmt::format("{}[{}]", p, i)));
        }
      } else if (e.key == "max_retries") {
        s.max_retries = zero_or_count(v, p);
      } else if (e.key == "breaker_threshold") {
        s.breaker_threshold = zero_or_count(v, p, 1000);
      } else if (e.key == "breaker_cooldown") {
        s.breaker_cooldown = duration(v, p, /*allow_zero=*/false);
      } else if (e.key == "ping_timeout") {
        s.ping_timeout = duration(v, p, /*allow_zero=*/false);
      } else if (e.key == "stop_grace") {
        s.stop_grace = duration(v, p, /*allow_zero=*/true);
      } else if (e.key == "max_line_bytes") {
        s.max_line_bytes = size(v, p);
      } else if (e.key == "max_in_flight") {
        s.max_in_flight = count(v, p);
      } else if (e.key == "policy") {
        const std::string_view policy = one_of(v, p, kPolicies);
        s.policy = policy == "pool" ? Policy::kPool
                   : policy == "per_session" ? Policy::kPerSession
                                             : Policy::kShared;
      } else if (e.key == "min_instances") {
        s.min_instances = zero_or_count(v, p, 10'000);
      } else if (e.key == "max_instances") {
        s.max_instances = count(v, p);
      } else if (e.key == "spares") {
        s.spares = zero_or_count(v, p, 10'000);
      } else if (e.key == "target_in_flight") {
        s.target_in_flight = count(v, p);
      } else if (e.key == "checkout_timeout") {
        s.checkout_timeout = duration(v, p, /*allow_zero=*/false);
      } else if (e.key == "max_calls") {
        s.max_calls = zero_or_count(v, p, std::numeric_limits<std::uint32_t>::max());
      } else if (e.key == "max_age") {
        s.max_age = duration(v, p, /*allow_zero=*/true);
      } else if (e.key == "max_rss_mb") {
        s.max_rss_mb = zero_or_count(v, p, 1u << 24);
      } else if (e.key == "rss_check_interval") {
        s.rss_check_interval = duration(v, p, /*allow_zero=*/false);
      } else if (e.key == "idle_ttl") {
        s.idle_ttl = duration(v, p, /*allow_zero=*/true);
      } else if (e.key == "rebind_on_exit") {
        s.rebind_on_exit = boolean(v, p);
      } else if (e.key == "keep_session_dir") {
        s.keep_session_dir = boolean(v, p);
      } else if (e.key == "type") {
        const std::string_view type = one_of(v, p, kTypes);
        if (type == "sse") {
          s.transport = RemoteTransport::kSse;
        } else if (type != "stdio") {
          s.transport = RemoteTransport::kStreamableHttp;
        }
        type_set = type != "stdio";
        type_mark = v.mark;
        type_is_stdio = type == "stdio";
      }
    }

    if (has_command && url_mark) {
      fail(*url_mark, join(path, url_key),
           "a server has either 'command' (stdio) or 'url' (remote), not both");
    }
    if (!has_command && !url_mark) {
      fail(entry.key_mark, path,
           "missing required key 'command' (the program to run, like npx or uvx) or 'url' (a "
           "remote server)");
    }
    if (type_mark && type_is_stdio == bool(url_mark)) {
      fail(*type_mark, join(path, "type"),
           url_mark ? "'stdio' contradicts 'url'; use http, streamable-http or sse"
                    : "a remote type needs 'url'");
    }
    // Keys of the other kind of server are errors rather than silently ignored.
    for (const auto& [key, mark] : marks) {
      const bool stdio_only =
          std::find(kStdioOnlyKeys.begin(), kStdioOnlyKeys.end(), key) != kStdioOnlyKeys.end();
      const bool remote_only =
          std::find(kRemoteOnlyKeys.begin(), kRemoteOnlyKeys.end(), key) != kRemoteOnlyKeys.end();
      if (stdio_only && url_mark) {
        fail(mark, join(path, key), "applies only to stdio servers (command); this one has a url");
      }
      if (remote_only && !url_mark) {
        fail(mark, join(path, key), "applies only to remote servers (url)");
      }
    }
    if (enabled && disabled && enabled->first == disabled->first) {
      fail(disabled->second, join(path, "disabled"), "contradicts 'enabled'; keep one of the two");
    }
    if (enabled) s.enabled = enabled->first;
    if (disabled) s.enabled = !disabled->first;
    if (foreign_timeout && !call_timeout_set) s.call_timeout = *foreign_timeout;
    check_policy(entry, path, s, marks);
    return s;
  }

  // Keys that do not apply to the server's policy are errors rather than silently ignored.
  void check_policy(const Entry& entry, const std::string& path, const Server& s,
                    const std::map<std::string, Mark, std::less<>>& marks) const {
    const std::string_view policy = to_string(s.policy);
    auto misplaced = [&](std::span<const std::string_view> keys, std::string_view applies_to) {
      for (std::string_view key : keys) {
        if (auto it = marks.find(key); it != marks.end()) {
          fail(it->second, join(path, std::string(key)),
               fmt::format("applies only to {}; this server's policy is {}", applies_to, policy));
        }
      }
    };
    if (s.policy != Policy::kPool) misplaced(kPoolOnlyKeys, "policy: pool");
    if (s.policy != Policy::kPerSession) misplaced(kPerSessionOnlyKeys, "policy: per_session");
    if (s.policy == Policy::kShared) misplaced(kNotSharedKeys, "policy: pool or per_session");
    if (s.policy == Policy::kPool && s.min_instances > s.effective_max_instances()) {
      fail(marks.at("min_instances"), join(path, "min_instances"),
           fmt::format("{} is more than max_instances ({})", s.min_instances,
                       s.effective_max_instances()));
    }
    if (s.policy != Policy::kShared && s.spares && *s.spares > s.effective_max_instances()) {
      fail(marks.at("spares"), join(path, "spares"),
           fmt::format("{} is more than max_instances ({})", s.effective_spares(),
                       s.effective_max_instances()));
    }
    // ${session.id} / ${session.dir} exist only for per_session servers.
    auto check_vars = [&](const std::string& value, const std::string& where) {
      // Other ${...} text is passed through untouched: servers are never run through a shell.
      for (std::size_t at = value.find("${session."); at != std::string::npos;
           at = value.find("${session.", at + 2)) {
        const std::size_t close = value.find('}', at);
        const std::string var = value.substr(at, close == std::string::npos ? std::string::npos : close - at + 1);
        if (var != "${session.id}" && var != "${session.dir}") {
          fail(marks.count(where) ? marks.at(where) : entry.key_mark, join(path, where),
               fmt::format("unknown variable '{}' (known: ${{session.id}}, ${{session.dir}})", var));
        }
        if (s.policy != Policy::kPerSession) {
          fail(marks.count(where) ? marks.at(where) : entry.key_mark, join(path, where),
               fmt::format("'{}' needs policy: per_session (each session gets its own process); "
                           "this server's policy is {}",
                           var, policy));
        }
      }
    };
    for (const auto& a : s.args) check_vars(a, "args");
    for (const auto& [k, v] : s.env) check_vars(v, "env");
    check_vars(s.cwd, "cwd");
    if (s.spares && *s.spares > 0 && s.uses_session_var("${session.id}")) {
      fail(marks.at("spares"), join(path, "spares"),
           "spares start before their session exists, so they cannot use ${session.id}; use "
           "${session.dir} (created with the spare and handed to its session) or spares: 0");
    }
  }

  Duration timeout(const Node& v, const std::string& path) const {
    std::uint64_t number = 0;
    if (v.kind == Node::Kind::kScalar) {
      const char* end = v.scalar.data() + v.scalar.size();
      auto [ptr, ec] = std::from_chars(v.scalar.data(), end, number);
      constexpr auto kMaxMilliseconds =
          static_cast<std::uint64_t>(std::numeric_limits<Duration::rep>::max());
      if (ec == std::errc() && ptr == end && number > kLargestTimeoutInSeconds &&
          number <= kMaxMilliseconds) {
        return Duration(static_cast<Duration::rep>(number));
      }
    }
    return duration(v, path, /*allow_zero=*/false);
  }

  void read_backoff(const Node& node, const std::string& path, Server& s) const {
    Seen seen;
    std::optional<Mark> max_mark;
    for (const Entry& e : entries(node, path)) {
      check_key(e, path, kBackoffKeys, /*lenient=*/false, seen);
      const std::string p = join(path, e.key);
      if (e.key == "initial") {
        s.restart_backoff_initial = duration(e.value, p, /*allow_zero=*/true);
      } else {
        s.restart_backoff_max = duration(e.value, p, /*allow_zero=*/false);
        max_mark = e.value.mark;
      }
    }
    if (s.restart_backoff_max < s.restart_backoff_initial) {
      fail(max_mark.value_or(node.mark), join(path, "max"),
           fmt::format("{} is shorter than initial ({})", format_duration(s.restart_backoff_max),
                       format_duration(s.restart_backoff_initial)));
    }
  }

  std::string source_;
  bool json_;
};

std::string read_whole_file(const std::string& path) {
  // Large enough for any config; small enough that pointing at /dev/zero fails quickly.
  constexpr std::size_t kLimit = 16u << 20;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"),
                                                       &std::fclose);
  if (!file) throw ConfigError(fmt::format("cannot read {}: {}", path, std::strerror(errno)));
  std::string text;
  char buffer[1 << 16];
  while (true) {
    const std::size_t n = std::fread(buffer, 1, sizeof buffer, file.get());
    text.append(buffer, n);
    if (text.size() > kLimit)
      throw ConfigError(fmt::format("cannot read {}: larger than {}", path, format_size(kLimit)));
    if (n < sizeof buffer) break;
  }
  if (std::ferror(file.get()))
    throw ConfigError(fmt::format("cannot read {}: {}", path, std::strerror(errno)));
  return text;
}

bool looks_like_json(std::string_view path, std::string_view text) {
  std::string extension;
  if (const std::size_t dot = path.rfind('.');
      dot != std::string_view::npos && path.find('/', dot) == std::string_view::npos) {
    for (char c : path.substr(dot + 1))
      extension += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  }
  if (extension == "yaml" || extension == "yml") return false;
  if (extension == "json" || extension == "jsonc") return true;
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  return first != std::string_view::npos && text[first] == '{';
}

}  // namespace

std::string_view to_string(Policy p) {
  switch (p) {
    case Policy::kShared: return "shared";
    case Policy::kPool: return "pool";
    case Policy::kPerSession: return "per_session";
  }
  return "shared";
}

Config load_text(const std::string& text, const std::string& source_name, bool json) {
  if (!json) return Reader(source_name, false).read(parse_yaml(text, source_name));
  std::string_view body = text;
  // Windows editors save Claude Desktop's config with a byte order mark.
  if (body.starts_with("\xEF\xBB\xBF")) body.remove_prefix(3);
  return Reader(source_name, true).read(JsonTree(body, source_name).parse());
}

Config load_file(const std::string& path) {
  const std::string text = read_whole_file(path);
  return load_text(text, path, looks_like_json(path, text));
}

}  // namespace toolbridge::config
