// The repair corpus (tests/repair_corpus/): every malformed call run through the tool-name
// matcher and the repair stage as the gateway runs them, in safe and aggressive mode, scored
// against the outcome the model meant. Prints the figures docs/repair.md quotes; fails on any wrong
// repair in safe mode.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <boost/json.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "catalog/catalog.h"
#include "catalog/tool_name.h"
#include "json/envelope.h"
#include "repair/answer.h"
#include "repair/repair_stage.h"
#include "upstream/instance.h"

namespace toolbridge::repair {
namespace {

namespace bj = boost::json;
namespace fs = std::filesystem;
using catalog::match_tool_name;
using catalog::ModeOf;
using catalog::repair_tool_name;
using catalog::ToolNameMatch;
using catalog::ToolNameRepair;
using config::RepairMode;

fs::path corpus_dir() {
  if (const char* dir = std::getenv("TOOLBRIDGE_REPAIR_CORPUS")) return dir;
  // The build directory sits in the checkout (build/, build-asan/, ...).
  return fs::path(TOOLBRIDGE_FIXTURE).parent_path().parent_path() / "tests" / "repair_corpus";
}

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Corpus {
  std::map<std::string, upstream::Catalog> servers;
  catalog::Catalog catalog;
  std::vector<bj::object> cases;
  std::size_t schemas = 0;

  Corpus() {
    const bj::value schemas_json = bj::parse(read(corpus_dir() / "schemas.json"));
    for (const auto& [tool, schema] : schemas_json.as_object()) {
      const std::string name(tool);
      const std::size_t sep = name.find("__");
      servers[name.substr(0, sep)].tools.push_back(
          bj::object{{"name", name.substr(sep + 2)}, {"inputSchema", schema}});
      ++schemas;
    }
    std::vector<catalog::Catalog::Source> sources;
    for (const auto& [server, lists] : servers) sources.push_back({server, &lists});
    catalog.rebuild(sources, config::ToolNaming::kPrefixed, "__");
    std::istringstream lines(read(corpus_dir() / "cases.jsonl"));
    for (std::string line; std::getline(lines, line);) {
      if (!line.empty()) cases.push_back(bj::parse(line).as_object());
    }
  }
};

struct Outcome {
  bool refused = false;
  std::string message;
  std::string tool;
  bj::value arguments;
};

Outcome run_case(const Corpus& corpus, const bj::object& c, RepairMode mode) {
  config::Config config;
  for (const auto& [server, lists] : corpus.servers) {
    config::Server s;
    s.name = server;
    s.repair.repair = mode;
    s.repair.validate = config::ValidateMode::kEnforce;
    config.servers.push_back(s);
  }
  telemetry::Metrics metrics;
  RepairStage stage(catalog::schemas_of(corpus.catalog), config, metrics);
  call::Call call;
  call.method = "tools/call";
  call.id = "1";
  call.params = bj::serialize(bj::object{{"name", c.at("tool")}, {"arguments", c.at("arguments")}});
  call.members = *json::object_members(call.params);
  const std::string name(c.at("tool").as_string());
  const catalog::Entry* entry = corpus.catalog.tool(name);
  Outcome out;
  if (!entry) {
    const ToolNameRepair fixed = repair_tool_name(corpus.catalog, call, name,
                                                  [mode](const catalog::Entry&) { return mode; });
    if (fixed.answer) return {true, fixed.answer->why, "", {}};
    if (!fixed.entry) return {true, "Unknown tool", "", {}};
    entry = fixed.entry;
  }
  call.route = call::Route{nullptr, entry->server, entry->original, entry->exposed, entry->exposed};
  call.upstream_params =
      json::rewrite_object(call.params, call.members, {{"name", json::quote(entry->original)}}, {});
  if (auto answer = stage.prepare(call)) return {true, answer->why, entry->exposed, {}};
  out.tool = entry->exposed;
  out.arguments = bj::parse(call.upstream_params).at("arguments");
  return out;
}

struct Score {
  std::size_t cases = 0, repaired = 0, untouched = 0, useful_errors = 0, vague_errors = 0,
              missed = 0, wrong = 0;
  void add(const Score& o) {
    cases += o.cases;
    repaired += o.repaired;
    untouched += o.untouched;
    useful_errors += o.useful_errors;
    vague_errors += o.vague_errors;
    missed += o.missed;
    wrong += o.wrong;
  }
};

// One case scored: what happened against what the model meant.
Score score(const bj::object& c, const Outcome& o, std::vector<std::string>& wrong_ids) {
  Score s;
  s.cases = 1;
  const bool wants_error = c.contains("error");
  const std::string kind(c.at("kind").as_string());
  if (!wants_error) {
    if (o.refused) {
      ++s.missed;
    } else if (o.tool == c.at("expect_tool").as_string() && o.arguments == c.at("expect")) {
      ++(kind == "valid" ? s.untouched : s.repaired);
    } else {
      ++s.wrong;
      wrong_ids.push_back(bj::serialize(c.at("id")) + " " + kind + " -> " + o.tool + " " +
                          bj::serialize(o.arguments));
    }
    return s;
  }
  if (o.refused) {
    bool names_all = true;
    for (const auto& want : c.at("error").as_array()) {
      if (o.message.find(std::string(want.as_string())) == std::string::npos) names_all = false;
    }
    ++(names_all ? s.useful_errors : s.vague_errors);
  } else if (o.tool != c.at("expect_tool").as_string() || o.arguments != c.at("arguments")) {
    ++s.wrong;
    wrong_ids.push_back(bj::serialize(c.at("id")) + " " + kind + " -> " + o.tool + " " +
                        bj::serialize(o.arguments));
  } else {
    ++s.missed;  // passed on as it was, without the error it deserved
  }
  return s;
}

TEST(RepairCorpus, FiguresAndNoWrongRepairInSafeMode) {
  const Corpus corpus;
  // Enforce logs every refused call; the table says it better here.
  const auto level = spdlog::get_level();
  spdlog::set_level(spdlog::level::off);
  struct Restore {
    spdlog::level::level_enum level;
    ~Restore() { spdlog::set_level(level); }
  } restore{level};
  ASSERT_GE(corpus.schemas, 20u);
  ASSERT_GE(corpus.cases.size(), 300u);
  std::cout << "\nrepair corpus: " << corpus.cases.size() << " calls over " << corpus.schemas
            << " tool schemas\n\n"
            << "| mode | repaired as meant | valid, untouched | refused, error names the "
               "problem | refused, vaguer error | missed | wrong repair |\n"
            << "| --- | --- | --- | --- | --- | --- | --- |\n";
  for (const RepairMode mode : {RepairMode::kSafe, RepairMode::kAggressive}) {
    Score total;
    std::map<std::string, Score> by_kind;
    std::vector<std::string> wrong;
    for (const auto& c : corpus.cases) {
      const Score s = score(c, run_case(corpus, c, mode), wrong);
      total.add(s);
      by_kind[std::string(c.at("kind").as_string())].add(s);
    }
    const auto pct = [&](std::size_t n) {
      return std::to_string(n) + " (" + std::to_string(n * 1000 / total.cases / 10) + "." +
             std::to_string(n * 1000 / total.cases % 10) + " %)";
    };
    std::cout << "| " << config::to_string(mode) << " | " << pct(total.repaired) << " | "
              << pct(total.untouched) << " | " << pct(total.useful_errors) << " | "
              << pct(total.vague_errors) << " | " << pct(total.missed) << " | " << pct(total.wrong)
              << " |\n";
    if (mode == RepairMode::kSafe) {
      EXPECT_EQ(total.wrong, 0u) << "wrong repairs in safe mode:\n"
                                 << [&] {
                                      std::string all;
                                      for (const auto& w : wrong) all += w + "\n";
                                      return all;
                                    }();
      for (const auto& [kind, s] : by_kind) {
        if (s.missed + s.vague_errors + s.wrong == 0) continue;
        std::cout << "    safe, " << kind << ": " << s.cases << " cases, " << s.missed
                  << " missed, " << s.vague_errors << " vague, " << s.wrong << " wrong\n";
      }
    } else {
      for (const auto& w : wrong) std::cout << "    aggressive, wrong: " << w << "\n";
    }
  }
}

}  // namespace
}  // namespace toolbridge::repair
