// One error convention (CONTRIBUTING.md, "Errors"): a function that can fail returns
// base::Expected<T> or base::Status; no header in src/ declares a `std::string& error`-style
// out-parameter or a result that is "empty on success".
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

// Headers not converted yet: none are left. Do not add to it.
const std::set<std::string> kNotYetConverted = {};

// A non-const std::string& parameter named for an error, or a contract "empty on success".
const std::regex kOutParameter(
    R"(std::string\s*&\s*(error|err|why|problem|refused|refusal|reason|bad_[a-z_]+)\s*[,)=])");
const std::regex kEmptyOnSuccess(
    R"(empty on success|empty if (it|they) (may|can)|empty when (it is )?allowed)",
    std::regex::icase);

std::vector<std::string> offending_lines(const fs::path& file) {
  std::ifstream in(file);
  std::vector<std::string> found;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    bool out_parameter = false;
    for (std::sregex_iterator it(line.begin(), line.end(), kOutParameter), end; it != end; ++it) {
      const auto at = static_cast<std::size_t>(it->position());
      if (at < 6 || line.compare(at - 6, 6, "const ") != 0) out_parameter = true;
    }
    if (out_parameter || std::regex_search(line, kEmptyOnSuccess))
      found.push_back(std::to_string(n) + ": " + line);
  }
  return found;
}

}  // namespace

TEST(ErrorConvention, NoNewStringOutParameters) {
  const fs::path root = TOOLBRIDGE_SOURCE_DIR;
  std::ostringstream report;
  std::set<std::string> clean_but_listed = kNotYetConverted;
  for (const auto& entry : fs::recursive_directory_iterator(root / "src")) {
    if (!entry.is_regular_file() || entry.path().extension() != ".h") continue;
    const std::string rel = fs::relative(entry.path(), root).generic_string();
    if (rel == "src/base/expected.h") continue;  // it names what it replaces
    const auto lines = offending_lines(entry.path());
    if (lines.empty()) continue;
    clean_but_listed.erase(rel);
    if (kNotYetConverted.count(rel)) continue;
    for (const auto& l : lines) report << rel << ":" << l << "\n";
  }
  EXPECT_EQ(report.str(), "") << "return base::Expected<T> or base::Status (src/base/expected.h)";
  for (const auto& f : clean_but_listed)
    ADD_FAILURE() << f << " follows the convention now: take it off kNotYetConverted";
}

TEST(ErrorConvention, ThePatternCatchesWhatItShould) {
  const auto caught = [](const std::string& line) {
    std::smatch m;
    if (!std::regex_search(line, m, kOutParameter)) return std::regex_search(line, kEmptyOnSuccess);
    const auto at = static_cast<std::size_t>(m.position());
    return at < 6 || line.compare(at - 6, 6, "const ") != 0;
  };
  EXPECT_TRUE(caught("std::string make(std::uint64_t number, std::string& error);"));
  EXPECT_TRUE(caught("bool enable(std::string &why);"));
  EXPECT_TRUE(caught("                     std::string& refused) const;"));
  EXPECT_TRUE(caught("  // Returns an error message, empty on success."));
  EXPECT_TRUE(caught("  // Why the gateway must not run `config`, empty if it may."));
  EXPECT_TRUE(caught("  // words that follow \"server 'NAME' \"; empty if it can be sent."));
  EXPECT_FALSE(caught("  std::string traceparent;   // the caller's trace context, empty if none"));
  EXPECT_FALSE(
      caught("void start_failed(const std::shared_ptr<Member>& m, const std::string& error);"));
  EXPECT_FALSE(caught("void append_quoted(std::string& out, std::string_view s);"));
  EXPECT_FALSE(caught("base::Expected<Url> parse_url(const std::string& text);"));
}
