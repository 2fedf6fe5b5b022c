#pragma once
// Reads the `models` section (config/model.h). Kept apart from the server keys: it belongs to
// the LLM router (src/llm/).
#include <span>
#include <string>
#include <string_view>

#include "config/config.h"
#include "config/node_reader.h"
#include "config/tree.h"

namespace toolbridge::config {

// Appends one Model per entry of `n` (a mapping from model name to its settings) to
// config.models. Run after the servers: a model must not share a server's name (admission
// limits are kept by name).
void read_models(const NodeReader& r, const Node& n, const std::string& path, Config& config);
// Every key of a model (docs/llm-routing.md lists exactly these; a test checks).
std::span<const std::string_view> model_keys();

}  // namespace toolbridge::config
