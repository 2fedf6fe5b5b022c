#include "upstream/session_dir.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace toolbridge::upstream {
namespace {

namespace fs = std::filesystem;

class SessionDirsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("tb-session-dir-test-" + std::to_string(::getpid()));
    fs::remove_all(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

TEST_F(SessionDirsTest, MakesTheRootOnFirstUseAndOneDirectoryPerInstance) {
  SessionDirs dirs(root_.string(), "mem", false);
  std::string error;
  const std::string a = dirs.make(1, error);
  const std::string b = dirs.make(2, error);
  EXPECT_EQ(error, "");
  EXPECT_EQ(a, (root_ / "mem-1").string());
  EXPECT_EQ(b, (root_ / "mem-2").string());
  EXPECT_TRUE(fs::is_directory(a));
  std::ofstream(fs::path(a) / "memory.json") << "{}";
  dirs.remove(a);
  EXPECT_FALSE(fs::exists(a));
  EXPECT_TRUE(fs::is_directory(b));
  dirs.remove("");  // nothing to remove: no-op
}

TEST_F(SessionDirsTest, KeepSessionDirLeavesThemInPlace) {
  SessionDirs dirs(root_.string(), "mem", true);
  std::string error;
  const std::string a = dirs.make(7, error);
  dirs.remove(a);
  EXPECT_TRUE(fs::is_directory(a));
}

// A directory of that name is never shared: the older version of a server that a reload
// replaced (docs/reload.md) numbered its instances from 1 too, and may still run them.
TEST_F(SessionDirsTest, AnExistingDirectoryIsNeverSharedButSuffixed) {
  SessionDirs dirs(root_.string(), "mem", false);
  std::string error;
  ASSERT_EQ(dirs.make(3, error), (root_ / "mem-3").string());
  EXPECT_EQ(dirs.make(3, error), (root_ / "mem-3.2").string()) << error;
  EXPECT_EQ(dirs.make(3, error), (root_ / "mem-3.3").string()) << error;
  EXPECT_TRUE(error.empty()) << error;
}

TEST_F(SessionDirsTest, WhenEverySuffixIsTakenTheErrorNamesTheLastTried) {
  SessionDirs dirs(root_.string(), "mem", false);
  std::string error;
  ASSERT_NE(dirs.make(4, error), "");
  for (int i = 2; i <= 1000; ++i) fs::create_directory(root_ / ("mem-4." + std::to_string(i)));
  EXPECT_EQ(dirs.make(4, error), "");
  EXPECT_NE(error.find("cannot create session directory " + (root_ / "mem-4.1000").string()),
            std::string::npos)
      << error;
}

TEST_F(SessionDirsTest, ARootThatCannotBeMadeSaysWhich) {
  std::ofstream(root_.string()) << "a file, not a directory";
  SessionDirs dirs((root_ / "sub").string(), "mem", false);
  std::string error;
  EXPECT_EQ(dirs.make(1, error), "");
  EXPECT_NE(error.find("cannot create session_dir_root"), std::string::npos) << error;
  fs::remove(root_);
}

TEST(SessionDirsDefault, AnEmptyRootMeansOneUnderTmpForThisProcess) {
  SessionDirs dirs("", "srv", false);
  std::string error;
  const std::string a = dirs.make(1, error);
  ASSERT_EQ(error, "");
  EXPECT_NE(dirs.root().find("toolbridge-" + std::to_string(::getpid())), std::string::npos);
  dirs.remove(a);
  EXPECT_FALSE(fs::exists(a));
  std::error_code ec;
  fs::remove(dirs.root(), ec);  // only if empty: other tests of this process may use it
}

}  // namespace
}  // namespace toolbridge::upstream
