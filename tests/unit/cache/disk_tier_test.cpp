#include "cache/disk_tier.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace toolbridge::cache {
namespace {

class CacheDiskTier : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tb-disk-tier-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path() const { return dir_.string(); }

  std::filesystem::path dir_;
};

Entry entry(std::string result, std::int64_t stored = 0, std::int64_t expires = 1'000'000) {
  return Entry{std::move(result), stored, expires, 0.25};
}

TEST_F(CacheDiskTier, StoresReadsAndSurvivesReopening) {
  {
    DiskTier d(path(), 16u << 20);
    d.put("key-1", entry(R"({"content":[]})"), 0);
    auto e = d.find("key-1", 1);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->result, R"({"content":[]})");
    EXPECT_DOUBLE_EQ(e->upstream_seconds, 0.25);
    EXPECT_FALSE(d.find("key-2", 1));
  }
  DiskTier again(path(), 16u << 20);
  auto e = again.find("key-1", 1);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->result, R"({"content":[]})");
  EXPECT_EQ(again.entries(), 1u);
}

TEST_F(CacheDiskTier, ExpiredEntriesAreRemovedWhenRead) {
  DiskTier d(path(), 16u << 20);
  d.put("k", entry("{}", 0, 100), 0);
  EXPECT_TRUE(d.find("k", 99));
  EXPECT_FALSE(d.find("k", 100));
  EXPECT_EQ(d.entries(), 0u);
  EXPECT_EQ(d.evictions(), 1u);
}

TEST_F(CacheDiskTier, ReplacingKeepsOneEntry) {
  DiskTier d(path(), 16u << 20);
  d.put("k", entry("{\"a\":1}", 1), 1);
  d.put("k", entry("{\"a\":2}", 2), 2);
  EXPECT_EQ(d.entries(), 1u);
  EXPECT_EQ(d.find("k", 3)->result, "{\"a\":2}");
  d.erase("k");
  EXPECT_FALSE(d.find("k", 3));
}

TEST_F(CacheDiskTier, StaysWithinItsBytesDroppingTheOldestFirst) {
  const std::uint64_t budget = 2u << 20;
  DiskTier d(path(), budget);
  const std::string big(20'000, 'x');
  for (int i = 0; i < 400; ++i) {  // 8 MB written into 2 MiB
    d.put("k" + std::to_string(i), entry(big, i), i);
    ASSERT_LE(d.bytes(), budget) << i;
  }
  EXPECT_GT(d.evictions(), 0u);
  EXPECT_FALSE(d.find("k0", 500));
  EXPECT_TRUE(d.find("k399", 500));
  EXPECT_LT(d.entries(), 400u);
  EXPECT_LE(std::filesystem::file_size(dir_ / "data.mdb"), budget);
}

TEST_F(CacheDiskTier, AnUnusableDirectoryIsAnErrorWithItsReason) {
  EXPECT_THROW(DiskTier("/proc/self/no-such-dir/cache", 16u << 20), std::runtime_error);
}

}  // namespace
}  // namespace toolbridge::cache
