#include "call/trajectory_name.h"

#include <gtest/gtest.h>

namespace toolbridge::gateway {
namespace {

TEST(TrajectoryName, AcceptsIdsOfAnyScript) {
  for (const char* ok :
       {"traj-1", "run_3.task:17", "a", "user@host+2", "_x", "9", "\xc3\xa9t\xc3\xa9",
        "\xe4\xbb\xbb\xe5\x8a\xa1-1", "0123456789abcdef0123456789abcdef"}) {
    EXPECT_TRUE(call::check_trajectory_name(ok).ok()) << ok;
    EXPECT_EQ(call::check_trajectory_name(ok).error(), "") << ok;
  }
}

TEST(TrajectoryName, RejectsPathsOptionsAndExpansions) {
  EXPECT_EQ(call::check_trajectory_name("../../tmp/x").error(),
            "character 1 ('.') is not allowed first; " + std::string(call::kTrajectoryNameRule));
  EXPECT_EQ(call::check_trajectory_name("a/b").error(),
            "character 2 ('/') is not allowed; " + std::string(call::kTrajectoryNameRule));
  EXPECT_NE(call::check_trajectory_name("--config=/etc/shadow")
                .error()
                .find("character 1 ('-') is not allowed first"),
            std::string::npos);
  EXPECT_NE(call::check_trajectory_name("${session.dir}").error().find("character 1 ('$')"),
            std::string::npos);
  EXPECT_NE(call::check_trajectory_name("x${session.dir}").error().find("character 2 ('$')"),
            std::string::npos);
  EXPECT_NE(
      call::check_trajectory_name(std::string("ab\0c", 4)).error().find("character 3 (U+0000)"),
      std::string::npos);
  EXPECT_NE(call::check_trajectory_name("a b").error().find("character 2 (U+0020)"),
            std::string::npos);
  EXPECT_NE(call::check_trajectory_name("a\nb").error().find("U+000A"), std::string::npos);
}

TEST(TrajectoryName, RejectsInvisibleAndInvalidText) {
  EXPECT_NE(call::check_trajectory_name("a\xe2\x80\x8b"
                                        "b")
                .error()
                .find("U+200B"),
            std::string::npos);  // zero width
  EXPECT_NE(call::check_trajectory_name("a\xe2\x80\xae"
                                        "b")
                .error()
                .find("U+202E"),
            std::string::npos);  // bidi
  EXPECT_NE(call::check_trajectory_name("a\xc2\xa0"
                                        "b")
                .error()
                .find("U+00A0"),
            std::string::npos);
  EXPECT_NE(call::check_trajectory_name("a\xff").error().find("invalid UTF-8 after character 1"),
            std::string::npos);
  EXPECT_NE(call::check_trajectory_name("a\xc0\xaf").error().find("invalid UTF-8"),
            std::string::npos);  // overlong '/'
  EXPECT_NE(call::check_trajectory_name("\xed\xa0\x80").error().find("invalid UTF-8"),
            std::string::npos);  // surrogate
  EXPECT_NE(call::check_trajectory_name("a\xe4\xbb").error().find("invalid UTF-8"),
            std::string::npos);  // truncated
}

TEST(TrajectoryName, LengthIsCountedInCharactersNotBytes) {
  EXPECT_EQ(call::check_trajectory_name("").error(),
            "the name is empty; " + std::string(call::kTrajectoryNameRule));
  EXPECT_EQ(call::check_trajectory_name(std::string(256, 'x')).error(), "");
  EXPECT_EQ(call::check_trajectory_name(std::string(257, 'x')).error(),
            "the name is longer than 256 characters; " + std::string(call::kTrajectoryNameRule));
  EXPECT_NE(call::check_trajectory_name(std::string(10000, 'x')).error().find("longer than 256"),
            std::string::npos);
  std::string accents;
  for (int i = 0; i < 256; ++i) accents += "\xc3\xa9";  // 512 bytes, 256 characters
  EXPECT_EQ(call::check_trajectory_name(accents).error(), "");
  EXPECT_NE(call::check_trajectory_name(accents + "\xc3\xa9").error().find("longer than 256"),
            std::string::npos);
}

}  // namespace
}  // namespace toolbridge::gateway
