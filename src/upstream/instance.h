#pragma once
// One running copy of a configured server: the client side of an MCP session over a transport
// (a child's stdio, or HTTP) + the table of requests in flight. Many callers share an instance:
// each request gets a fresh upstream id (and progress token), so two agents that both use id 1
// never meet.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>

#include "base/clock.h"
#include "base/expected.h"
#include "config/config.h"
#include "json/envelope.h"
#include "mcp/protocol.h"
#include "upstream/noise_log.h"
#include "upstream/transport.h"

namespace toolbridge::upstream {

// Why an instance could not give a call its server's answer. The sink gets it typed, with the
// sentence that explains it, never as JSON-RPC error text to be read back.
enum class Failure {
  kUnavailable,  // the instance is not running, or it is shutting down
  kOverloaded,   // max_in_flight reached, or the server does not read what it is sent
  kTimeout,      // the call's deadline passed (the server was told to cancel it)
  kCrashed,      // the server failed with the call sent: it may or may not have run
  kNotSent,      // the server failed before the call reached it: it did not run
};
// The gateway's own JSON-RPC error code for `f` (json/envelope.h), for sinks that answer in
// JSON-RPC.
int jsonrpc_code(Failure f);

// What the instance's scan read of a server's response, framing the message it hands on.
struct Scanned {
  json::Span result;  // where "result" lies, or empty
  json::Span error;   // where "error" lies, or empty
  bool is_error = false;  // the result is a tool result with "isError": true
};

// The downstream side of one forwarded request: where its answer, and whatever the server sends
// on its behalf (progress, log messages, sampling or elicitation requests), must go.
class CallSink {
 public:
  virtual ~CallSink() = default;
  // The complete JSON-RPC response, already carrying the caller's own id.
  virtual void on_response(std::string message) = 0;
  // The same response with what the instance's scan read of it: a sink that uses it need not
  // scan the message again.
  virtual void on_scanned_response(std::string message, const Scanned& scanned) {
    (void)scanned;
    on_response(std::move(message));
  }
  // The instance could not get the server's answer; `detail` says why in words an agent can act
  // on. By default, the gateway's JSON-RPC error for it under the caller's id.
  virtual void on_failure(Failure failure, std::string_view caller_id, std::string detail) {
    on_response(json::make_error(caller_id, jsonrpc_code(failure), detail));
  }
  // A notification that belongs to this call (progress with the caller's token, logging).
  virtual void on_notification(std::string message) = 0;
  // A request from the server (sampling/createMessage, elicitation/create, roots/list). `reply`
  // must be called exactly once with the raw JSON of the result, or of the error object.
  using Reply = std::function<void(bool is_error, std::string raw)>;
  virtual void on_server_request(const std::string& method, std::string params, Reply reply) = 0;
};

struct InputRound;  // instance_input.cpp

struct Catalog {
  boost::json::array tools;
  boost::json::array resources;
  boost::json::array resource_templates;
  boost::json::array prompts;
};

class Instance : public std::enable_shared_from_this<Instance> {
 public:
  using Clock = base::Clock;
  enum class State { kStarting, kReady, kStopping, kExited };

  // Keeps its own copy of `server`: per_session instances differ in args, env and cwd.
  // Its call deadlines, timers and its transport's read `clock`.
  Instance(boost::asio::io_context& io, config::Server server, std::uint64_t number,
           const base::Clock& clock = base::steady_clock());
  ~Instance();

  // Spawns, initialises and lists the catalog, bounded by the startup timeout; or says why it
  // could not.
  boost::asio::awaitable<base::Status> start();

  // Forwards a request. `params` is raw JSON (may be empty). `progress_token` is the caller's
  // raw token if any; the instance substitutes its own and maps it back. On deadline the server
  // gets notifications/cancelled and the sink a timeout error.
  void call(std::string_view method, std::string params, std::string caller_id,
            std::string progress_token, std::shared_ptr<CallSink> sink,
            std::chrono::milliseconds timeout, const std::string& display_name);
  // The caller gave up on its request (notifications/cancelled from the agent).
  void cancel(const std::shared_ptr<CallSink>& sink, std::string_view caller_id,
              const std::string& reason);
  // Sends a notification as-is (logging/setLevel is a request; this is for roots/list_changed).
  void notify(std::string_view method, std::string params);

  // Fails what is pending, then stops the transport: close stdin -> SIGTERM -> SIGKILL, each
  // step bounded by stop_grace, always reaping; a remote instance ends its session.
  boost::asio::awaitable<void> stop();

  State state() const { return state_; }
  // Agents' calls in flight; the instance's own requests (catalog re-reads, ping) never count.
  std::size_t in_flight() const {
    return pending_.size() > own_in_flight_ ? pending_.size() - own_in_flight_ : 0;
  }
  std::uint64_t number() const { return number_; }
  pid_t pid() const { return transport_ ? transport_->pid() : 0; }  // 0 for a remote instance
  bool remote() const { return server_.remote(); }
  mcp::Version version() const { return version_; }
  const mcp::ServerCapabilities& capabilities() const { return caps_; }
  const Catalog& catalog() const { return catalog_; }
  const std::string& server_name() const { return server_.name; }
  // serverInfo of the server's initialize result (or server/discover), as it sent them; empty
  // if it sent none.
  const std::string& info_name() const { return info_name_; }
  const std::string& info_version() const { return info_version_; }
  // Why the last re-read of the lists failed (empty once one succeeds) and the failures in a row:
  // the last good lists are served meanwhile, and /healthz reports it.
  const std::string& list_error() const { return list_error_; }
  int list_failures() const { return list_failures_; }

  // Called once when the process is gone (crash, exit, broken pipe), with the reason.
  std::function<void(const std::string& reason)> on_exit;
  // Called when the server says its tools/resources/prompts changed and the catalog was re-read.
  std::function<void()> on_catalog_changed;
  // Called instead of re-reading when the server announces list_changed, if set: the owner picks
  // the one instance that re-reads for the whole server (relist()).
  std::function<void()> on_list_changed;
  // Re-reads the lists: at most one re-read in flight; requests meanwhile ask for one more.
  void relist();
  bool relisting() const { return relisting_; }
  // Called when the last forwarded call in flight finished (answered, timed out or cancelled).
  std::function<void()> on_idle;
  // Called for each stdout line that is not JSON-RPC (logged, counted, never fatal).
  std::function<void()> on_invalid_line;

 private:
  struct Pending {
    std::string caller_id;           // raw JSON id of the downstream request
    std::string progress_token;      // caller's raw token, empty if none
    std::shared_ptr<CallSink> sink;  // null for the instance's own requests
    std::function<void(std::string_view line, const json::Envelope&)> internal;
    // When a forwarded call times out (max: never; the instance's own requests time themselves).
    Clock::time_point expires = Clock::time_point::max();
    std::string display_name;  // "server__tool" for messages
    std::chrono::milliseconds timeout{0};
    bool sent = false;  // its bytes reached the child's stdin
    // A stateless server's call, kept for its input_required rounds (instance_input.cpp).
    std::string method;
    std::string params;
    int input_rounds = 0;
    bool awaiting_input = false;  // the agent's side is asked; no request is out
    // tasks/result of a server's own task (2025-11-25): its taskId. What the server sends about
    // that task (notifications/tasks/status, requests with its related-task _meta) goes here.
    std::string task_id;
  };

  // `call_id` marks the pending call whose request this line is, so a failure can tell
  // requests the server may have seen from ones it never received.
  void write(std::string line, std::uint64_t call_id = 0);
  Transport::Handlers transport_handlers();
  // initialize + notifications/initialized + first catalog, bounded by startup_timeout.
  boost::asio::awaitable<std::string> initialize();
  // A remote server that answers server/discover with 2026-07-28 is spoken to statelessly
  // (instance_discover.cpp); false: the handshake follows.
  boost::asio::awaitable<bool> discover();
  void on_line(std::string_view line);
  void on_invalid(std::string_view line, const json::Envelope& env);
  void on_response(std::string_view line, const json::Envelope& env);
  void on_lost_answer(std::string_view id, const std::string& reason);
  void on_notification(std::string_view line, const json::Envelope& env);
  void on_server_request(std::string_view line, const json::Envelope& env);
  void fail(const std::string& reason);
  void fail_pending(Failure failure, const std::string& message);
  std::shared_ptr<CallSink> route_target() const;
  // The sink of the pending tasks/result of the server's task `task_id`, or null.
  std::shared_ptr<CallSink> task_target(std::string_view task_id) const;
  void finish(std::uint64_t id);
  // 2026-07-28 servers' input_required results (instance_input.cpp): asked of the call's sink,
  // then the call is sent again with the answers and the server's requestState.
  bool asks_for_input(std::string_view line, const json::Envelope& env) const;
  void ask_for_input(Pending p, std::string_view result);
  void send_with_input(std::uint64_t id, const InputRound& round);
  void fail_input(std::uint64_t id, const std::string& method, boost::json::value error);

  // The instance's own requests (initialize, list calls) awaited inline: the result, or a
  // JSON-RPC error's message (and the whole error object in `error_object` when given).
  boost::asio::awaitable<base::Expected<boost::json::value>> request(
      std::string_view method, std::string params, std::chrono::milliseconds timeout = {},
      boost::json::value* error_object = nullptr);
  // After a deadline passed: is the server still answering at all? Recycles it if not.
  void check_responsive(const std::string& after);
  // One timer per instance, armed for the earliest deadline of the calls in flight (not a timer
  // per call: arming and cancelling one per call cost a scheduler round trip each).
  void arm_deadline(Clock::time_point at);
  void expire_due();
  void time_out(std::uint64_t id, Pending p);
  // `timeout` bounds each request (none during startup: startup_timeout bounds it all).
  boost::asio::awaitable<std::string> fetch_catalog(std::chrono::milliseconds timeout = {});
  boost::asio::awaitable<std::string> list_all(std::string_view method, std::string_view key,
                                               boost::json::array& into,
                                               std::chrono::milliseconds timeout);
  boost::asio::awaitable<void> relist_loop();

  boost::asio::io_context& io_;
  const base::Clock& clock_;
  const config::Server server_;
  std::uint64_t number_;
  State state_ = State::kStarting;
  std::shared_ptr<Transport> transport_;
  std::uint64_t next_id_ = 1;
  std::unordered_map<std::uint64_t, Pending> pending_;
  std::uint64_t last_call_id_ = 0;  // most recent forwarded call, for routing server requests
  std::string exit_reason_;
  mcp::Version version_ = mcp::kLatestVersion;
  std::string info_name_;
  std::string info_version_;
  // Keeps serverInfo.name and .version of an initialize (or discover) result (bounded).
  void keep_server_info(const boost::json::object& result);
  bool stateless_ = false;  // the server speaks 2026-07-28 (instance_discover.cpp)
  mcp::ServerCapabilities caps_;
  Catalog catalog_;
  std::uint64_t garbage_lines_ = 0;
  NoiseLog invalid_log_;   // lines that are not JSON-RPC, messages nested too deep
  NoiseLog repaired_log_;  // messages with invalid UTF-8, passed on repaired
  bool checking_ = false;
  std::size_t own_in_flight_ = 0;    // the instance's own requests among pending_
  std::size_t server_requests_ = 0;  // the server's requests to agents awaiting an answer
  bool relisting_ = false;
  bool relist_again_ = false;
  std::string list_error_;
  int list_failures_ = 0;
  std::shared_ptr<base::Timer> relist_wait_;  // the backoff before a retry
  std::unique_ptr<base::Timer> deadline_timer_;
  Clock::time_point deadline_armed_ = Clock::time_point::max();
};

}  // namespace toolbridge::upstream
