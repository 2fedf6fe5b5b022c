// YAML into the config tree, with yaml-cpp's positions made 1-based.
#include <yaml-cpp/yaml.h>

#include "config/tree.h"

namespace toolbridge::config {
namespace {

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

}  // namespace

Node parse_yaml(const std::string& text, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw_config_error(source, yaml_mark(e.mark), "", "invalid YAML: " + e.msg);
  }
  return from_yaml(root, source);
}

}  // namespace toolbridge::config
