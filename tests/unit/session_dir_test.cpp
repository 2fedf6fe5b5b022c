#include "upstream/session_dir.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace toolbridge::upstream {
namespace {

namespace fs = std::filesystem;

// The directory `dirs` made for instance `number`; empty (and a failure) when it made none.
std::string made(SessionDirs& dirs, std::uint64_t number) {
  base::Expected<std::string> dir = dirs.make(number);
  EXPECT_TRUE(dir) << dir.error();
  return dir ? *dir : std::string();
}

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
  const std::string a = made(dirs, 1);
  const std::string b = made(dirs, 2);
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
  const std::string a = made(dirs, 7);
  dirs.remove(a);
  EXPECT_TRUE(fs::is_directory(a));
}

// A directory of that name is never shared: the older version of a server that a reload
// replaced (docs/reload.md) numbered its instances from 1 too, and may still run them.
TEST_F(SessionDirsTest, AnExistingDirectoryIsNeverSharedButSuffixed) {
  SessionDirs dirs(root_.string(), "mem", false);
  ASSERT_EQ(made(dirs, 3), (root_ / "mem-3").string());
  EXPECT_EQ(made(dirs, 3), (root_ / "mem-3.2").string());
  EXPECT_EQ(made(dirs, 3), (root_ / "mem-3.3").string());
}

TEST_F(SessionDirsTest, WhenEverySuffixIsTakenTheErrorNamesTheLastTried) {
  SessionDirs dirs(root_.string(), "mem", false);
  ASSERT_TRUE(dirs.make(4));
  for (int i = 2; i <= 1000; ++i) fs::create_directory(root_ / ("mem-4." + std::to_string(i)));
  const auto last = dirs.make(4);
  EXPECT_FALSE(last);
  const std::string& error = last.error();
  EXPECT_NE(error.find("cannot create session directory " + (root_ / "mem-4.1000").string()),
            std::string::npos)
      << error;
}

TEST_F(SessionDirsTest, ARootThatCannotBeMadeSaysWhich) {
  std::ofstream(root_.string()) << "a file, not a directory";
  SessionDirs dirs((root_ / "sub").string(), "mem", false);
  const auto none = dirs.make(1);
  EXPECT_FALSE(none);
  const std::string& error = none.error();
  EXPECT_NE(error.find("cannot create session_dir_root"), std::string::npos) << error;
  fs::remove(root_);
}

TEST(SessionDirsDefault, AnEmptyRootMeansOneUnderTmpForThisProcess) {
  SessionDirs dirs("", "srv", false);
  const std::string a = made(dirs, 1);
  ASSERT_NE(a, "");
  EXPECT_NE(dirs.root().find("toolbridge-" + std::to_string(::getpid())), std::string::npos);
  dirs.remove(a);
  EXPECT_FALSE(fs::exists(a));
  std::error_code ec;
  fs::remove(dirs.root(), ec);  // only if empty: other tests of this process may use it
}

}  // namespace
}  // namespace toolbridge::upstream
