#include "config/gateway_section.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <string_view>

namespace toolbridge::config {
namespace {

constexpr std::array<std::string_view, 59> kGatewayKeys{
    "listen",
    "allowed_origins",
    "max_body_bytes",
    "max_sessions",
    "max_sessions_per_client",
    "max_trajectories_per_client",
    "max_connections",
    "max_connections_per_client",
    "max_unread_bytes",
    "max_unread_bytes_per_client",
    "idle_timeout",
    "write_timeout",
    "session_idle_ttl",
    "session_reclaim_after",
    "call_log_max_bytes",
    "idempotency_ttl",
    "idempotency_max_bytes",
    "token_records_max_bytes",
    "token_records_trajectory_max_bytes",
    "token_records_max_turns",
    "token_records_ttl",
    "start_concurrency",
    "tool_naming",
    "separator",
    "log_level",
    "shutdown_grace",
    "session_dir_root",
    "ready_timeout",
    "max_calls_in_flight",
    "tenant_limit",
    "trajectory_limit",
    "admission_queue_size",
    "tenants",
    "trace",
    "otel",
    "record",
    "replay",
    "dashboard",
    "batch_max_calls",
    "batch_max_result_bytes",
    "parse_max_turns",
    "parse_max_streams",
    "parse_stream_max_bytes",
    "parse_stream_idle",
    "cache",
    "input_required_ttl",
    "max_input_required",
    "list_ttl",
    "task_ttl",
    "task_max_per_tenant",
    "task_max_bytes",
    "auth",
    "allow_unauthenticated",
    "tls",
    "gateway_id",
    "tenant_rate",
    "shared_limits",
    "admin_listen",
    "watch_config",
};
constexpr std::array<std::string_view, 3> kTenantKeys{"limit", "weight", "rate"};
constexpr std::size_t kMaxLimit = 1'000'000;
constexpr std::size_t kMaxBatchCalls = 100'000;
// Parse streams: every open one may hold parse_stream_max_bytes, so both are bounded.
constexpr std::size_t kMaxParseStreams = 100'000;
constexpr std::size_t kMaxParseStreamBytes = 1u << 30;
// The sweep that drops idle streams runs at most this often.
constexpr Duration kMinParseStreamIdle{100};
constexpr std::array<std::string_view, 2> kToolNamings{"prefixed", "unprefixed_when_unique"};
constexpr std::array<std::string_view, 5> kLogLevels{"trace", "debug", "info", "warn", "error"};

void read_parse_key(const NodeReader& r, std::string_view key, const Node& v, const std::string& p,
                    Gateway& g) {
  if (key == "parse_max_turns") {
    g.parse_max_turns = r.count(v, p);
    if (g.parse_max_turns > kMaxBatchCalls)
      r.fail(v.mark, p, fmt::format("at most {} turns", kMaxBatchCalls));
  } else if (key == "parse_max_streams") {
    g.parse_max_streams = r.count(v, p);
    if (g.parse_max_streams > kMaxParseStreams)
      r.fail(v.mark, p, fmt::format("at most {} streams", kMaxParseStreams));
  } else if (key == "parse_stream_max_bytes") {
    g.parse_stream_max_bytes = r.size(v, p);
    if (g.parse_stream_max_bytes > kMaxParseStreamBytes)
      r.fail(v.mark, p, "at most 1GiB: a stream's text is held in memory");
  } else if (key == "parse_stream_idle") {
    g.parse_stream_idle = r.duration(v, p, /*allow_zero=*/false);
    if (g.parse_stream_idle < kMinParseStreamIdle)
      r.fail(v.mark, p, "must be at least 100ms (idle streams are swept every quarter of it)");
  }
}

void read_listen(const NodeReader& r, const Node& v, const std::string& path, Gateway& g) {
  const std::string& listen = r.text(v, path);
  std::string_view host;
  std::string_view port;
  if (!listen.empty() && listen[0] == '[') {
    const std::size_t close = listen.find(']');
    if (close == std::string::npos || close + 1 >= listen.size() || listen[close + 1] != ':') {
      r.fail(v.mark, path,
             fmt::format("expected [address]:port like [::1]:8848, got '{}'", listen));
    }
    host = std::string_view(listen).substr(1, close - 1);
    port = std::string_view(listen).substr(close + 2);
  } else {
    const std::size_t colon = listen.rfind(':');
    if (colon == std::string::npos) {
      r.fail(v.mark, path, fmt::format("expected host:port like 127.0.0.1:8848, got '{}'", listen));
    }
    host = std::string_view(listen).substr(0, colon);
    port = std::string_view(listen).substr(colon + 1);
    if (host.find(':') != std::string_view::npos) {
      r.fail(v.mark, path,
             fmt::format("an IPv6 address needs brackets, like [::1]:8848; got '{}'", listen));
    }
  }
  if (host.empty())
    r.fail(v.mark, path, fmt::format("missing the host in '{}' (127.0.0.1 is local only)", listen));

  unsigned long number = 0;
  auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), number);
  if (port.empty() || ptr != port.data() + port.size() ||
      (ec != std::errc() && ec != std::errc::result_out_of_range)) {
    r.fail(v.mark, path, fmt::format("expected a port number after ':', got '{}'", listen));
  }
  if (ec == std::errc::result_out_of_range || number > 65535) {
    r.fail(v.mark, path,
           fmt::format("port {} is out of range 0-65535 (0 picks a free port)", port));
  }
  g.host = std::string(host);
  g.port = static_cast<unsigned short>(number);
}

std::string origin(const NodeReader& r, const Node& v, const std::string& path) {
  const std::string& o = r.text(v, path);
  std::string_view rest = o;
  bool valid = false;
  for (std::string_view scheme : {"http://", "https://"}) {
    if (rest.starts_with(scheme)) {
      rest.remove_prefix(scheme.size());
      valid = !rest.empty() && rest.find_first_of("/ \t?#") == std::string_view::npos;
      break;
    }
  }
  if (!valid) {
    std::string hint;
    if (o.ends_with("/") && o.size() > 1)
      hint = fmt::format(" (an origin has no path: '{}')", o.substr(0, o.size() - 1));
    r.fail(v.mark, path,
           fmt::format("expected an origin like http://localhost:3000, got '{}'{}", o, hint));
  }
  return o;
}

bool is_tenant_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == ':' || c == '-';
}

// A tenant's share of the admission queue: a number from 0.01 to 1000.
double weight(const NodeReader& r, const Node& v, const std::string& path) {
  if (v.kind == Node::Kind::kScalar && !v.scalar.empty()) {
    double w = 0;
    const char* end = v.scalar.data() + v.scalar.size();
    auto [ptr, ec] = std::from_chars(v.scalar.data(), end, w);
    if (ec == std::errc() && ptr == end && w >= 0.01 && w <= 1000) return w;
  }
  r.fail(v.mark, path, fmt::format("expected a weight from 0.01 to 1000, got {}", r.describe(v)));
}

void read_tenants(const NodeReader& r, const Node& node, const std::string& path, Gateway& g) {
  for (const Entry& t : r.entries(node, path)) {
    const std::string tp = join_path(path, t.key);
    if (t.key.empty() || t.key.size() > 128 ||
        !std::all_of(t.key.begin(), t.key.end(), is_tenant_char)) {
      r.fail(t.key_mark, tp,
             "a tenant name is 1-128 characters of [A-Za-z0-9._:-] (as in X-Toolbridge-Tenant)");
    }
    Gateway::Tenant& tenant = g.tenants[t.key];
    NodeReader::Seen seen;
    for (const Entry& e : r.entries(t.value, tp)) {
      r.check_key(e, tp, kTenantKeys, /*lenient=*/false, seen);
      const std::string p = join_path(tp, e.key);
      if (e.key == "limit") {
        tenant.limit = r.zero_or_count(e.value, p, kMaxLimit);
      } else if (e.key == "rate") {
        tenant.rate = r.zero_or_count(e.value, p, kMaxLimit);
      } else {
        tenant.weight = weight(r, e.value, p);
      }
    }
  }
}

}  // namespace

std::span<const std::string_view> gateway_keys() {
  return kGatewayKeys;
}

void read_gateway(const NodeReader& r, const Node& node, const std::string& path, Gateway& g) {
  NodeReader::Seen seen;
  for (const Entry& e : r.entries(node, path)) {
    r.check_key(e, path, kGatewayKeys, /*lenient=*/false, seen);
    const std::string p = join_path(path, e.key);
    const Node& v = e.value;
    if (e.key == "listen") {
      read_listen(r, v, p, g);
    } else if (e.key == "allowed_origins") {
      g.allowed_origins.clear();
      const auto& list = r.items(v, p);
      for (std::size_t i = 0; i < list.size(); ++i) {
        const std::string item_path = fmt::format("{}[{}]", p, i);
        g.allowed_origins.push_back(origin(r, list[i], item_path));
      }
    } else if (e.key == "max_body_bytes") {
      g.max_body_bytes = r.size(v, p);
    } else if (e.key == "max_sessions") {
      g.max_sessions = r.count(v, p);
    } else if (e.key == "max_sessions_per_client") {
      g.max_sessions_per_client = r.count(v, p);
    } else if (e.key == "max_trajectories_per_client") {
      g.max_trajectories_per_client = r.count(v, p);
    } else if (e.key == "max_connections") {
      g.max_connections = r.count(v, p);
    } else if (e.key == "max_connections_per_client") {
      g.max_connections_per_client = r.count(v, p);
    } else if (e.key == "max_unread_bytes") {
      g.max_unread_bytes = r.size(v, p);
    } else if (e.key == "max_unread_bytes_per_client") {
      g.max_unread_bytes_per_client = r.size(v, p);
    } else if (e.key == "idle_timeout") {
      g.idle_timeout = r.duration(v, p, /*allow_zero=*/false);
    } else if (e.key == "write_timeout") {
      g.write_timeout = r.duration(v, p, /*allow_zero=*/false);
    } else if (e.key == "session_idle_ttl") {
      g.session_idle_ttl = r.duration(v, p, /*allow_zero=*/false);
    } else if (e.key == "call_log_max_bytes") {
      g.call_log_max_bytes = r.size(v, p);
    } else if (e.key == "idempotency_ttl") {
      g.idempotency_ttl = r.duration(v, p, /*allow_zero=*/false);
    } else if (e.key == "idempotency_max_bytes") {
      g.idempotency_max_bytes = r.size(v, p);
    } else if (e.key == "token_records_max_bytes") {
      g.token_records_max_bytes = r.size(v, p);
    } else if (e.key == "token_records_trajectory_max_bytes") {
      g.token_records_trajectory_max_bytes = r.size(v, p);
    } else if (e.key == "token_records_max_turns") {
      g.token_records_max_turns = r.count(v, p);
    } else if (e.key == "token_records_ttl") {
      g.token_records_ttl = r.duration(v, p, /*allow_zero=*/false);
    } else if (e.key == "session_reclaim_after") {
      g.session_reclaim_after = r.duration(v, p, /*allow_zero=*/true);
    } else if (e.key == "shutdown_grace") {
      g.shutdown_grace = r.duration(v, p, /*allow_zero=*/true);
    } else if (e.key == "start_concurrency") {
      g.start_concurrency = r.count(v, p);
    } else if (e.key == "session_dir_root") {
      g.session_dir_root = r.text(v, p);
      if (g.session_dir_root.empty() || g.session_dir_root.front() != '/')
        r.fail(v.mark, p, fmt::format("must be an absolute path, got '{}'", g.session_dir_root));
    } else if (e.key == "tool_naming") {
      g.tool_naming = r.one_of(v, p, kToolNamings) == "prefixed"
                          ? ToolNaming::kPrefixed
                          : ToolNaming::kUnprefixedWhenUnique;
    } else if (e.key == "separator") {
      const std::string& sep = r.text(v, p);
      // Tool names that clients accept are [A-Za-z0-9_-]{1,64}; '.' is allowed by newer ones.
      const bool valid =
          !sep.empty() && sep.size() <= 8 &&
          std::all_of(sep.begin(), sep.end(), [](char c) { return is_name_char(c) || c == '.'; });
      if (!valid) {
        r.fail(
            v.mark, p,
            fmt::format("'{}' must be 1-8 characters from [A-Za-z0-9_.-] so that namespaced tool "
                        "names stay valid",
                        sep));
      }
      g.separator = sep;
    } else if (e.key == "log_level") {
      g.log_level = std::string(r.one_of(v, p, kLogLevels));
    } else if (e.key == "ready_timeout") {
      g.ready_timeout = r.duration(v, p, /*allow_zero=*/true);
    } else if (e.key == "max_calls_in_flight") {
      g.max_calls_in_flight = r.zero_or_count(v, p, kMaxLimit);
    } else if (e.key == "tenant_limit") {
      g.tenant_limit = r.zero_or_count(v, p, kMaxLimit);
    } else if (e.key == "trajectory_limit") {
      g.trajectory_limit = r.zero_or_count(v, p, kMaxLimit);
    } else if (e.key == "admission_queue_size") {
      g.admission_queue_size = r.zero_or_count(v, p, kMaxLimit);
    } else if (e.key == "tenants") {
      read_tenants(r, v, p, g);
    } else if (e.key == "trace") {
      read_trace(r, v, p, g.trace);
    } else if (e.key == "otel") {
      read_otel(r, v, p, g.otel);
    } else if (e.key == "record") {
      read_record(r, v, p, g.record);
    } else if (e.key == "replay") {
      read_replay(r, v, p, g.replay);
    } else if (e.key == "dashboard") {
      g.dashboard = read_observe_access(r, v, p);
    } else if (e.key == "batch_max_calls") {
      g.batch_max_calls = r.count(v, p);
      if (g.batch_max_calls > kMaxBatchCalls)
        r.fail(v.mark, p, fmt::format("at most {} calls", kMaxBatchCalls));
    } else if (e.key == "batch_max_result_bytes") {
      g.batch_max_result_bytes = r.size(v, p);
    } else if (e.key.starts_with("parse_")) {
      read_parse_key(r, e.key, v, p, g);
    } else if (e.key == "cache") {
      read_cache_store(r, v, p, g.cache);
    } else if (e.key == "input_required_ttl") {
      g.input_required_ttl = r.duration(v, p, /*allow_zero=*/false);
    } else if (e.key == "max_input_required") {
      g.max_input_required = r.count(v, p);
    } else if (e.key == "list_ttl") {
      g.list_ttl = r.duration(v, p, /*allow_zero=*/true);
    } else if (e.key == "task_ttl") {
      g.task_ttl = r.duration(v, p, /*allow_zero=*/false);
    } else if (e.key == "task_max_per_tenant") {
      g.task_max_per_tenant = r.count(v, p);
    } else if (e.key == "task_max_bytes") {
      g.task_max_bytes = r.size(v, p);
    } else if (e.key == "auth") {
      read_auth(r, v, p, g.auth);
    } else if (e.key == "allow_unauthenticated") {
      g.allow_unauthenticated = r.boolean(v, p);
    } else if (e.key == "tls") {
      read_tls(r, v, p, g.tls);
    } else if (e.key == "gateway_id") {
      g.gateway_id = read_gateway_id(r, v, p);
    } else if (e.key == "tenant_rate") {
      g.tenant_rate = r.zero_or_count(v, p, kMaxLimit);
    } else if (e.key == "shared_limits") {
      read_shared_limits(r, v, p, g.shared_limits);
    } else if (e.key == "admin_listen") {
      Gateway admin;
      read_listen(r, v, p, admin);
      g.admin_listen = r.text(v, p);
    } else if (e.key == "watch_config") {
      r.boolean(v, p);  // checked here; the reloader reads it (config/diff.h watch_config_of)
    }
  }
}

}  // namespace toolbridge::config
