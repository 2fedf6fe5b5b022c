#pragma once
// The tools, resources and prompts the official MCP conformance suite expects of a server under
// test (`toolbridge-fixture --conformance`). Names follow the suite; behaviour follows its checks.
#include <boost/asio/io_context.hpp>

#include "mcp/server.h"

namespace toolbridge::fixture {

void add_conformance_surface(mcp::Server& server, boost::asio::io_context& io);

}  // namespace toolbridge::fixture
