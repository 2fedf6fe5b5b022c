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
  const std::string id = session_identifier("abc");
  EXPECT_EQ(out.args,
            (std::vector<std::string>{"--root=/tmp/x/mem-3", "--tag", id + "-" + id, "plain"}));
  EXPECT_EQ(out.env.at("MEMORY_FILE_PATH"), "/tmp/x/mem-3/memory.json");
  EXPECT_EQ(out.env.at("OTHER"), "${HOME}");  // not ours; no shell expands it either
  EXPECT_EQ(out.cwd, "/tmp/x/mem-3");
  EXPECT_EQ(out.command, "server-memory");
}

TEST(ForSession, AValueThatContainsTheVariableIsNotExpandedTwice) {
  config::Server s;
  s.args = {"${session.id}", "${session.dir}", "${session.other} ${session.dir"};
  const config::Server out = for_session(s, "${session.dir}", "${session.id}");
  EXPECT_EQ(out.args[0], session_identifier("${session.dir}"));
  EXPECT_EQ(out.args[1], "${session.id}");  // a dir is gateway-made; still not read again
  EXPECT_EQ(out.args[2], "${session.other} ${session.dir");
}

TEST(SessionIdentifier, IsGatewayMadeHexNeverCallerText) {
  const std::vector<std::string> keys{"../../tmp/x",           "--config=/etc/shadow",
                                      std::string("a\0b", 3),  "${session.dir}",
                                      std::string(10000, 'x'), "\xc3\xa9t\xc3\xa9"};
  for (const std::string& key : keys) {
    const std::string id = session_identifier(key);
    ASSERT_EQ(id.size(), 33u) << key;
    EXPECT_EQ(id[0], 's');
    EXPECT_EQ(id.find_first_not_of("0123456789abcdef", 1), std::string::npos) << id;
    EXPECT_EQ(session_identifier(key), id);  // stable: a rebound trajectory sees the same id
  }
  EXPECT_NE(session_identifier("a"), session_identifier("b"));
  EXPECT_NE(session_identifier(std::string("a\0b", 3)), session_identifier("a"));
  // SHA-256("abc") begins ba7816bf8f01cfea414140de5dae2223.
  EXPECT_EQ(session_identifier("abc"), "sba7816bf8f01cfea414140de5dae2223");
}

TEST(ForSession, CallerNamesNeverReachArgvEnvOrCwd) {
  config::Server s;
  s.args = {"--id=${session.id}"};
  s.env = {{"ID", "${session.id}"}};
  s.cwd = "/srv/${session.id}";
  const config::Server out = for_session(s, "../../tmp/x", "/d");
  EXPECT_EQ(out.args[0].find(".."), std::string::npos);
  EXPECT_EQ(out.env.at("ID").find('/'), std::string::npos);
  EXPECT_EQ(out.cwd, "/srv/" + session_identifier("../../tmp/x"));
}

}  // namespace
}  // namespace toolbridge::upstream
