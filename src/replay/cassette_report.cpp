#include "replay/cassette_report.h"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <map>
#include <unordered_map>
#include <unordered_set>

#include "cache/canonical.h"

namespace toolbridge::replay {

namespace {

constexpr std::size_t kShown = 120;

std::string cut(std::string_view text) {
  if (text.size() <= kShown) return std::string(text);
  return fmt::format("{}... ({} bytes)", text.substr(0, kShown), text.size());
}

std::string tool_of(const CallRecord& c) { return c.server + "/" + c.tool; }

std::string_view outcome(const CallRecord& c) {
  if (c.error) return "error";
  return c.payload.find("\"isError\":true") != std::string::npos ? "tool_error" : "result";
}

// Results compared as JSON values (formatting aside).
bool same_result(const CallRecord& x, const CallRecord& y) {
  if (x.error != y.error) return false;
  if (x.payload == y.payload) return true;
  const auto cx = cache::canonical_json(x.payload);
  const auto cy = cache::canonical_json(y.payload);
  return cx && cy && *cx == *cy;
}

// Each trajectory's calls, in the order they were made.
std::map<std::string, std::vector<const CallRecord*>> by_trajectory(const Cassette& c) {
  std::map<std::string, std::vector<const CallRecord*>> out;
  for (const auto& call : c.calls()) out[call.trajectory].push_back(&call);
  return out;
}

// B's trajectory for each of A's: the same name, else B's unpaired ones in order of first use.
std::vector<std::pair<std::string, std::string>> pair_trajectories(const Cassette& a,
                                                                   const Cassette& b) {
  std::unordered_set<std::string> paired;
  for (const auto& t : a.trajectories())
    if (b.has_trajectory(t)) paired.insert(t);
  std::vector<std::pair<std::string, std::string>> out;
  std::size_t next = 0;
  const auto& order = b.trajectories();
  for (const auto& t : a.trajectories()) {
    if (b.has_trajectory(t)) {
      out.emplace_back(t, t);
      continue;
    }
    while (next < order.size() && paired.contains(order[next])) ++next;
    if (next < order.size()) {
      paired.insert(order[next]);
      out.emplace_back(t, order[next++]);
    } else {
      out.emplace_back(t, std::string());
    }
  }
  for (const auto& t : order)
    if (!paired.contains(t)) out.emplace_back(std::string(), t);
  return out;
}

// The first divergence of two call sequences, in words; empty if none.
std::string first_divergence(const std::vector<const CallRecord*>& xs,
                             const std::vector<const CallRecord*>& ys) {
  const std::size_t n = std::min(xs.size(), ys.size());
  for (std::size_t i = 0; i < n; ++i) {
    const CallRecord& x = *xs[i];
    const CallRecord& y = *ys[i];
    if (x.server != y.server || x.tool != y.tool) {
      return fmt::format("call {}: different call: A {} {}, B {} {}", i + 1, tool_of(x),
                         cut(x.arguments), tool_of(y), cut(y.arguments));
    }
    if (x.arguments != y.arguments) {
      return fmt::format("call {}: {}: different arguments: A {}, B {}", i + 1, tool_of(x),
                         cut(x.arguments), cut(y.arguments));
    }
    if (!same_result(x, y)) {
      return fmt::format("call {}: {} {}: different result:\n    A {}\n    B {}", i + 1,
                         tool_of(x), cut(x.arguments), cut(x.payload), cut(y.payload));
    }
  }
  if (xs.size() != ys.size()) {
    const bool a_longer = xs.size() > ys.size();
    const CallRecord& extra = *(a_longer ? xs[n] : ys[n]);
    return fmt::format("call {}: {} ends after {} calls; {} goes on with {} {}", n + 1,
                       a_longer ? "B" : "A", n, a_longer ? "A" : "B", tool_of(extra),
                       cut(extra.arguments));
  }
  return {};
}

}  // namespace

void dump(const Cassette& c, std::ostream& out) {
  fmt::print(out, "run {} ({})\n", c.run(), c.dir());
  for (const auto& [name, s] : c.servers()) {
    fmt::print(out, "server {}: {} {}, {} tools, tools_hash {}\n", name, s.name, s.version,
               s.lists.tools.size(), s.tools_hash);
  }
  for (const auto& call : c.calls()) {
    fmt::print(out, "{} {} {} #{} {} -> {} {} ({:.1f} ms)\n", call.seq, call.trajectory,
               tool_of(call), call.occurrence, cut(call.arguments), outcome(call),
               cut(call.payload), call.duration_ms);
  }
  fmt::print(out, "{} calls in {} trajectories", c.calls().size(), c.trajectories().size());
  if (c.torn_tail()) fmt::print(out, "; the last record was cut short and is left out");
  if (c.damaged() > 0) fmt::print(out, "; {} damaged records left out", c.damaged());
  fmt::print(out, "\n");
}

std::size_t diff(const Cassette& a, const Cassette& b, std::ostream& out) {
  const auto xs = by_trajectory(a);
  const auto ys = by_trajectory(b);
  const std::vector<const CallRecord*> none;
  std::size_t diverged = 0;
  struct Count {
    std::size_t compared = 0, changed = 0;
  };
  std::map<std::string, Count> per_tool;
  for (const auto& [ta, tb] : pair_trajectories(a, b)) {
    const auto& x = ta.empty() ? none : xs.at(ta);
    const auto& y = tb.empty() ? none : ys.at(tb);
    const std::string name = ta == tb ? ta : fmt::format("{} / {}", ta.empty() ? "-" : ta,
                                                         tb.empty() ? "-" : tb);
    const std::string d = first_divergence(x, y);
    if (d.empty()) {
      fmt::print(out, "trajectory {}: same ({} calls)\n", name, x.size());
    } else {
      ++diverged;
      fmt::print(out, "trajectory {}: diverges at {}\n", name, d);
    }
    // Results of the calls both runs made with the same key.
    std::unordered_map<std::string, const CallRecord*> in_b;
    for (const CallRecord* c : y)
      in_b.emplace(replay_key("", c->server, c->tool, c->arguments, c->occurrence), c);
    for (const CallRecord* c : x) {
      auto it = in_b.find(replay_key("", c->server, c->tool, c->arguments, c->occurrence));
      if (it == in_b.end()) continue;
      Count& n = per_tool[tool_of(*c)];
      ++n.compared;
      if (!same_result(*c, *it->second)) ++n.changed;
    }
  }
  fmt::print(out, "per tool (calls made by both runs: results changed / compared):\n");
  for (const auto& [tool, n] : per_tool)
    fmt::print(out, "  {}: {} / {}\n", tool, n.changed, n.compared);
  fmt::print(out, "{} of the trajectories diverge\n", diverged);
  return diverged;
}

}  // namespace toolbridge::replay
