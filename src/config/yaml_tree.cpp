// YAML into the config tree, with yaml-cpp's positions made 1-based.
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "config/tree.h"

namespace toolbridge::config {
namespace {

Mark yaml_mark(const YAML::Mark& m) {
  if (m.is_null()) return {};
  return {m.line + 1, m.column + 1};
}

// Aliases are expanded at each use, so a small file can name billions of nodes (an alias bomb);
// a budget turns that into an error instead of std::bad_alloc.
struct Budget {
  std::size_t nodes = 0;
  std::size_t text_bytes = 0;
  int depth = 0;
};

void spend_text(Budget& budget, std::size_t bytes, const std::string& source, Mark mark) {
  budget.text_bytes += bytes;
  if (budget.text_bytes > kMaxYamlTextBytes) {
    throw_config_error(source, mark, "",
                       fmt::format("the YAML document has more than {} MiB of text once its "
                                   "aliases are expanded (an alias bomb?)",
                                   kMaxYamlTextBytes >> 20));
  }
}

Node from_yaml(const YAML::Node& y, const std::string& source, Budget& budget) {
  Node n;
  n.mark = yaml_mark(y.Mark());
  if (++budget.nodes > kMaxYamlNodes) {
    throw_config_error(source, n.mark, "",
                       fmt::format("the YAML document has more than {} nodes once its aliases are "
                                   "expanded (an alias bomb?)",
                                   kMaxYamlNodes));
  }
  if (budget.depth >= kMaxYamlDepth) {
    throw_config_error(source, n.mark, "",
                       fmt::format("the YAML document nests deeper than {} levels", kMaxYamlDepth));
  }
  ++budget.depth;
  switch (y.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      break;
    case YAML::NodeType::Scalar:
      n.kind = Node::Kind::kScalar;
      n.scalar = y.Scalar();
      spend_text(budget, n.scalar.size(), source, n.mark);
      break;
    case YAML::NodeType::Sequence:
      n.kind = Node::Kind::kList;
      for (const YAML::Node& item : y) n.items.push_back(from_yaml(item, source, budget));
      break;
    case YAML::NodeType::Map:
      n.kind = Node::Kind::kMap;
      for (const auto& kv : y) {
        if (!kv.first.IsScalar())
          throw_config_error(source, yaml_mark(kv.first.Mark()), "", "a key must be plain text");
        spend_text(budget, kv.first.Scalar().size(), source, yaml_mark(kv.first.Mark()));
        Entry e{kv.first.Scalar(), yaml_mark(kv.first.Mark()),
                from_yaml(kv.second, source, budget)};
        // yaml-cpp marks an empty value ("key:") at the next token, often on the next line.
        if (e.value.kind == Node::Kind::kNull) e.value.mark = e.key_mark;
        n.entries.push_back(std::move(e));
      }
      break;
  }
  --budget.depth;
  return n;
}

}  // namespace

Node parse_yaml(const std::string& text, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw_config_error(source, yaml_mark(e.mark), "", "invalid YAML: " + e.msg);
  }
  Budget budget;
  return from_yaml(root, source, budget);
}

}  // namespace toolbridge::config
