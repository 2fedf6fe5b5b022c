// gateway.idempotency_ttl and gateway.idempotency_max_bytes (docs/idempotency.md).
#include <gtest/gtest.h>

#include <string>

#include "config/config.h"
#include "load_error.h"

namespace toolbridge::config {
namespace {

using std::chrono::milliseconds;

TEST(IdempotencyKeys, DefaultsAreTenMinutesAnd64MiB) {
  const Config c = load_text("servers:\n  s:\n    command: x\n", "cfg.yaml", false);
  EXPECT_EQ(c.gateway.idempotency_ttl, milliseconds(600'000));
  EXPECT_EQ(c.gateway.idempotency_max_bytes, 64u << 20);
}

TEST(IdempotencyKeys, AreReadAndAZeroTtlIsRefused) {
  const Config c = load_text(
      "gateway:\n  idempotency_ttl: 90s\n  idempotency_max_bytes: 1MiB\nservers:\n  s:\n"
      "    command: x\n",
      "cfg.yaml", false);
  EXPECT_EQ(c.gateway.idempotency_ttl, milliseconds(90'000));
  EXPECT_EQ(c.gateway.idempotency_max_bytes, 1u << 20);
  const std::string zero = yaml_error("gateway:\n  idempotency_ttl: 0s\n");
  EXPECT_EQ(zero.rfind("cfg.yaml:2:20: gateway.idempotency_ttl: ", 0), 0u) << zero;
  const std::string typo = yaml_error("gateway:\n  idempotency_tl: 1m\n");
  EXPECT_NE(typo.find("idempotency_ttl"), std::string::npos) << typo;  // did you mean
}

}  // namespace
}  // namespace toolbridge::config
