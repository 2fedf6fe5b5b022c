// The gateway's observability keys: `trace` (the call trace file) and `dashboard` (who may see
// the dashboard and the trajectory view). Kept apart: they belong to src/telemetry/.
#include <fmt/format.h>

#include <array>

#include "config/gateway_section.h"

namespace toolbridge::config {
namespace {

constexpr std::array<std::string_view, 4> kTraceKeys{"file", "max_bytes", "files", "buffer"};
constexpr std::array<std::string_view, 3> kAccess{"loopback", "anywhere", "off"};
constexpr std::size_t kMinTraceBytes = 4096;  // a file must hold at least a few lines
constexpr std::size_t kMaxTraceFiles = 100;
constexpr std::size_t kMaxTraceBuffer = 1'000'000;

void trace_file(const NodeReader& r, const Node& v, const std::string& path, Trace& t) {
  t.file = r.text(v, path);
  if (t.file.empty() || t.file.front() != '/') {
    r.fail(v.mark, path, fmt::format("must be an absolute path, got '{}'", t.file));
  }
}

}  // namespace

void read_trace(const NodeReader& r, const Node& node, const std::string& path, Trace& t) {
  // `trace: /var/log/toolbridge/calls.jsonl` is the short form of `trace: {file: ...}`.
  if (node.kind == Node::Kind::kScalar) return trace_file(r, node, path, t);
  NodeReader::Seen seen;
  for (const Entry& e : r.entries(node, path)) {
    r.check_key(e, path, kTraceKeys, /*lenient=*/false, seen);
    const std::string p = join_path(path, e.key);
    if (e.key == "file") {
      trace_file(r, e.value, p, t);
    } else if (e.key == "max_bytes") {
      t.max_bytes = r.size(e.value, p);
      if (t.max_bytes < kMinTraceBytes)
        r.fail(e.value.mark, p, fmt::format("must be at least {} bytes", kMinTraceBytes));
    } else if (e.key == "files") {
      t.files = r.zero_or_count(e.value, p, kMaxTraceFiles);
    } else {
      t.buffer = r.zero_or_count(e.value, p, kMaxTraceBuffer);
      if (t.buffer == 0) r.fail(e.value.mark, p, "must be at least 1 line");
    }
  }
  if (t.file.empty()) r.fail(node.mark, path, "needs `file`: the path of the trace file");
}

ObserveAccess read_observe_access(const NodeReader& r, const Node& node, const std::string& path) {
  const std::string_view a = r.one_of(node, path, kAccess);
  return a == "anywhere" ? ObserveAccess::kAnywhere
         : a == "off"    ? ObserveAccess::kOff
                         : ObserveAccess::kLoopback;
}

}  // namespace toolbridge::config
