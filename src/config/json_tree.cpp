// JSON into the config tree. Boost.JSON validates (and reports syntax errors by offset); a small
// scanner over the now-known-good text then builds the tree, because Boost.JSON values carry no
// positions and silently keep only the last of duplicate keys.
#include <fmt/format.h>

#include <algorithm>
#include <boost/json/parse.hpp>
#include <boost/json/parse_options.hpp>
#include <boost/json/parser.hpp>

#include "config/tree.h"

namespace toolbridge::config {
namespace {

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

}  // namespace

Node parse_json(std::string_view text, const std::string& source) {
  return JsonTree(text, source).parse();
}

}  // namespace toolbridge::config
