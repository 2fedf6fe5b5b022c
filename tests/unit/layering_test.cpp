// The layers hold: every folder of src/ is in CONTRIBUTING.md's "Layers" list, and a file
// includes only its own folder's headers and those of folders earlier in that list. The list is
// the one place the order is written; CMakeLists.txt links each folder's library to the ones
// below it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>

namespace fs = std::filesystem;

namespace {

const fs::path kRoot = TOOLBRIDGE_SOURCE_DIR;

// Folder → its position in the list (the first is the lowest layer).
std::map<std::string, int> documented_layers() {
  std::ifstream in(kRoot / "CONTRIBUTING.md");
  static const std::regex kItem(R"(^(\d+)\. `src/([a-z_]+)`)");
  std::map<std::string, int> layers;
  bool in_section = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("## ", 0) == 0) in_section = line == "## Layers";
    std::smatch m;
    if (in_section && std::regex_search(line, m, kItem)) layers[m[2]] = std::stoi(m[1]);
  }
  return layers;
}

// "FOLDER/..." of each project include of `file` whose folder is one of src/'s.
std::vector<std::pair<int, std::string>> included_folders(const fs::path& file) {
  static const std::regex kInclude(R"(^#include "([a-z_]+)/)");
  std::ifstream in(file);
  std::vector<std::pair<int, std::string>> out;
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    std::smatch m;
    if (std::regex_search(line, m, kInclude) && fs::is_directory(kRoot / "src" / m[1].str()))
      out.emplace_back(n, m[1]);
  }
  return out;
}

}  // namespace

TEST(Layering, EveryFolderOfSrcIsInTheDocumentedOrder) {
  const auto layers = documented_layers();
  ASSERT_GT(layers.size(), 10u) << "CONTRIBUTING.md has no \"## Layers\" list";
  for (const auto& dir : fs::directory_iterator(kRoot / "src")) {
    if (!dir.is_directory()) continue;
    EXPECT_TRUE(layers.count(dir.path().filename().string()))
        << "src/" << dir.path().filename().string()
        << " is not in CONTRIBUTING.md's Layers list: place it there";
  }
}

TEST(Layering, NoFileIncludesAFolderAboveItsOwn) {
  const auto layers = documented_layers();
  std::ostringstream report;
  for (const auto& entry : fs::recursive_directory_iterator(kRoot / "src")) {
    const auto ext = entry.path().extension();
    if (!entry.is_regular_file() || (ext != ".cpp" && ext != ".h")) continue;
    const fs::path rel = fs::relative(entry.path(), kRoot / "src");
    const std::string own = rel.begin()->string();
    if (!layers.count(own)) continue;  // reported by the test above
    for (const auto& [line, folder] : included_folders(entry.path())) {
      if (folder == own) continue;
      auto it = layers.find(folder);
      if (it == layers.end() || it->second >= layers.at(own))
        report << "src/" << rel.generic_string() << ":" << line << " includes " << folder
               << "/ (layer " << (it == layers.end() ? 0 : it->second) << ") from " << own
               << "/ (layer " << layers.at(own) << ")\n";
    }
  }
  EXPECT_EQ(report.str(), "") << "an include goes up the layers (CONTRIBUTING.md, \"Layers\")";
}
