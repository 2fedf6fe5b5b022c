// The configuration reference in docs/ is the key tables of the reader: every key the reader
// accepts has a row, and every row is a key the reader accepts. A key added to the reader
// without its documentation, or a row left behind by a removed key, fails here.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>

#include "config/gateway_section.h"
#include "config/model_keys.h"
#include "config/server_keys.h"
#include "config/surfaces.h"

namespace {

using Keys = std::set<std::string>;

// The first-column keys of the table that follows the first line starting with `intro`.
Keys documented_keys(const std::string& doc, const std::string& intro) {
  std::ifstream in(std::filesystem::path(TOOLBRIDGE_SOURCE_DIR) / doc);
  EXPECT_TRUE(in) << doc;
  static const std::regex kRow(R"(^\| `([a-z_]+)` \|)");
  Keys keys;
  bool found = false, in_table = false;
  for (std::string line; std::getline(in, line);) {
    if (!found) {
      found = line.rfind(intro, 0) == 0;
      continue;
    }
    if (line.rfind("|", 0) != 0) {
      if (in_table) break;
      continue;
    }
    in_table = true;
    std::smatch m;
    if (std::regex_search(line, m, kRow)) keys.insert(m[1]);
  }
  EXPECT_TRUE(found) << doc << " has no line starting with " << intro;
  return keys;
}

template <class Range>
Keys reader_keys(const Range& r) {
  return Keys(r.begin(), r.end());
}

}  // namespace

TEST(ConfigurationReference, GatewayTableIsTheReadersKeys) {
  EXPECT_EQ(documented_keys("docs/configuration.md", "`gateway` (YAML"),
            reader_keys(toolbridge::config::gateway_keys()));
}

TEST(ConfigurationReference, ServerTableIsTheReadersKeys) {
  EXPECT_EQ(documented_keys("docs/configuration.md", "`servers.NAME`"),
            reader_keys(toolbridge::config::kServerKeys));
}

TEST(ConfigurationReference, ModelTableIsTheReadersKeys) {
  EXPECT_EQ(documented_keys("docs/llm-routing.md", "`models.NAME` keys"),
            reader_keys(toolbridge::config::model_keys()));
}

TEST(ConfigurationReference, SurfaceTableIsTheReadersKeys) {
  EXPECT_EQ(documented_keys("docs/configuration.md", "`surfaces.NAME` keys"),
            reader_keys(toolbridge::config::surface_keys()));
}
