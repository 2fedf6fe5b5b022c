#pragma once
// A recorded run read back (docs/replay.md): its servers' fingerprints and tool lists, and its
// calls indexed by the replay key (trajectory, server, tool, canonical arguments, occurrence).
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/expected.h"
#include "upstream/instance.h"

namespace toolbridge::replay {

// A server as the run saw it: serverInfo of its initialize and its tool list.
struct ServerRecord {
  std::string server;      // its configured name
  std::string name;        // serverInfo.name
  std::string version;     // serverInfo.version
  std::string tools_hash;  // FNV-1a 64 of its tools/list `tools` array, as recorded
  upstream::Catalog lists;  // the tools it listed (only tools are recorded)
};

struct CallRecord {
  std::uint64_t seq = 0;  // its place in the run (0, 1, ...)
  std::string trajectory;
  std::string server;
  std::string tool;       // the server's own name
  std::string arguments;  // canonical JSON
  std::uint64_t occurrence = 1;  // 1 for the first call with this key in its trajectory
  bool error = false;     // the server answered with a JSON-RPC error (`payload` is it)
  std::string payload;    // the result (or error) object, as the server sent it
  double duration_ms = 0;
  std::string fingerprint;  // tools_hash of its server when it was called
  bool tool_error = false;  // a result with isError: true
  // What follows the id in the JSON-RPC response that replays it, worked out once at load:
  // `,"result":RESULT}` with _meta["toolbridge/replay"] in RESULT, or `,"error":ERROR}`.
  std::string answer_tail;
  std::size_t value_offset = 0;  // where RESULT (or ERROR) starts in answer_tail
};

// The replay key hashed in parts (std::hash, eight bytes a step): the replay stage hashes a
// call's bytes once, for its occurrence count and for the cassette's index alike.
struct KeyHash {
  // Of a call's (server, tool, canonical arguments).
  static std::uint64_t call(std::string_view server, std::string_view tool,
                            std::string_view arguments);
  // Of that call in one trajectory (what occurrences are counted by).
  static std::uint64_t in_trajectory(std::uint64_t call, std::string_view trajectory) {
    return in_trajectory(call, name(trajectory));
  }
  // The same with the trajectory's name() already worked out.
  static std::uint64_t in_trajectory(std::uint64_t call, std::uint64_t trajectory_name);
  // Of a trajectory's name.
  static std::uint64_t name(std::string_view trajectory);
  // Of the whole key (what the cassette's index is by).
  static std::uint64_t of(std::uint64_t in_trajectory, std::uint64_t occurrence);
};

class Cassette {
 public:
  // Reads the run at `path`: a run directory (holding calls.jsonl), or a directory of runs,
  // of which the latest by name is read; or why none can be read.
  static base::Expected<std::unique_ptr<Cassette>> load(const std::string& path);
  // Reads a run from the text of its record file (for tests and tools).
  static base::Expected<std::unique_ptr<Cassette>> parse(std::string_view text, std::string dir);

  const std::string& dir() const { return dir_; }  // the run's directory
  const std::string& run() const { return run_; }  // its id (from its header record)
  const std::vector<CallRecord>& calls() const { return calls_; }
  const std::map<std::string, ServerRecord, std::less<>>& servers() const { return servers_; }
  // Trajectories in the order of their first recorded call.
  const std::vector<std::string>& trajectories() const { return trajectories_; }
  bool has_trajectory(std::string_view t) const;
  bool torn_tail() const { return torn_tail_; }
  std::size_t damaged() const { return damaged_; }

  const CallRecord* find(std::string_view trajectory, std::string_view server,
                         std::string_view tool, std::string_view arguments,
                         std::uint64_t occurrence) const;
  // The same with the key's KeyHash::of already worked out.
  const CallRecord* find(std::uint64_t key, std::string_view trajectory, std::string_view server,
                         std::string_view tool, std::string_view arguments,
                         std::uint64_t occurrence) const;
  // The recorded call most like the one asked: among the trajectory's calls (or, if it has
  // none, the run's first 65,536), the same tool first, then the arguments sharing the longest
  // prefix, the latest among equals; null if there is none.
  const CallRecord* nearest(std::string_view trajectory, std::string_view server,
                            std::string_view tool, std::string_view arguments) const;

 private:
  base::Status add(std::string_view record);
  // Fills index_ from calls_ (once they are all read).
  void build_index();

  std::string dir_;
  std::string run_;
  std::vector<CallRecord> calls_;
  std::map<std::string, ServerRecord, std::less<>> servers_;
  std::vector<std::string> trajectories_;
  std::unordered_map<std::string, std::size_t> trajectory_index_;
  std::vector<std::vector<std::size_t>> by_trajectory_;  // calls_ indices, per trajectory
  // Key hash -> calls_ index + 1 (0: an empty slot): open addressing, linear probing, at most
  // half full, so a replayed call's lookup is one probe of a flat array, not a walk of nodes.
  std::vector<std::pair<std::uint64_t, std::size_t>> index_;
  bool torn_tail_ = false;
  std::size_t damaged_ = 0;
};

// `result` (a tools/call result object) with `info` (raw JSON) as _meta["toolbridge/replay"];
// a result that is not an object comes back as it is.
std::string with_replay_meta(std::string_view result, std::string_view info);

// The replay key of a call, as one string.
std::string replay_key(std::string_view trajectory, std::string_view server, std::string_view tool,
                       std::string_view arguments, std::uint64_t occurrence);
// The directory of the run `path` names (itself, or its latest run); or why there is none.
base::Expected<std::string> run_directory(const std::string& path);

}  // namespace toolbridge::replay
