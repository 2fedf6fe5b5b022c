#pragma once
// The servers section (`servers` in YAML, `mcpServers` in JSON): one Server per entry, in file
// order, with every check across the keys of an entry.
#include <string>

#include "config/config.h"
#include "config/node_reader.h"
#include "config/tree.h"

namespace toolbridge::config {

// Reads `node` into config.servers; server names are checked against config.gateway.separator,
// so the gateway section is read first.
void read_servers(const NodeReader& r, const Node& node, const std::string& path, Config& config);

}  // namespace toolbridge::config
