#pragma once
// Reading a config file's bytes, as start-up and a reload (gateway/reload.h) do.
#include <string>
#include <string_view>

namespace toolbridge::config {

// The bytes of a config file (at most 16 MiB); throws ConfigError if it cannot be read.
std::string read_file_text(const std::string& path);
// Whether `text` read from `path` is mcpServers JSON (by extension, else by its first byte).
bool looks_like_json(std::string_view path, std::string_view text);

}  // namespace toolbridge::config
