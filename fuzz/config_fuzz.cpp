// libFuzzer target: the config loader, on the same text read as YAML and as JSON. A bad config
// must end in ConfigError (which `serve` and `check-config` report); anything else escaping is
// a crash of the command.
#include <cstdint>
#include <string>

#include "config/config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  for (const bool json : {false, true}) {
    try {
      (void)toolbridge::config::load_text(text, "<fuzz>", json);
    } catch (const toolbridge::config::ConfigError&) {
    }
  }
  return 0;
}
