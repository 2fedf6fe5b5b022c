#include "call/trajectory_name.h"

#include <gtest/gtest.h>

namespace toolbridge::gateway {
namespace {

TEST(TrajectoryName, AcceptsIdsOfAnyScript) {
  for (const char* ok :
       {"traj-1", "run_3.task:17", "a", "user@host+2", "_x", "9", "\xc3\xa9t\xc3\xa9",
        "\xe4\xbb\xbb\xe5\x8a\xa1-1", "0123456789abcdef0123456789abcdef"}) {
    EXPECT_EQ(call::trajectory_name_error(ok), "") << ok;
  }
}

TEST(TrajectoryName, RejectsPathsOptionsAndExpansions) {
  EXPECT_EQ(call::trajectory_name_error("../../tmp/x"),
            "character 1 ('.') is not allowed first; " + std::string(call::kTrajectoryNameRule));
  EXPECT_EQ(call::trajectory_name_error("a/b"),
            "character 2 ('/') is not allowed; " + std::string(call::kTrajectoryNameRule));
  EXPECT_NE(call::trajectory_name_error("--config=/etc/shadow")
                .find("character 1 ('-') is not allowed first"),
            std::string::npos);
  EXPECT_NE(call::trajectory_name_error("${session.dir}").find("character 1 ('$')"),
            std::string::npos);
  EXPECT_NE(call::trajectory_name_error("x${session.dir}").find("character 2 ('$')"),
            std::string::npos);
  EXPECT_NE(call::trajectory_name_error(std::string("ab\0c", 4)).find("character 3 (U+0000)"),
            std::string::npos);
  EXPECT_NE(call::trajectory_name_error("a b").find("character 2 (U+0020)"), std::string::npos);
  EXPECT_NE(call::trajectory_name_error("a\nb").find("U+000A"), std::string::npos);
}

TEST(TrajectoryName, RejectsInvisibleAndInvalidText) {
  EXPECT_NE(call::trajectory_name_error("a\xe2\x80\x8b"
                                        "b")
                .find("U+200B"),
            std::string::npos);  // zero width
  EXPECT_NE(call::trajectory_name_error("a\xe2\x80\xae"
                                        "b")
                .find("U+202E"),
            std::string::npos);  // bidi
  EXPECT_NE(call::trajectory_name_error("a\xc2\xa0"
                                        "b")
                .find("U+00A0"),
            std::string::npos);
  EXPECT_NE(call::trajectory_name_error("a\xff").find("invalid UTF-8 after character 1"),
            std::string::npos);
  EXPECT_NE(call::trajectory_name_error("a\xc0\xaf").find("invalid UTF-8"),
            std::string::npos);  // overlong '/'
  EXPECT_NE(call::trajectory_name_error("\xed\xa0\x80").find("invalid UTF-8"),
            std::string::npos);  // surrogate
  EXPECT_NE(call::trajectory_name_error("a\xe4\xbb").find("invalid UTF-8"),
            std::string::npos);  // truncated
}

TEST(TrajectoryName, LengthIsCountedInCharactersNotBytes) {
  EXPECT_EQ(call::trajectory_name_error(""),
            "the name is empty; " + std::string(call::kTrajectoryNameRule));
  EXPECT_EQ(call::trajectory_name_error(std::string(256, 'x')), "");
  EXPECT_EQ(call::trajectory_name_error(std::string(257, 'x')),
            "the name is longer than 256 characters; " + std::string(call::kTrajectoryNameRule));
  EXPECT_NE(call::trajectory_name_error(std::string(10000, 'x')).find("longer than 256"),
            std::string::npos);
  std::string accents;
  for (int i = 0; i < 256; ++i) accents += "\xc3\xa9";  // 512 bytes, 256 characters
  EXPECT_EQ(call::trajectory_name_error(accents), "");
  EXPECT_NE(call::trajectory_name_error(accents + "\xc3\xa9").find("longer than 256"),
            std::string::npos);
}

}  // namespace
}  // namespace toolbridge::gateway
