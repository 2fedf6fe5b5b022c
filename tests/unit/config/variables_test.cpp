#include "config/variables.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>
#include <vector>

namespace toolbridge::config {
namespace {

TEST(ConfigVariables, EnvNames) {
  EXPECT_TRUE(is_env_name("HOME"));
  EXPECT_TRUE(is_env_name("_x1"));
  EXPECT_TRUE(is_env_name("API_KEY_2"));
  EXPECT_FALSE(is_env_name(""));
  EXPECT_FALSE(is_env_name("1X"));
  EXPECT_FALSE(is_env_name("A-B"));
  EXPECT_FALSE(is_env_name("A B"));
  EXPECT_FALSE(is_env_name("A=B"));
}

// Sets a variable for one test and removes it afterwards.
struct ScopedEnv {
  std::string name;
  ScopedEnv(std::string n, const char* value) : name(std::move(n)) {
    ::setenv(name.c_str(), value, 1);
  }
  ~ScopedEnv() { ::unsetenv(name.c_str()); }
};

TEST(ConfigVariables, ExpandsEnvReferences) {
  ScopedEnv key("TB_VARIABLES_TEST_KEY", "s3cret");
  ScopedEnv empty("TB_VARIABLES_TEST_EMPTY", "");
  const base::Expected<std::string> e = expand_env_refs("Bearer ${env:TB_VARIABLES_TEST_KEY}");
  ASSERT_TRUE(e) << e.error();
  EXPECT_EQ(*e, "Bearer s3cret");
  EXPECT_EQ(*expand_env_refs("${env:TB_VARIABLES_TEST_KEY}-${env:TB_VARIABLES_TEST_EMPTY}-$env"),
            "s3cret--$env");
}

TEST(ConfigVariables, LeavesOtherTextAlone) {
  EXPECT_EQ(*expand_env_refs(""), "");
  EXPECT_EQ(*expand_env_refs("plain ${HOME} ${session.id} $"), "plain ${HOME} ${session.id} $");
}

TEST(ConfigVariables, SaysWhyAReferenceCannotBeExpanded) {
  ::unsetenv("TB_VARIABLES_TEST_UNSET");
  EXPECT_EQ(expand_env_refs("${env:TB_VARIABLES_TEST_UNSET}").error(),
            "environment variable TB_VARIABLES_TEST_UNSET (from ${env:TB_VARIABLES_TEST_UNSET}) is "
            "not set in the gateway's environment");
  EXPECT_EQ(expand_env_refs("x ${env:HOME").error(), "'${env:' without a closing '}'");
  EXPECT_EQ(expand_env_refs("${env:1BAD}").error(), "'1BAD' is not an environment variable name");
  EXPECT_EQ(expand_env_refs("${env:}").error(), "'' is not an environment variable name");
}

TEST(ConfigVariables, FindsSessionReferencesAsWritten) {
  EXPECT_EQ(session_var_refs("--dir=${session.dir}/x --id ${session.id}"),
            (std::vector<std::string>{"${session.dir}", "${session.id}"}));
  EXPECT_EQ(session_var_refs("${session.nope}"), (std::vector<std::string>{"${session.nope}"}));
  // Without a closing brace the reference runs to the end of the value.
  EXPECT_EQ(session_var_refs("a ${session.id"), (std::vector<std::string>{"${session.id"}));
  EXPECT_TRUE(session_var_refs("${env:HOME} ${sessions} $session.id").empty());
}

}  // namespace
}  // namespace toolbridge::config
