#include "app/commands.h"

namespace toolbridge::app {

std::string default_config_yaml(const std::string& exe_dir) {
  // The smallest useful gateway: our own fixture server, so a first call works with nothing else
  // installed. Real servers are added with --config (see docs/configuration.md).
  return "gateway:\n"
         "  listen: 127.0.0.1:8848\n"
         "servers:\n"
         "  fixture:\n"
         "    command: " + exe_dir + "/toolbridge-fixture\n";
}

}  // namespace toolbridge::app
