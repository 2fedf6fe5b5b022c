#include <gtest/gtest.h>

#include <string>

#include "config/config.h"
#include "load_error.h"

namespace toolbridge::config {
namespace {

TEST(ConfigRepairKeys, DefaultsAreSafeRepairAndWarnValidation) {
  const Config c = load_text("servers:\n  s:\n    command: x\n", "cfg.yaml", false);
  EXPECT_EQ(c.servers[0].repair.repair, RepairMode::kSafe);
  EXPECT_EQ(c.servers[0].repair.validate, ValidateMode::kWarn);
  EXPECT_TRUE(c.servers[0].repair.param_aliases.empty());
  EXPECT_EQ(c.servers[0].repair_for("any").repair, RepairMode::kSafe);
}

TEST(ConfigRepairKeys, ServerKeysAndPerToolOverrides) {
  const Config c = load_text(
      "servers:\n"
      "  s:\n"
      "    command: x\n"
      "    repair: aggressive\n"
      "    validate: enforce\n"
      "    param_aliases: {code: code_block, q: query}\n"
      "    tool_repair:\n"
      "      run: {repair: 'off', param_aliases: {q: question}}\n"
      "      other: {validate: 'off'}\n",
      "cfg.yaml", false);
  const Server& s = c.servers[0];
  EXPECT_EQ(s.repair.repair, RepairMode::kAggressive);
  EXPECT_EQ(s.repair.validate, ValidateMode::kEnforce);
  EXPECT_EQ(s.repair.param_aliases.at("code"), "code_block");
  const RepairSettings run = s.repair_for("run");
  EXPECT_EQ(run.repair, RepairMode::kOff);
  EXPECT_EQ(run.validate, ValidateMode::kEnforce);
  EXPECT_EQ(run.param_aliases.at("q"), "question");
  EXPECT_EQ(run.param_aliases.at("code"), "code_block");
  const RepairSettings other = s.repair_for("other");
  EXPECT_EQ(other.repair, RepairMode::kAggressive);
  EXPECT_EQ(other.validate, ValidateMode::kOff);
}

TEST(ConfigRepairKeys, BadValuesNameTheKeyAndTheChoices) {
  EXPECT_NE(
      yaml_error("servers:\n  s:\n    command: x\n    repair: always\n").find("servers.s.repair"),
      std::string::npos);
  EXPECT_NE(yaml_error("servers:\n  s:\n    command: x\n    validate: strict\n").find("enforce"),
            std::string::npos);
  EXPECT_NE(
      yaml_error("servers:\n  s:\n    command: x\n    param_aliases: {a: a}\n").find("must differ"),
      std::string::npos);
  EXPECT_NE(yaml_error("servers:\n  s:\n    command: x\n    tool_repair: {t: {repiar: safe}}\n")
                .find("repiar"),
            std::string::npos);
}

}  // namespace
}  // namespace toolbridge::config
