#pragma once
// The gateway's configuration: what `toolbridge serve` reads from YAML or `mcpServers` JSON.
// Every limit has a default here; docs/configuration.md lists them.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/model.h"

namespace toolbridge::config {

using Duration = std::chrono::milliseconds;

// How calls share a server's processes.
enum class Policy {
  kShared,      // one instance, requests multiplexed by id
  kPool,        // min..max instances, each call to the least busy one
  kPerSession,  // one instance per downstream session (trajectory), strictly affine
};

enum class ToolNaming {
  kPrefixed,              // always "server__tool"
  kUnprefixedWhenUnique,  // "tool" when no other server has it, else "server__tool"
};

// How a remote server is spoken to. kAuto tries Streamable HTTP and falls back to the legacy
// HTTP+SSE transport (GET stream + POST endpoint) when the first POST gets a 4xx.
enum class RemoteTransport { kAuto, kStreamableHttp, kSse };

// Adaptive concurrency of one server (concurrency_limit: adaptive): the limit follows the
// server's latency against its sampled minimum (docs/admission.md).
struct AdaptiveLimit {
  std::size_t min_limit = 1;
  std::size_t max_limit = 64;
  Duration window{1'000};           // latency is averaged over this long before the limit moves
  Duration probe_interval{60'000};  // the minimum latency is measured again this often
};

// Call repair and validation (src/repair/): per server, overridable per tool.
enum class RepairMode { kOff, kSafe, kAggressive };
enum class ValidateMode { kOff, kWarn, kEnforce };
struct RepairSettings {
  RepairMode repair = RepairMode::kSafe;
  ValidateMode validate = ValidateMode::kWarn;
  // Parameter names a model writes every time -> the schema's name ("code" -> "code_block").
  std::map<std::string, std::string> param_aliases;
};
// `tool_repair.TOOL`: what is written overrides the server's settings for that tool.
struct ToolRepairOverride {
  std::optional<RepairMode> repair;
  std::optional<ValidateMode> validate;
  std::map<std::string, std::string> param_aliases;  // added to (and over) the server's
};

// The result cache (src/cache/, docs/cache.md). Per server (`cache:` of a server entry),
// overridable per tool.
enum class CacheScope { kGlobal, kTenant, kTrajectory };
enum class CacheTier { kMemory, kDisk, kRedis };
struct ToolCache {
  Duration ttl{300'000};
  CacheScope scope = CacheScope::kGlobal;
  CacheTier tier = CacheTier::kMemory;
};
struct ServerCache {
  bool configured = false;  // the server entry has a `cache:` key
  ToolCache defaults;       // ttl, scope and tier written for the whole server
  bool all_tools = false;   // tools: "*"
  std::map<std::string, ToolCache, std::less<>> tools;  // by the server's own tool name
  // True: the server's readOnlyHint tools are cached (with `defaults`) and its idempotentHint
  // tools coalesced, though not listed. Annotations are the server's word: off by default.
  bool annotations = false;
  // The settings of `tool` if the config caches it (annotations aside).
  const ToolCache* for_tool(std::string_view tool) const {
    if (auto it = tools.find(tool); it != tools.end()) return &it->second;
    return all_tools ? &defaults : nullptr;
  }
};
// `gateway.cache`: where results are kept.
struct CacheStore {
  std::uint64_t memory_bytes = 256ull << 20;
  std::uint64_t max_entry_bytes = 8ull << 20;  // a larger result is passed on, not stored
  std::string disk_path;                       // the LMDB directory; empty: no disk tier
  std::uint64_t disk_bytes = 1ull << 30;
  std::string redis_host;  // empty: no Redis tier
  unsigned short redis_port = 6379;
  Duration redis_timeout{250};  // a Redis read or connect slower than this is a miss
  std::string redis_prefix = "toolbridge:";
};

struct Server {
  std::string name;
  // Remote servers: an http:// or https:// URL instead of a command.
  std::string url;
  RemoteTransport transport = RemoteTransport::kAuto;
  std::map<std::string, std::string> headers;  // sent with every request (API keys)
  bool tls_verify = true;                      // https: check the certificate and host name
  std::string ca_file;                         // https: PEM bundle trusted instead of the system's
  std::size_t max_connections = 16;            // keep-alive connections to one remote instance
  Duration connect_timeout{10'000};            // TCP connect + TLS handshake
  bool remote() const { return !url.empty(); }
  // stdio servers: argv[0] is looked up on PATH when it has no slash; never run through a shell.
  std::string command;
  std::vector<std::string> args;
  std::map<std::string, std::string> env;  // set on top of the inherited allowlist
  std::vector<std::string> inherit_env;    // extra names passed through from the gateway
  std::string cwd;                         // empty: the gateway's working directory
  bool enabled = true;
  Duration startup_timeout{30'000};               // spawn + initialize + first tools/list
  Duration call_timeout{300'000};                 // per request forwarded to this server
  std::map<std::string, Duration> tool_timeouts;  // per tool (server's own name), over call_timeout
  // Tools safe to run twice (by the server's own name; "*" for all). Only these are retried
  // after the server died with the call in flight. Server annotations are hints, not trust.
  std::vector<std::string> idempotent_tools;
  // Tools (server's own names, "*" for all) a client that negotiated the tasks extension runs
  // as tasks kept by the gateway (docs/tasks.md), besides those the server marks itself with
  // execution.taskSupport.
  std::vector<std::string> task_tools;
  std::size_t max_retries = 2;  // per call, always within its deadline
  // Circuit breaker: after this many consecutive calls that timed out,
  // calls fail fast for breaker_cooldown; then one probe call decides (half-open). 0 disables.
  std::size_t breaker_threshold = 5;
  Duration breaker_cooldown{10'000};
  Duration restart_backoff_initial{500};
  Duration restart_backoff_max{30'000};
  Duration ping_timeout{5'000};                   // after a call's deadline: no pong -> recycled
  Duration stop_grace{2'000};                     // each step of close stdin -> SIGTERM -> SIGKILL
  std::size_t max_line_bytes = 64u << 20;         // one message from the server
  std::size_t max_in_flight = 256;                // requests multiplexed on one instance
  std::size_t max_write_queue_bytes = 16u << 20;  // stdio: bytes waiting for the server to read
  std::size_t max_server_requests = 16;           // its requests to agents awaiting an answer
  Duration server_request_timeout{120'000};       // then the server gets an error reply
  // Garbage from the server (invalid lines, dropped writes) and its stderr: logged in full up
  // to this many lines per log_interval, then summed up in one line; always counted.
  std::size_t log_garbage_lines = 5;
  std::size_t log_stderr_lines = 100;
  Duration log_interval{10'000};

  Policy policy = Policy::kShared;
  std::size_t min_instances = 1;  // pool: kept running even when idle
  std::size_t max_instances = 0;  // pool, per_session; 0: 4 for pool, 1024 for per_session
  // pool: ready instances kept idle beyond the busy ones; per_session: started instances waiting
  // for a new session. nullopt: 0 for pool, 2 for per_session (0 if args use ${session.id}).
  std::optional<std::size_t> spares;
  std::size_t target_in_flight = 1;   // pool: grows when every instance has this many
  Duration checkout_timeout{30'000};  // a call waiting for an instance to start
  // Recycling: retire an instance (after its calls in flight finish). 0 disables each.
  std::uint64_t max_calls = 0;
  Duration max_age{0};
  std::size_t max_rss_mb = 0;
  Duration rss_check_interval{5'000};
  // pool: instances above min_instances idle this long are retired; shared: the instance is
  // stopped and started again by the next call. 0: never (pool default 60 s).
  std::optional<Duration> idle_ttl;
  bool rebind_on_exit = false;    // per_session: a session whose instance died gets a fresh one
  bool keep_session_dir = false;  // per_session: keep ${session.dir} after release
  // Put before the text of the isError results the gateway itself makes for this server's tools
  // (timeouts, crashes, breaker, unavailable), for frameworks that show isError as an answer.
  std::string error_prefix;
  // Admission control: calls to this server in flight at once (0: no limit), or adaptive.
  std::size_t concurrency_limit = 0;
  bool adaptive_limit = false;
  AdaptiveLimit adaptive;
  std::map<std::string, std::size_t> tool_limits;  // per tool (server's own name)
  RepairSettings repair;                           // repair, validate, param_aliases
  std::map<std::string, ToolRepairOverride, std::less<>> tool_repair;  // by the server's tool name
  ServerCache cache;  // `cache:`: which tools' results are cached, how long, for whom
  // `record:` (src/replay/): false keeps the server's calls out of a recorded cassette; a map
  // {TOOL: false} (the server's own tool names) keeps those tools out.
  bool record = true;
  std::map<std::string, bool, std::less<>> tool_record;
  bool records(std::string_view tool) const {
    if (auto it = tool_record.find(tool); it != tool_record.end()) return it->second;
    return record;
  }

  // The repair settings of one tool (the server's own name): the server's, with the tool's
  // override applied.
  RepairSettings repair_for(std::string_view tool) const {
    auto it = tool_repair.find(tool);
    if (it == tool_repair.end()) return repair;
    RepairSettings s = repair;
    if (it->second.repair) s.repair = *it->second.repair;
    if (it->second.validate) s.validate = *it->second.validate;
    for (const auto& [from, to] : it->second.param_aliases) s.param_aliases[from] = to;
    return s;
  }

  std::size_t effective_max_instances() const {
    if (policy == Policy::kShared) return 1;
    return max_instances ? max_instances : policy == Policy::kPool ? 4 : 1024;
  }
  std::size_t effective_spares() const {
    if (spares) return *spares;
    if (policy != Policy::kPerSession) return 0;
    return uses_session_var("${session.id}") ? 0
                                             : std::min<std::size_t>(2, effective_max_instances());
  }
  Duration effective_idle_ttl() const {
    if (idle_ttl) return *idle_ttl;
    return policy == Policy::kPool ? Duration{60'000} : Duration{0};
  }
  // True if args, env values or cwd mention `var` (like "${session.dir}").
  bool uses_session_var(std::string_view var) const {
    if (cwd.find(var) != std::string::npos) return true;
    for (const auto& a : args)
      if (a.find(var) != std::string::npos) return true;
    for (const auto& [k, v] : env)
      if (v.find(var) != std::string::npos) return true;
    return false;
  }
};

std::string_view to_string(Policy p);
std::string_view to_string(RepairMode m);
std::string_view to_string(ValidateMode m);
std::string_view to_string(CacheScope s);
std::string_view to_string(CacheTier t);

// The call trace (`trace`): one JSON line per call, off unless `file` is set.
struct Trace {
  std::string file;                   // empty: no trace
  std::size_t max_bytes = 64u << 20;  // a file is rotated (FILE.1, FILE.2, ...) at this size
  std::size_t files = 4;              // rotated files kept beside the current one
  std::size_t buffer = 16'384;        // lines waiting for the writer; more are dropped, counted
};

// OpenTelemetry export of spans (`otel`, and the OTEL_EXPORTER_OTLP_* variables under it): off
// unless an endpoint is set. See docs/tracing.md.
struct Otel {
  enum class Protocol { kProtobuf, kJson };  // OTLP/HTTP: "http/protobuf" or "http/json"
  std::string endpoint;  // the traces URL (http[s]://host:port/v1/traces); empty: no export
  std::vector<std::pair<std::string, std::string>> headers;  // sent with every export
  Protocol protocol = Protocol::kProtobuf;
  double sample_ratio = 1;                  // share of traces exported, decided by trace id
  std::size_t batch_size = 512;             // spans per export request
  std::size_t queue_size = 8192;            // spans waiting for export; more are dropped, counted
  Duration timeout{10'000};                 // one export request, connect to answer
  std::string service_name = "toolbridge";  // resource service.name (OTEL_SERVICE_NAME)
};

// Recording tool results into a cassette (`gateway.record`, src/replay/, docs/replay.md).
struct Record {
  std::string path;                      // the directory runs are written under; empty: off
  std::uint64_t max_bytes = 1ull << 30;  // one run's file; past it calls are no longer recorded
};
// Answering calls from a cassette (`gateway.replay`).
enum class ReplayMode { kStrict, kFallthrough };
struct Replay {
  std::string path;  // a run's directory (or a directory holding one run); empty: off
  ReplayMode mode = ReplayMode::kStrict;
};

// Who may see /dashboard and /v1/trajectories (they show every trajectory's calls).
enum class ObserveAccess { kLoopback, kAnywhere, kOff };

// One API key of `auth.keys`: only the SHA-256 of the token is kept (the token itself is
// dropped when the config is read), with the tenant its calls run as and what it may call.
struct ApiKey {
  std::string name;                        // for logs and messages (never the token)
  std::array<unsigned char, 32> sha256{};  // of the token's bytes
  std::string tenant;                      // overrides X-Toolbridge-Tenant and _meta
  // "server" (every tool of it) or "server__tool" (the exposed name); empty: everything.
  std::vector<std::string> allow;
  // The tool surfaces it may use (docs/surfaces.md); empty: any, and the whole catalog too.
  std::vector<std::string> surfaces;
};

// Authentication of the downstream listener (`auth`). No keys: no authentication.
struct Auth {
  std::vector<ApiKey> keys;
  std::string realm = "toolbridge";
};

// TLS on the downstream listener (`tls`): PEM files, read at start and again on SIGHUP.
struct Tls {
  std::string cert_file;  // empty: plain HTTP
  std::string key_file;
};

struct Gateway {
  std::string host = "127.0.0.1";
  unsigned short port = 8848;
  std::vector<std::string> allowed_origins;  // empty: only localhost origins are accepted
  std::size_t max_body_bytes = 4u << 20;     // POST body cap (413 above)
  // Open sessions, in all and per client address. At a cap, a session idle (nothing in flight,
  // no open stream) for at least session_reclaim_after is closed to make room; a caller between
  // two calls never loses its session: with none that idle, initialize gets 503 + Retry-After.
  std::size_t max_sessions = 16'384;
  std::size_t max_sessions_per_client = 8'192;
  Duration session_reclaim_after{60'000};
  // Named trajectories one client (tenant or address) may hold at once: each may bind an
  // instance of every per_session server.
  std::size_t max_trajectories_per_client = 1024;
  // Downstream TCP connections (and <= 3/4 of the fd limit): at the cap the gateway stops accepting
  // (the kernel's backlog holds new ones) until one closes. Past 3/4 of either cap a response
  // carries `Connection: close`, so idle keep-alive connections are shed without a reset.
  std::size_t max_connections = 16'384;
  // Per client address: over it a new connection gets a whole 503 with Retry-After.
  std::size_t max_connections_per_client = 12'288;
  // Answer bytes held for stalled clients (nothing of it acknowledged between two sweeps), in
  // all and per client address: over either, the stalled connections waiting longest close.
  std::size_t max_unread_bytes = 256u << 20;
  std::size_t max_unread_bytes_per_client = 64u << 20;
  Duration idle_timeout{120'000};  // a connection waiting for (the rest of) a request
  Duration write_timeout{30'000};  // a client not taking its answer is disconnected
  Duration session_idle_ttl{30 * 60'000};
  // What the trajectory view (/v1/trajectories, the dashboard) keeps of finished calls, in all:
  // over it the least recently active idle trajectories are forgotten first.
  std::size_t call_log_max_bytes = 16u << 20;
  // Idempotency keys (src/idempotency/): how long a keyed call's result answers a retry with the
  // same key in its trajectory, and what the kept results may hold in all (over it the least
  // recently finished go first).
  Duration idempotency_ttl{10 * 60'000};
  std::size_t idempotency_max_bytes = 64u << 20;
  // Token records of models with record_tokens (docs/token-records.md): bytes in all and per
  // trajectory, turns per trajectory, and how long a released trajectory's records stay.
  std::size_t token_records_max_bytes = 256u << 20;
  std::size_t token_records_trajectory_max_bytes = 32u << 20;
  std::size_t token_records_max_turns = 1024;
  Duration token_records_ttl{60 * 60'000};
  std::size_t start_concurrency = 4;  // servers initialising at the same time
  ToolNaming tool_naming = ToolNaming::kPrefixed;
  std::string separator = "__";
  std::string log_level = "info";
  Duration shutdown_grace{10'000};  // SIGTERM: in-flight calls may finish this long
  // Where per_session servers' ${session.dir} directories are made. Empty: $TMPDIR (or /tmp)
  // /toolbridge-<pid>, removed at exit.
  std::string session_dir_root;
  // During start-up, initialize and tools/list wait up to this long (from the gateway's start)
  // for every server to be ready or failed, and a call to a starting server's tool waits for it
  // (within its own deadline). 0: answer at once with whatever is ready.
  Duration ready_timeout{30'000};
  // Admission control (0: no limit): calls in flight through the whole gateway, per tenant (a
  // run, unless `tenants` says otherwise) and per trajectory; calls waiting per server.
  std::size_t max_calls_in_flight = 0;
  std::size_t tenant_limit = 0;
  std::size_t trajectory_limit = 0;
  std::size_t admission_queue_size = 16'384;
  struct Tenant {
    std::size_t limit = 0;  // 0: tenant_limit
    double weight = 1;      // share of the admission queue against other tenants
    std::size_t rate = 0;   // calls per second across every gateway (0: tenant_rate)
  };
  // Calls per second one tenant may start across every gateway sharing `shared_limits` (0: no
  // limit); counted in Redis, enforced by each gateway locally while Redis is unreachable.
  std::size_t tenant_rate = 0;
  struct SharedLimits {
    std::string address;   // Redis HOST:PORT; empty: rates are counted locally
    Duration timeout{50};  // an answer not within this: the local count decides
    std::string key_prefix = "toolbridge:";
  };
  SharedLimits shared_limits;
  std::map<std::string, Tenant> tenants;
  // POST /v1/batch: calls per batch (more: 413) and result bytes one batch holds for its
  // answer (a result past it is dropped, its entry says so).
  std::size_t batch_max_calls = 256;
  std::size_t batch_max_result_bytes = 256u << 20;
  // POST /v1/parse: turns one request may carry (`turns: [...]`, more: 413). Parse streams:
  // open at once (more: 503), text one stream holds (more: 413), and how long an idle one is
  // kept before a sweep drops it and cancels its calls.
  std::size_t parse_max_turns = 1024;
  std::size_t parse_max_streams = 256;
  std::size_t parse_stream_max_bytes = 4u << 20;
  Duration parse_stream_idle{60'000};
  CacheStore cache;  // `cache:`
  Trace trace;
  Otel otel;
  Record record;  // `record:`
  Replay replay;  // `replay:`
  ObserveAccess dashboard = ObserveAccess::kLoopback;
  // Stateless (2026-07-28) clients: how long a call waits parked for the retry that answers its
  // input_required result, how many may wait at once, and the ttlMs of list results.
  Duration input_required_ttl{2 * 60'000};
  std::size_t max_input_required = 1024;
  Duration list_ttl{60'000};
  // Tasks (docs/tasks.md): how long a task and its result are kept after it was created, how
  // many one tenant may hold at once, and the bytes of results all tasks may keep together.
  Duration task_ttl{60 * 60'000};
  std::size_t task_max_per_tenant = 256;
  std::size_t task_max_bytes = 256u << 20;
  Auth auth;
  // Listening on a non-loopback address without `auth` refuses to start unless this is set.
  bool allow_unauthenticated = false;
  Tls tls;
  // A second listener for /healthz, /metrics, /dashboard and the admin endpoints without a
  // token (HOST:PORT, e.g. a loopback or cluster-internal address); empty: none.
  std::string admin_listen;
  // This gateway's name among several behind one load balancer: MCP session ids start with it
  // (`ID.` + random), so a balancer rule or another gateway can tell whose session it is.
  std::string gateway_id;
};

// The `surfaces` section (config/surfaces.h, docs/surfaces.md): named views of the tools, read
// once and never changed, so that a reload can swap the whole set.
struct Surfaces;

struct Config {
  Gateway gateway;
  std::vector<Server> servers;  // in file order
  std::vector<Model> models;    // the `models` section (LLM routing), in file order
  std::shared_ptr<const Surfaces> surfaces;  // null or empty: no surfaces
  std::string source;           // file name (or "<embedded>") for messages
};

// Loads YAML (.yaml/.yml) or JSON (.json; other names are sniffed: a leading '{' means JSON).
// JSON accepts `{"mcpServers": {...}}` from Claude Desktop, Cursor, Cline and VS Code as-is: keys
// of other clients inside server entries are ignored, "disabled" and Cline's "timeout" are
// honoured, and gateway keys go in an optional "gateway" (or "toolbridge") object. YAML is
// strict: unknown keys are errors. Throws ConfigError "FILE:LINE:COL: key.path: message".
struct ConfigError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
Config load_file(const std::string& path);
Config load_text(const std::string& text, const std::string& source_name, bool json);

}  // namespace toolbridge::config
