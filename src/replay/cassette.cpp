#include "replay/cassette.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "cache/canonical.h"
#include "json/envelope.h"
#include "json/parse.h"
#include "replay/record_format.h"

namespace toolbridge::replay {

namespace bj = boost::json;
namespace fs = std::filesystem;

namespace {

// A record file larger than this is refused (a cassette is read into memory).
constexpr std::uintmax_t kMaxFileBytes = 4ull << 30;

// The fields of one record, by member name: raw JSON spans of its text.
struct Fields {
  std::string_view text;
  std::vector<json::Member> members;
  std::string_view raw(std::string_view name) const {
    for (const auto& m : members)
      if (m.name == name) return m.value.in(text);
    return {};
  }
  std::string string(std::string_view name) const {
    const std::string_view v = raw(name);
    if (v.empty() || v.front() != '"') return {};
    boost::system::error_code ec;
    const bj::value s = json::parse(v, ec);
    return !ec && s.is_string() ? std::string(s.as_string()) : std::string();
  }
  double number(std::string_view name) const {
    boost::system::error_code ec;
    const bj::value n = json::parse(raw(name), ec);
    return !ec && n.is_number() ? n.to_number<double>(ec) : 0.0;
  }
};

std::size_t common_prefix(std::string_view a, std::string_view b) {
  const auto [ia, ib] = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
  return static_cast<std::size_t>(ia - a.begin());
}

// Is `result` (a tools/call result object) an isError: true result?
bool is_error_result(std::string_view result) {
  const auto members = json::object_members(result);
  if (!members) return false;
  for (const auto& m : *members)
    if (m.name == "isError") return m.value.in(result) == "true";
  return false;
}

std::uint64_t key_hash(std::string_view trajectory, std::string_view server, std::string_view tool,
                       std::string_view arguments, std::uint64_t occurrence) {
  return KeyHash::of(KeyHash::in_trajectory(KeyHash::call(server, tool, arguments), trajectory),
                     occurrence);
}

// The index slot a key starts probing at: its high bits times 2^64/phi (Fibonacci hashing).
std::size_t index_home(std::uint64_t key, std::size_t size) {
  return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> (64 - std::countr_zero(size)));
}

// Each part's hash folded into the running one, so that moving bytes between parts changes it.
std::uint64_t fold(std::uint64_t h, std::uint64_t part) {
  constexpr std::uint64_t kMix = 0x9E3779B97F4A7C15ull;
  return (h ^ (h >> 29)) * kMix + part;
}

}  // namespace

std::string with_replay_meta(std::string_view result, std::string_view info) {
  const auto members = json::object_members(result);
  if (!members) return std::string(result);
  std::string meta = "{}";
  for (const auto& m : *members) {
    if (m.name == "_meta" && json::object_members(m.value.in(result)))
      meta = std::string(m.value.in(result));
  }
  const auto meta_members = json::object_members(meta);
  std::string new_meta =
      json::rewrite_object(meta, *meta_members, {{"toolbridge/replay", std::string(info)}}, {});
  return json::rewrite_object(result, *members, {{"_meta", std::move(new_meta)}}, {});
}

std::string replay_key(std::string_view trajectory, std::string_view server, std::string_view tool,
                       std::string_view arguments, std::uint64_t occurrence) {
  std::string key;
  key.reserve(trajectory.size() + server.size() + tool.size() + arguments.size() + 24);
  key.append(trajectory).append(1, '\0').append(server).append(1, '\0').append(tool);
  key.append(1, '\0').append(arguments).append(1, '\0').append(std::to_string(occurrence));
  return key;
}

base::Expected<std::string> run_directory(const std::string& path) {
  std::error_code ec;
  if (fs::is_regular_file(fs::path(path) / kCallsFile, ec)) return path;
  if (!fs::is_directory(path, ec)) return base::fail(fmt::format("'{}' is not a directory", path));
  std::string latest;
  for (const auto& e : fs::directory_iterator(path, ec)) {
    std::error_code fec;
    if (e.is_directory(fec) && fs::is_regular_file(e.path() / kCallsFile, fec)) {
      latest = std::max(latest, e.path().string());
    }
  }
  if (latest.empty()) {
    return base::fail(
        fmt::format("'{}' holds no run ({} in it or in a directory under it)", path, kCallsFile));
  }
  return latest;
}

base::Expected<std::unique_ptr<Cassette>> Cassette::load(const std::string& path) {
  const base::Expected<std::string> dir = run_directory(path);
  if (!dir) return base::Unexpected{dir.error()};
  const fs::path file = fs::path(*dir) / kCallsFile;
  std::error_code ec;
  const auto size = fs::file_size(file, ec);
  if (ec || size > kMaxFileBytes) {
    return base::fail(ec ? fmt::format("{}: {}", file.string(), ec.message())
                         : fmt::format("{}: larger than 4GiB", file.string()));
  }
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in && !in.eof()) return base::fail(fmt::format("{}: cannot be read", file.string()));
  return parse(text.str(), *dir);
}

base::Expected<std::unique_ptr<Cassette>> Cassette::parse(std::string_view text, std::string dir) {
  auto c = std::make_unique<Cassette>();
  c->dir_ = std::move(dir);
  LogRead log = read_log(text);
  c->torn_tail_ = log.torn_tail;
  c->damaged_ = log.damaged;
  for (const auto& record : log.records) {
    if (base::Status added = c->add(record); !added)
      return base::fail(fmt::format("{}: record {}: {}", c->dir_, c->calls_.size(), added.error()));
  }
  c->build_index();
  return c;
}

void Cassette::build_index() {
  std::size_t size = 16;
  while (size < calls_.size() * 2) size *= 2;
  index_.assign(size, {0, 0});
  const std::size_t mask = size - 1;
  for (std::size_t i = 0; i < calls_.size(); ++i) {
    const CallRecord& c = calls_[i];
    const std::uint64_t key = key_hash(c.trajectory, c.server, c.tool, c.arguments, c.occurrence);
    std::size_t at = index_home(key, size);
    while (index_[at].second != 0) at = (at + 1) & mask;
    index_[at] = {key, i + 1};
  }
}

bool Cassette::has_trajectory(std::string_view t) const {
  return trajectory_index_.contains(std::string(t));
}

base::Status Cassette::add(std::string_view record) {
  auto members = json::object_members(record);
  if (!members) return base::fail("not a JSON object");
  Fields f{record, std::move(*members)};
  const std::string kind = f.string("kind");
  if (kind == "run") {
    run_ = f.string("run");
  } else if (kind == "server") {
    ServerRecord s{f.string("server"), f.string("name"), f.string("version"),
                   f.string("tools_hash"), {}};
    boost::system::error_code ec;
    bj::value tools = json::parse(f.raw("tools"), ec);
    if (!ec && tools.is_array()) s.lists.tools = std::move(tools.as_array());
    servers_[s.server] = std::move(s);
  } else if (kind == "call") {
    CallRecord c;
    c.seq = calls_.size();
    c.trajectory = f.string("trajectory");
    c.server = f.string("server");
    c.tool = f.string("tool");
    c.arguments = cache::canonical_json(f.raw("arguments")).value_or(std::string(f.raw("arguments")));
    c.occurrence = static_cast<std::uint64_t>(f.number("occurrence"));
    c.duration_ms = f.number("duration_ms");
    c.fingerprint = f.string("fingerprint");
    c.error = f.raw("result").empty();
    c.payload = std::string(c.error ? f.raw("error") : f.raw("result"));
    if (c.server.empty() || c.tool.empty() || c.payload.empty() || c.occurrence == 0)
      return base::fail("a call record needs server, tool, occurrence and a result or an error");
    const auto [t, added] = trajectory_index_.emplace(c.trajectory, trajectories_.size());
    if (added) {
      trajectories_.push_back(c.trajectory);
      by_trajectory_.emplace_back();
    }
    by_trajectory_[t->second].push_back(calls_.size());
    c.answer_tail = c.error ? R"(,"error":)" : R"(,"result":)";
    c.value_offset = c.answer_tail.size();
    if (c.error) {
      c.answer_tail += c.payload;
    } else {
      c.tool_error = is_error_result(c.payload);
      c.answer_tail += with_replay_meta(
          c.payload, fmt::format(R"({{"run":{},"seq":{},"trajectory":{},"occurrence":{}}})",
                                 json::quote(run_), c.seq, json::quote(c.trajectory),
                                 c.occurrence));
    }
    c.answer_tail += '}';
    calls_.push_back(std::move(c));
  }
  // Other kinds (written by a later version) are skipped.
  return {};
}

std::uint64_t KeyHash::call(std::string_view server, std::string_view tool,
                            std::string_view arguments) {
  const std::hash<std::string_view> hash;
  return fold(fold(hash(server), hash(tool)), hash(arguments));
}

std::uint64_t KeyHash::in_trajectory(std::uint64_t call, std::uint64_t trajectory_name) {
  return fold(call, trajectory_name);
}

std::uint64_t KeyHash::name(std::string_view trajectory) {
  return std::hash<std::string_view>()(trajectory);
}

std::uint64_t KeyHash::of(std::uint64_t in_trajectory, std::uint64_t occurrence) {
  return fold(in_trajectory, occurrence);
}

const CallRecord* Cassette::find(std::string_view trajectory, std::string_view server,
                                 std::string_view tool, std::string_view arguments,
                                 std::uint64_t occurrence) const {
  return find(key_hash(trajectory, server, tool, arguments, occurrence), trajectory, server, tool,
              arguments, occurrence);
}

const CallRecord* Cassette::find(std::uint64_t key, std::string_view trajectory,
                                 std::string_view server, std::string_view tool,
                                 std::string_view arguments, std::uint64_t occurrence) const {
  if (index_.empty()) return nullptr;
  const std::size_t mask = index_.size() - 1;
  for (std::size_t at = index_home(key, index_.size()); index_[at].second != 0;
       at = (at + 1) & mask) {
    if (index_[at].first != key) continue;
    const CallRecord& c = calls_[index_[at].second - 1];
    if (c.occurrence == occurrence && c.trajectory == trajectory && c.server == server &&
        c.tool == tool && c.arguments == arguments) {
      return &c;
    }
  }
  return nullptr;
}

const CallRecord* Cassette::nearest(std::string_view trajectory, std::string_view server,
                                    std::string_view tool, std::string_view arguments) const {
  // The trajectory's own calls when it has some, else the first kNearestScan of the run: a
  // miss costs a bounded scan.
  constexpr std::size_t kNearestScan = 65'536;
  const std::vector<std::size_t>* own = nullptr;
  if (auto it = trajectory_index_.find(std::string(trajectory)); it != trajectory_index_.end())
    own = &by_trajectory_[it->second];
  const std::size_t n = own ? own->size() : std::min(calls_.size(), kNearestScan);
  const CallRecord* best = nullptr;
  std::size_t best_score = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const CallRecord& c = calls_[own ? (*own)[i] : i];
    // Same trajectory, then same tool, then arguments alike: in that order of weight.
    std::size_t score = 1;
    if (c.trajectory == trajectory) score += 1ull << 40;
    if (c.server == server && c.tool == tool) {
      score += 1ull << 30;
      score += std::min<std::size_t>(common_prefix(c.arguments, arguments), (1u << 20) - 1) << 8;
      if (c.arguments == arguments) score += 1u << 29;
    }
    if (score >= best_score) {  // among equals, the latest (the highest occurrence)
      best = &c;
      best_score = score;
    }
  }
  return best;
}

}  // namespace toolbridge::replay
