#include <gtest/gtest.h>

#include "upstream/upstream.h"

namespace toolbridge::upstream {
namespace {

TEST(ForSession, SubstitutesIdAndDirInArgsEnvAndCwd) {
  config::Server s;
  s.name = "mem";
  s.command = "server-memory";
  s.args = {"--root=${session.dir}", "--tag", "${session.id}-${session.id}", "plain"};
  s.env = {{"MEMORY_FILE_PATH", "${session.dir}/memory.json"}, {"OTHER", "${HOME}"}};
  s.cwd = "${session.dir}";
  const config::Server out = for_session(s, "abc", "/tmp/x/mem-3");
  EXPECT_EQ(out.args, (std::vector<std::string>{"--root=/tmp/x/mem-3", "--tag", "abc-abc", "plain"}));
  EXPECT_EQ(out.env.at("MEMORY_FILE_PATH"), "/tmp/x/mem-3/memory.json");
  EXPECT_EQ(out.env.at("OTHER"), "${HOME}");  // not ours; no shell expands it either
  EXPECT_EQ(out.cwd, "/tmp/x/mem-3");
  EXPECT_EQ(out.command, "server-memory");
}

TEST(ForSession, AValueThatContainsTheVariableIsNotExpandedTwice) {
  config::Server s;
  s.args = {"${session.id}"};
  const config::Server out = for_session(s, "${session.id}", "");
  EXPECT_EQ(out.args[0], "${session.id}");
}

}  // namespace
}  // namespace toolbridge::upstream
