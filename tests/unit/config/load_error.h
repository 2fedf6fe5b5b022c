#pragma once
// The ConfigError message of loading `text` as a YAML file named cfg.yaml, or "<no error>":
// what the config key tests compare against.
#include <string>

#include "config/config.h"

namespace toolbridge::config {

inline std::string yaml_error(const std::string& text) {
  try {
    load_text(text, "cfg.yaml", false);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "<no error>";
}

}  // namespace toolbridge::config
