#include "config/tree.h"

#include <gtest/gtest.h>

#include <string>

#include "config/config.h"

namespace toolbridge::config {
namespace {

std::string error_of(auto parse) {
  try {
    parse();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(ConfigTree, ErrorsNameWhereAndWhat) {
  EXPECT_EQ(error_of([] {
              throw_config_error("f.yaml", {3, 7}, "servers.a", "bad");
            }),
            "f.yaml:3:7: servers.a: bad");
  EXPECT_EQ(error_of([] { throw_config_error("f.yaml", {3, 7}, "", "bad"); }), "f.yaml:3:7: bad");
  EXPECT_EQ(error_of([] { throw_config_error("<embedded>", {}, "gateway", "bad"); }),
            "<embedded>: gateway: bad");
}

}  // namespace
}  // namespace toolbridge::config
