// The parse corpus (tests/parse_corpus/): 343 model outputs in every format, each run through
// the extractor (whole, and byte by byte) and resolved against the fixture's tool schemas, and
// compared with the calls it holds and the number it cannot be read. Prints the table of the
// docs/parse.md; fails on any case that is not exact.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "parse/extractor.h"
#include "parse/tool_index.h"
#include "upstream/instance.h"

namespace toolbridge::parse {
namespace {

namespace bj = boost::json;
namespace fs = std::filesystem;

fs::path corpus_dir() {
  if (const char* dir = std::getenv("TOOLBRIDGE_PARSE_CORPUS")) return dir;
  return fs::path(TOOLBRIDGE_FIXTURE).parent_path().parent_path() / "tests" / "parse_corpus";
}

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The calls of an extraction resolved, as [{"name", "arguments"}].
bj::array resolved(const Extraction& x, const ToolIndex& index, std::size_t& unparsed) {
  bj::array out;
  unparsed = x.unparsed.size();
  for (const auto& raw : x.calls) {
    ParsedCall c;
    if (!index.resolve(raw, c)) {
      ++unparsed;
      continue;
    }
    out.push_back(bj::object{{"name", c.name}, {"arguments", bj::parse(c.arguments)}});
  }
  return out;
}

TEST(ParseCorpus, EveryCaseExactWholeAndStreamed) {
  const bj::object tools = bj::parse(read(corpus_dir() / "tools.json")).as_object();
  upstream::Catalog lists;
  for (const auto& t : tools.at("tools").as_array()) lists.tools.push_back(t);
  catalog::Catalog catalog;
  const std::string server(tools.at("server").as_string());
  catalog.rebuild(std::vector<catalog::Catalog::Source>{{server, &lists}},
                  config::ToolNaming::kPrefixed, "__");
  config::Config config;
  config::Server s;
  s.name = server;
  config.servers.push_back(s);
  const ToolIndex index(catalog, config);

  std::istringstream lines(read(corpus_dir() / "corpus.jsonl"));
  std::map<std::string, std::pair<int, int>> by_kind;  // exact, total
  std::string line;
  int cases = 0;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    const bj::object c = bj::parse(line).as_object();
    const Format* format = find_format(c.at("format").as_string());
    ASSERT_NE(format, nullptr) << line;
    const std::string text(c.at("text").as_string());
    const Extraction whole = extract(*format, text);
    Extractor streamed(*format);
    for (char ch : text) streamed.feed(std::string_view(&ch, 1));
    streamed.finish();
    std::size_t unparsed = 0, streamed_unparsed = 0;
    const bj::array got = resolved(whole, index, unparsed);
    const bj::array got_streamed = resolved(streamed.result(), index, streamed_unparsed);
    const bool exact = got == c.at("calls").as_array() &&
                       unparsed == static_cast<std::size_t>(c.at("unparsed").as_int64());
    EXPECT_TRUE(exact) << c.at("id").as_string() << "\n"
                       << text << "\ngot " << bj::serialize(got) << " unparsed " << unparsed;
    EXPECT_EQ(got, got_streamed) << c.at("id").as_string();
    EXPECT_EQ(unparsed, streamed_unparsed) << c.at("id").as_string();
    auto& k = by_kind[std::string(c.at("kind").as_string())];
    k.first += exact;
    ++k.second;
    ++cases;
  }
  EXPECT_GE(cases, 300);
  std::printf("| kind | exact |\n| --- | --- |\n");
  for (const auto& [kind, n] : by_kind)
    std::printf("| %s | %d / %d |\n", kind.c_str(), n.first, n.second);
}

}  // namespace
}  // namespace toolbridge::parse
