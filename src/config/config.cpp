#include "config/config.h"

#include <fmt/format.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string_view>

#include "config/duration.h"
#include "config/file.h"
#include "config/gateway_section.h"
#include "config/model_keys.h"
#include "config/node_reader.h"
#include "config/server_section.h"
#include "config/surfaces.h"
#include "config/tree.h"

namespace toolbridge::config {
namespace {

constexpr std::array<std::string_view, 6> kTopKeys{"gateway",    "toolbridge", "servers",
                                                   "mcpServers", "models",     "surfaces"};

Config read_config(const NodeReader& r, const Node& root) {
  Config config;
  config.source = r.source();
  if (root.kind == Node::Kind::kNull) return config;  // an empty file: defaults, no servers
  if (root.kind != Node::Kind::kMap) {
    r.fail(root.mark, "",
           fmt::format("expected {} at the top level, got {}", r.map_noun(), r.describe(root)));
  }

  const Entry* gateway = nullptr;
  const Entry* servers = nullptr;
  const Entry* models = nullptr;
  const Entry* surfaces = nullptr;
  NodeReader::Seen seen;
  for (const Entry& e : root.entries) {
    // Other tools keep their own settings beside mcpServers in the same JSON file.
    if (!r.check_key(e, "", kTopKeys, /*lenient=*/r.json(), seen)) continue;
    if (e.key == "models" || e.key == "surfaces") {
      (e.key == "models" ? models : surfaces) = &e;
      continue;
    }
    const bool is_gateway = e.key == "gateway" || e.key == "toolbridge";
    const Entry*& slot = is_gateway ? gateway : servers;
    if (slot) {
      r.fail(e.key_mark, "",
             fmt::format("'{}' and '{}' (line {}) are the same section; keep one", e.key, slot->key,
                         slot->key_mark.line));
    }
    slot = &e;
  }
  read_otel_environment([](const char* name) { return std::getenv(name); }, config.gateway.otel);
  // Gateway first: server names are checked against its separator.
  if (gateway) read_gateway(r, gateway->value, gateway->key, config.gateway);
  if (servers) read_servers(r, servers->value, servers->key, config);
  check_cache_tiers(config);
  if (models) read_models(r, models->value, models->key, config);
  // After the servers: a surface's rules name them.
  if (surfaces) read_surfaces(r, surfaces->value, surfaces->key, config);
  check_key_surfaces(r, gateway, config);
  return config;
}

}  // namespace

std::string read_file_text(const std::string& path) {
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

std::string_view to_string(Policy p) {
  switch (p) {
    case Policy::kShared:
      return "shared";
    case Policy::kPool:
      return "pool";
    case Policy::kPerSession:
      return "per_session";
  }
  return "shared";
}

Config load_text(const std::string& text, const std::string& source_name, bool json) {
  if (!json) return read_config(NodeReader(source_name, false), parse_yaml(text, source_name));
  std::string_view body = text;
  // Windows editors save Claude Desktop's config with a byte order mark.
  if (body.starts_with("\xEF\xBB\xBF")) body.remove_prefix(3);
  return read_config(NodeReader(source_name, true), parse_json(body, source_name));
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

Config load_file(const std::string& path) {
  const std::string text = read_file_text(path);
  return load_text(text, path, looks_like_json(path, text));
}

}  // namespace toolbridge::config
