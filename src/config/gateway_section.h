#pragma once
// The gateway section (`gateway`, or `toolbridge` in a JSON file shared with other clients).
#include <string>

#include "config/config.h"
#include "config/node_reader.h"
#include "config/tree.h"

namespace toolbridge::config {

// The observability keys (observe_keys.cpp): `trace` and `dashboard`.
void read_trace(const NodeReader& r, const Node& node, const std::string& path, Trace& t);
ObserveAccess read_observe_access(const NodeReader& r, const Node& node, const std::string& path);

void read_gateway(const NodeReader& r, const Node& node, const std::string& path, Gateway& g);

}  // namespace toolbridge::config
