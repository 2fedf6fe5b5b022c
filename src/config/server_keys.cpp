#include "config/server_keys.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/url/parse.hpp>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <limits>
#include <span>

#include "config/duration.h"
#include "config/variables.h"

namespace toolbridge::config {
namespace {

constexpr std::array<std::string_view, 3> kPolicies{"shared", "pool", "per_session"};
constexpr std::array<std::string_view, 3> kTransports{"auto", "streamable_http", "sse"};
// `type` as other clients write it: "http" and "streamable-http" are Streamable HTTP.
constexpr std::array<std::string_view, 6> kTypes{
    "stdio", "http", "streamable-http", "streamable_http", "streamableHttp", "sse"};
constexpr std::array<std::string_view, 2> kBackoffKeys{"initial", "max"};
constexpr std::array<std::string_view, 4> kAdaptiveKeys{"min_limit", "max_limit", "window",
                                                        "probe_interval"};
// The largest concurrency limit a server, tool, tenant or trajectory may be given.
constexpr std::size_t kMaxConcurrencyLimit = 1'000'000;

// Cline and Roo Code write "timeout" in seconds (1-3600); Gemini CLI writes milliseconds
// (default 600000). A number no human means as seconds is taken as milliseconds.
constexpr std::uint64_t kLargestTimeoutInSeconds = 3'600;

std::string item_path(const std::string& path, std::size_t i) {
  return fmt::format("{}[{}]", path, i);
}

// ---------------------------------------------------------------------------------------------
// Remote servers

std::string remote_url(const NodeReader& r, const Node& n, const std::string& path) {
  const std::string& value = r.text(n, path);
  auto parsed = boost::urls::parse_uri(value);
  if (!parsed)
    r.fail(n.mark, path, fmt::format("'{}' is not a URL: {}", value, parsed.error().message()));
  if (parsed->scheme() != "http" && parsed->scheme() != "https") {
    r.fail(n.mark, path, fmt::format("'{}': only http:// and https:// URLs are supported", value));
  }
  if (parsed->host().empty()) r.fail(n.mark, path, fmt::format("'{}' has no host", value));
  return value;
}

void read_url(const NodeReader& r, const Entry& e, const std::string& p, ServerDraft& d) {
  if (d.url_mark) {
    r.fail(e.key_mark, p,
           fmt::format("a second URL; '{}' was given at line {}", d.url_key, d.url_mark->line));
  }
  d.server.url = remote_url(r, e.value, p);
  d.url_mark = e.key_mark;
  d.url_key = e.key;
  // Gemini CLI's httpUrl always means Streamable HTTP.
  if (e.key == "httpUrl" && !d.type_set) d.server.transport = RemoteTransport::kStreamableHttp;
}

void read_transport(const NodeReader& r, const Entry& e, const std::string& p, ServerDraft& d) {
  const std::string_view t = r.one_of(e.value, p, kTransports);
  d.server.transport = t == "sse"               ? RemoteTransport::kSse
                       : t == "streamable_http" ? RemoteTransport::kStreamableHttp
                                                : RemoteTransport::kAuto;
  d.type_set = true;
}

void read_type(const NodeReader& r, const Entry& e, const std::string& p, ServerDraft& d) {
  const std::string_view type = r.one_of(e.value, p, kTypes);
  if (type == "sse") {
    d.server.transport = RemoteTransport::kSse;
  } else if (type != "stdio") {
    d.server.transport = RemoteTransport::kStreamableHttp;
  }
  d.type_set = type != "stdio";
  d.type_mark = e.value.mark;
  d.type_is_stdio = type == "stdio";
}

// Header values may name an environment variable as ${env:NAME}, so API keys stay out of the
// file. An unset variable is an error: a request without its key would fail less clearly.
std::string header_value(const NodeReader& r, const Node& n, const std::string& path) {
  base::Expected<std::string> value = expand_env_refs(r.text(n, path));
  if (!value) r.fail(n.mark, path, value.error());
  if (value->find_first_of("\r\n") != std::string::npos) {
    r.fail(n.mark, path, "a header value must not contain a line break");
  }
  return std::move(*value);
}

bool is_header_name(std::string_view name) {
  if (name.empty() || name.size() > 256) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
  });
}

void read_headers(const NodeReader& r, const Entry& e, const std::string& p, ServerDraft& d) {
  for (const Entry& h : r.entries(e.value, p)) {
    if (!is_header_name(h.key)) {
      r.fail(h.key_mark, p, fmt::format("'{}' is not an HTTP header name", h.key));
    }
    const std::string value = header_value(r, h.value, join_path(p, h.key));
    if (!d.server.headers.emplace(h.key, value).second) {
      r.fail(h.key_mark, p, fmt::format("duplicate header '{}'", h.key));
    }
  }
}

void read_ca_file(const NodeReader& r, const Entry& e, const std::string& p, ServerDraft& d) {
  d.server.ca_file = r.text(e.value, p);
  if (d.server.ca_file.empty()) r.fail(e.value.mark, p, "must not be empty");
}

// ---------------------------------------------------------------------------------------------
// stdio servers

void read_command(const NodeReader& r, const Entry& e, const std::string& p, ServerDraft& d) {
  d.server.command = r.text(e.value, p);
  if (d.server.command.empty()) r.fail(e.value.mark, p, "must not be empty");
  d.has_command = true;
}

void read_args(const NodeReader& r, const Entry& e, const std::string& p, ServerDraft& d) {
  const auto& list = r.items(e.value, p);
  for (std::size_t i = 0; i < list.size(); ++i)
    d.server.args.push_back(r.text(list[i], item_path(p, i)));
}

// A value may name a variable of the gateway's environment as ${env:NAME}; an unset one is an
// error at load, not literal text the server would receive.
void read_env(const NodeReader& r, const Entry& e, const std::string& p, ServerDraft& d) {
  for (const Entry& var : r.entries(e.value, p)) {
    if (var.key.empty() || var.key.find('=') != std::string::npos) {
      r.fail(var.key_mark, p, fmt::format("'{}' is not an environment variable name", var.key));
    }
    const std::string path = join_path(p, var.key);
    base::Expected<std::string> value = expand_env_refs(r.text(var.value, path));
    if (!value) r.fail(var.value.mark, path, value.error());
    if (!d.server.env.emplace(var.key, std::move(*value)).second) {
      r.fail(var.key_mark, p, fmt::format("duplicate variable '{}'", var.key));
    }
  }
}

void read_inherit_env(const NodeReader& r, const Entry& e, const std::string& p, ServerDraft& d) {
  const auto& list = r.items(e.value, p);
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string path = item_path(p, i);
    const std::string& name = r.text(list[i], path);
    if (!is_env_name(name))
      r.fail(list[i].mark, path, fmt::format("'{}' is not an environment variable name", name));
    d.server.inherit_env.push_back(name);
  }
}

// ---------------------------------------------------------------------------------------------
// Timeouts and failures

Duration timeout(const NodeReader& r, const Node& v, const std::string& path) {
  std::uint64_t number = 0;
  if (v.kind == Node::Kind::kScalar) {
    const char* end = v.scalar.data() + v.scalar.size();
    auto [ptr, ec] = std::from_chars(v.scalar.data(), end, number);
    constexpr auto kMaxMilliseconds =
        static_cast<std::uint64_t>(std::numeric_limits<Duration::rep>::max());
    if (ec == std::errc() && ptr == end && number > kLargestTimeoutInSeconds &&
        number <= kMaxMilliseconds) {
      return Duration(static_cast<Duration::rep>(number));
    }
  }
  return r.duration(v, path, /*allow_zero=*/false);
}

void read_tool_timeouts(const NodeReader& r, const Entry& e, const std::string& p, ServerDraft& d) {
  for (const Entry& t : r.entries(e.value, p)) {
    d.server.tool_timeouts[t.key] = r.duration(t.value, join_path(p, t.key), /*allow_zero=*/false);
  }
}

void read_backoff(const NodeReader& r, const Entry& entry, const std::string& path,
                  ServerDraft& d) {
  Server& s = d.server;
  NodeReader::Seen seen;
  std::optional<Mark> max_mark;
  for (const Entry& e : r.entries(entry.value, path)) {
    r.check_key(e, path, kBackoffKeys, /*lenient=*/false, seen);
    const std::string p = join_path(path, e.key);
    if (e.key == "initial") {
      s.restart_backoff_initial = r.duration(e.value, p, /*allow_zero=*/true);
    } else {
      s.restart_backoff_max = r.duration(e.value, p, /*allow_zero=*/false);
      max_mark = e.value.mark;
    }
  }
  if (s.restart_backoff_max < s.restart_backoff_initial) {
    r.fail(max_mark.value_or(entry.value.mark), join_path(path, "max"),
           fmt::format("{} is shorter than initial ({})", format_duration(s.restart_backoff_max),
                       format_duration(s.restart_backoff_initial)));
  }
}

void read_task_tools(const NodeReader& r, const Entry& e, const std::string& p, ServerDraft& d) {
  const auto& list = r.items(e.value, p);
  for (std::size_t i = 0; i < list.size(); ++i) {
    d.server.task_tools.push_back(r.text(list[i], item_path(p, i)));
  }
}

void read_idempotent_tools(const NodeReader& r, const Entry& e, const std::string& p,
                           ServerDraft& d) {
  const auto& list = r.items(e.value, p);
  for (std::size_t i = 0; i < list.size(); ++i) {
    d.server.idempotent_tools.push_back(r.text(list[i], item_path(p, i)));
  }
}

// A short marker of printable text (it starts every gateway-made error an agent reads).
std::string read_error_prefix(const NodeReader& r, const Entry& e, const std::string& p) {
  const std::string& prefix = r.text(e.value, p);
  const bool printable = std::all_of(prefix.begin(), prefix.end(), [](char c) {
    return static_cast<unsigned char>(c) >= 0x20 && c != 0x7F;
  });
  if (prefix.size() > 64 || !printable) {
    r.fail(e.value.mark, p,
           fmt::format("must be at most 64 bytes of printable text (no control characters), got "
                       "{} bytes",
                       prefix.size()));
  }
  return prefix;
}

void read_policy(const NodeReader& r, const Entry& e, const std::string& p, ServerDraft& d) {
  const std::string_view policy = r.one_of(e.value, p, kPolicies);
  d.server.policy = policy == "pool"          ? Policy::kPool
                    : policy == "per_session" ? Policy::kPerSession
                                              : Policy::kShared;
}

// ---------------------------------------------------------------------------------------------
// Admission control

void read_concurrency_limit(const NodeReader& r, const Entry& e, const std::string& p,
                            ServerDraft& d) {
  if (e.value.kind == Node::Kind::kScalar && e.value.scalar == "adaptive") {
    d.server.adaptive_limit = true;
    return;
  }
  if (e.value.kind == Node::Kind::kScalar && !e.value.scalar.empty() &&
      std::isdigit(static_cast<unsigned char>(e.value.scalar[0]))) {
    d.server.concurrency_limit = r.zero_or_count(e.value, p, kMaxConcurrencyLimit);
    return;
  }
  r.fail(e.value.mark, p,
         fmt::format("expected a number of calls (0: no limit) or 'adaptive', got {}",
                     r.describe(e.value)));
}

void read_adaptive(const NodeReader& r, const Entry& entry, const std::string& path,
                   ServerDraft& d) {
  AdaptiveLimit& a = d.server.adaptive;
  NodeReader::Seen seen;
  std::optional<Mark> max_mark;
  for (const Entry& e : r.entries(entry.value, path)) {
    r.check_key(e, path, kAdaptiveKeys, /*lenient=*/false, seen);
    const std::string p = join_path(path, e.key);
    if (e.key == "min_limit") {
      a.min_limit = r.count(e.value, p);
    } else if (e.key == "max_limit") {
      a.max_limit = r.count(e.value, p);
      max_mark = e.value.mark;
    } else if (e.key == "window") {
      a.window = r.duration(e.value, p, /*allow_zero=*/false);
    } else {
      a.probe_interval = r.duration(e.value, p, /*allow_zero=*/false);
    }
  }
  if (a.max_limit < a.min_limit || a.max_limit > kMaxConcurrencyLimit) {
    r.fail(max_mark.value_or(entry.value.mark), join_path(path, "max_limit"),
           fmt::format("{} must be from min_limit ({}) to {}", a.max_limit, a.min_limit,
                       kMaxConcurrencyLimit));
  }
}

void read_tool_limits(const NodeReader& r, const Entry& e, const std::string& p, ServerDraft& d) {
  for (const Entry& t : r.entries(e.value, p)) {
    const std::size_t n = r.zero_or_count(t.value, join_path(p, t.key), kMaxConcurrencyLimit);
    if (n > 0) d.server.tool_limits[t.key] = n;
  }
}

// ---------------------------------------------------------------------------------------------
// The table: one reader per key, grouped by what the key is about.

// Short names for the reader's parameters, so that most keys read in one line.
using R = const NodeReader&;
using E = const Entry&;
using P = const std::string&;
using D = ServerDraft&;

// `record: false`, or `record: {TOOL: false, ...}` (the server's own tool names).
void read_record(const NodeReader& r, const Entry& e, const std::string& p, ServerDraft& d) {
  if (e.value.kind != Node::Kind::kMap) {
    d.server.record = r.boolean(e.value, p);
    return;
  }
  for (const Entry& t : r.entries(e.value, p))
    d.server.tool_record[t.key] = r.boolean(t.value, join_path(p, t.key));
}

struct KeyReader {
  std::string_view key;
  ServerKeyReader read;
};

constexpr KeyReader kRemoteKeyReaders[] = {
    {"url", read_url},
    {"serverUrl", read_url},
    {"httpUrl", read_url},
    {"transport", read_transport},
    {"type", read_type},
    {"headers", read_headers},
    {"tls_verify", [](R r, E e, P p, D d) { d.server.tls_verify = r.boolean(e.value, p); }},
    {"ca_file", read_ca_file},
    {"max_connections", [](R r, E e, P p, D d) { d.server.max_connections = r.count(e.value, p); }},
    {"connect_timeout",
     [](R r, E e, P p, D d) {
       d.server.connect_timeout = r.duration(e.value, p, /*allow_zero=*/false);
     }},
};

constexpr KeyReader kStdioKeyReaders[] = {
    {"command", read_command},
    {"args", read_args},
    {"env", read_env},
    {"inherit_env", read_inherit_env},
    {"cwd", [](R r, E e, P p, D d) { d.server.cwd = r.text(e.value, p); }},
};

constexpr KeyReader kLifecycleKeyReaders[] = {
    {"enabled", [](R r, E e, P p, D d) { d.enabled.emplace(r.boolean(e.value, p), e.value.mark); }},
    {"disabled",
     [](R r, E e, P p, D d) { d.disabled.emplace(r.boolean(e.value, p), e.value.mark); }},
    {"startup_timeout",
     [](R r, E e, P p, D d) {
       d.server.startup_timeout = r.duration(e.value, p, /*allow_zero=*/false);
     }},
    {"call_timeout",
     [](R r, E e, P p, D d) {
       d.server.call_timeout = r.duration(e.value, p, /*allow_zero=*/false);
       d.call_timeout_set = true;
     }},
    {"tool_timeouts", read_tool_timeouts},
    {"record", read_record},
    {"timeout", [](R r, E e, P p, D d) { d.foreign_timeout = timeout(r, e.value, p); }},
    {"restart_backoff", read_backoff},
    {"idempotent_tools", read_idempotent_tools},
    {"task_tools", read_task_tools},
    {"max_retries", [](R r, E e, P p, D d) { d.server.max_retries = r.zero_or_count(e.value, p); }},
    {"breaker_threshold",
     [](R r, E e, P p, D d) { d.server.breaker_threshold = r.zero_or_count(e.value, p, 1000); }},
    {"breaker_cooldown",
     [](R r, E e, P p, D d) {
       d.server.breaker_cooldown = r.duration(e.value, p, /*allow_zero=*/false);
     }},
    {"ping_timeout",
     [](R r, E e, P p, D d) {
       d.server.ping_timeout = r.duration(e.value, p, /*allow_zero=*/false);
     }},
    {"stop_grace",
     [](R r, E e, P p, D d) { d.server.stop_grace = r.duration(e.value, p, /*allow_zero=*/true); }},
    {"max_line_bytes", [](R r, E e, P p, D d) { d.server.max_line_bytes = r.size(e.value, p); }},
    {"max_in_flight", [](R r, E e, P p, D d) { d.server.max_in_flight = r.count(e.value, p); }},
    {"max_write_queue_bytes",
     [](R r, E e, P p, D d) { d.server.max_write_queue_bytes = r.size(e.value, p); }},
    {"max_server_requests",
     [](R r, E e, P p, D d) { d.server.max_server_requests = r.count(e.value, p); }},
    {"server_request_timeout",
     [](R r, E e, P p, D d) {
       d.server.server_request_timeout = r.duration(e.value, p, /*allow_zero=*/false);
     }},
    {"log_garbage_lines",
     [](R r, E e, P p, D d) {
       d.server.log_garbage_lines = r.zero_or_count(e.value, p, 1'000'000);
     }},
    {"log_stderr_lines",
     [](R r, E e, P p, D d) {
       d.server.log_stderr_lines = r.zero_or_count(e.value, p, 1'000'000);
     }},
    {"log_interval",
     [](R r, E e, P p, D d) {
       d.server.log_interval = r.duration(e.value, p, /*allow_zero=*/false);
     }},
};

constexpr KeyReader kPlacementKeyReaders[] = {
    {"policy", read_policy},
    {"min_instances",
     [](R r, E e, P p, D d) { d.server.min_instances = r.zero_or_count(e.value, p, 10'000); }},
    {"max_instances", [](R r, E e, P p, D d) { d.server.max_instances = r.count(e.value, p); }},
    {"spares", [](R r, E e, P p, D d) { d.server.spares = r.zero_or_count(e.value, p, 10'000); }},
    {"target_in_flight",
     [](R r, E e, P p, D d) { d.server.target_in_flight = r.count(e.value, p); }},
    {"checkout_timeout",
     [](R r, E e, P p, D d) {
       d.server.checkout_timeout = r.duration(e.value, p, /*allow_zero=*/false);
     }},
    {"max_calls",
     [](R r, E e, P p, D d) {
       d.server.max_calls = r.zero_or_count(e.value, p, std::numeric_limits<std::uint32_t>::max());
     }},
    {"max_age",
     [](R r, E e, P p, D d) { d.server.max_age = r.duration(e.value, p, /*allow_zero=*/true); }},
    {"max_rss_mb",
     [](R r, E e, P p, D d) { d.server.max_rss_mb = r.zero_or_count(e.value, p, 1u << 24); }},
    {"rss_check_interval",
     [](R r, E e, P p, D d) {
       d.server.rss_check_interval = r.duration(e.value, p, /*allow_zero=*/false);
     }},
    {"idle_ttl",
     [](R r, E e, P p, D d) { d.server.idle_ttl = r.duration(e.value, p, /*allow_zero=*/true); }},
    {"rebind_on_exit", [](R r, E e, P p, D d) { d.server.rebind_on_exit = r.boolean(e.value, p); }},
    {"keep_session_dir",
     [](R r, E e, P p, D d) { d.server.keep_session_dir = r.boolean(e.value, p); }},
    {"error_prefix",
     [](R r, E e, P p, D d) { d.server.error_prefix = read_error_prefix(r, e, p); }},
    {"concurrency_limit", read_concurrency_limit},
    {"adaptive", read_adaptive},
    {"tool_limits", read_tool_limits},
};

}  // namespace

ServerKeyReader server_key_reader(std::string_view key) {
  for (std::span<const KeyReader> table :
       {std::span<const KeyReader>(kRemoteKeyReaders), std::span<const KeyReader>(kStdioKeyReaders),
        std::span<const KeyReader>(kLifecycleKeyReaders),
        std::span<const KeyReader>(kPlacementKeyReaders)}) {
    for (const KeyReader& k : table) {
      if (k.key == key) return k.read;
    }
  }
  if (ServerKeyReader read = cache_key_reader(key)) return read;
  return repair_key_reader(key);
}

}  // namespace toolbridge::config
