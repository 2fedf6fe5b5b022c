// The cassette keys of the gateway section: `record` and `replay` (src/replay/, docs/replay.md).
#include <fmt/format.h>

#include <array>

#include "config/gateway_section.h"

namespace toolbridge::config {
namespace {

constexpr std::array<std::string_view, 2> kRecordKeys{"path", "max_bytes"};
constexpr std::array<std::string_view, 2> kReplayKeys{"path", "mode"};
constexpr std::array<std::string_view, 2> kModes{"strict", "fallthrough"};
constexpr std::uint64_t kMinRecordBytes = 4096;  // a cassette must hold at least a few calls

std::string absolute_dir(const NodeReader& r, const Node& v, const std::string& path) {
  std::string dir = r.text(v, path);
  if (dir.empty() || dir.front() != '/')
    r.fail(v.mark, path, fmt::format("must be an absolute path, got '{}'", dir));
  return dir;
}

}  // namespace

void read_record(const NodeReader& r, const Node& node, const std::string& path, Record& rec) {
  // `record: /runs` is the short form of `record: {path: /runs}`.
  if (node.kind == Node::Kind::kScalar) {
    rec.path = absolute_dir(r, node, path);
    return;
  }
  NodeReader::Seen seen;
  for (const Entry& e : r.entries(node, path)) {
    r.check_key(e, path, kRecordKeys, /*lenient=*/false, seen);
    const std::string p = join_path(path, e.key);
    if (e.key == "path") {
      rec.path = absolute_dir(r, e.value, p);
    } else {
      rec.max_bytes = r.size(e.value, p);
      if (rec.max_bytes < kMinRecordBytes)
        r.fail(e.value.mark, p, fmt::format("must be at least {} bytes", kMinRecordBytes));
    }
  }
  if (rec.path.empty()) r.fail(node.mark, path, "needs `path`: the directory runs are written in");
}

void read_replay(const NodeReader& r, const Node& node, const std::string& path, Replay& rep) {
  if (node.kind == Node::Kind::kScalar) {
    rep.path = absolute_dir(r, node, path);
    return;
  }
  NodeReader::Seen seen;
  for (const Entry& e : r.entries(node, path)) {
    r.check_key(e, path, kReplayKeys, /*lenient=*/false, seen);
    const std::string p = join_path(path, e.key);
    if (e.key == "path") {
      rep.path = absolute_dir(r, e.value, p);
    } else {
      rep.mode = r.one_of(e.value, p, kModes) == "strict" ? ReplayMode::kStrict
                                                          : ReplayMode::kFallthrough;
    }
  }
  if (rep.path.empty()) r.fail(node.mark, path, "needs `path`: the cassette to replay");
}

}  // namespace toolbridge::config
