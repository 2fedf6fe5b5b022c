// The keys of stateless (2026-07-28) clients: input_required_ttl, max_input_required, list_ttl.
#include <gtest/gtest.h>

#include <string>

#include "config/config.h"
#include "load_error.h"

namespace toolbridge::config {
namespace {

TEST(ConfigStateless, DefaultsAreDocumented) {
  const Config c = load_text("servers: {}\n", "cfg.yaml", false);
  EXPECT_EQ(c.gateway.input_required_ttl, std::chrono::minutes(2));
  EXPECT_EQ(c.gateway.max_input_required, 1024u);
  EXPECT_EQ(c.gateway.list_ttl, std::chrono::minutes(1));
}

TEST(ConfigStateless, KeysAreReadAndBounded) {
  const Config c =
      load_text("gateway: {input_required_ttl: 30s, max_input_required: 8, list_ttl: 0}\n",
                "cfg.yaml", false);
  EXPECT_EQ(c.gateway.input_required_ttl, std::chrono::seconds(30));
  EXPECT_EQ(c.gateway.max_input_required, 8u);
  EXPECT_EQ(c.gateway.list_ttl, std::chrono::milliseconds(0));
  // A parked call must be able to wait at all; zero places would park nothing.
  EXPECT_NE(yaml_error("gateway: {input_required_ttl: 0}\n"), "<no error>");
  EXPECT_NE(yaml_error("gateway: {max_input_required: 0}\n").find("at least 1"), std::string::npos);
  EXPECT_NE(yaml_error("gateway: {input_required_ttl: 2562048h}\n").find("input_required_ttl"),
            std::string::npos);
}

}  // namespace
}  // namespace toolbridge::config
