#include "config/tree.h"

#include <fmt/format.h>

#include "config/config.h"

namespace toolbridge::config {

void throw_config_error(const std::string& source, Mark mark, std::string_view path,
                        std::string_view message) {
  std::string where =
      mark.line > 0 ? fmt::format("{}:{}:{}", source, mark.line, mark.column) : source;
  if (path.empty()) throw ConfigError(fmt::format("{}: {}", where, message));
  throw ConfigError(fmt::format("{}: {}: {}", where, path, message));
}

}  // namespace toolbridge::config
