// The time seam holds: outside src/base, no code reads std::chrono's clocks or makes an Asio
// timer itself; it reads a base::Clock and waits on a base::Timer, so a ManualClock drives it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace fs = std::filesystem;

namespace {

// Files not converted yet. Empty it, do not add to it.
const std::set<std::string> kNotYetConverted = {};

// A direct read of a std::chrono clock, or an Asio timer of any clock.
const std::regex kDirectTime(
    R"(chrono::(steady_clock|system_clock|high_resolution_clock)\b|)"
    R"(\b(steady_timer|system_timer|high_resolution_timer|deadline_timer|basic_waitable_timer)\b)");

std::vector<std::string> offending_lines(const fs::path& file) {
  std::ifstream in(file);
  std::vector<std::string> found;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n)
    if (std::regex_search(line, kDirectTime)) found.push_back(std::to_string(n) + ": " + line);
  return found;
}

}  // namespace

TEST(ClockSeam, NoCodeOutsideBaseReadsAClockOrMakesATimerItself) {
  const fs::path root = TOOLBRIDGE_SOURCE_DIR;
  std::ostringstream report;
  std::set<std::string> clean_but_listed = kNotYetConverted;
  for (const auto& entry : fs::recursive_directory_iterator(root / "src")) {
    const auto ext = entry.path().extension();
    if (!entry.is_regular_file() || (ext != ".cpp" && ext != ".h")) continue;
    const std::string rel = fs::relative(entry.path(), root).generic_string();
    if (rel.rfind("src/base/", 0) == 0) continue;
    const auto lines = offending_lines(entry.path());
    if (lines.empty()) continue;
    clean_but_listed.erase(rel);
    if (kNotYetConverted.count(rel)) continue;
    for (const auto& l : lines) report << rel << ":" << l << "\n";
  }
  EXPECT_EQ(report.str(), "")
      << "read the time from a base::Clock (now(), wall_now()) and wait on a base::Timer";
  for (const auto& f : clean_but_listed)
    ADD_FAILURE() << f << " no longer reads a clock itself: take it off kNotYetConverted";
}

TEST(ClockSeam, ThePatternCatchesWhatItShould) {
  EXPECT_TRUE(std::regex_search("auto t = std::chrono::steady_clock::now();", kDirectTime));
  EXPECT_TRUE(std::regex_search("using std::chrono::system_clock;", kDirectTime));
  EXPECT_TRUE(std::regex_search("asio::steady_timer t(io);", kDirectTime));
  EXPECT_TRUE(std::regex_search("#include <boost/asio/system_timer.hpp>", kDirectTime));
  EXPECT_FALSE(std::regex_search("const base::Clock& c = base::steady_clock();", kDirectTime));
  EXPECT_FALSE(std::regex_search("base::Timer pause(io_, clock_, 20ms);", kDirectTime));
}
