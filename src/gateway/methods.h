#pragma once
// The MCP method table: each method the gateway answers itself (initialize, ping, the lists,
// logging/setLevel, toolbridge/release) is a handler; the methods servers answer (tools/call,
// prompts/get, resources/*, completion/complete) become Calls run through the pipeline. Every
// front end that speaks JSON-RPC MCP hands its messages here.
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "base/expected.h"
#include "call/call.h"
#include "gateway/session.h"
#include "json/envelope.h"

namespace toolbridge::gateway {

class Gateway;

// A Result as the JSON-RPC response an MCP client gets. Faults of a tool call that the agent
// can reason about (deadline, crash, server down) become tool results with isError.
std::string to_jsonrpc(const call::Call& call, call::Result result);

class Methods {
 public:
  explicit Methods(Gateway& gateway);

  // Handles one message of a POST (or of the legacy transport). Requests either answer at once
  // (into stream->responses) or are run through the pipeline with the stream as their sink, each
  // in a coroutine of its own. Given `deferred`, a call that would run through the pipeline is
  // left there instead (registered as in flight, owed to the stream), for the caller to run
  // through the pipeline in its own coroutine and settle(): a POST of one request saves a spawn.
  void handle(const std::shared_ptr<Session>& session, const std::shared_ptr<PostStream>& stream,
              std::string_view message);
  void handle(const std::shared_ptr<Session>& session, const std::shared_ptr<PostStream>& stream,
              const json::Envelope& env, std::string_view message,
              std::shared_ptr<call::Call>* deferred = nullptr);
  // Where a call's Result goes once the pipeline is done with it (or failed with `failure`): a
  // caller that ran a deferred call hands its Result here.
  static void settle(const std::weak_ptr<Session>& session, PostStream& stream,
                     const call::Call& call, const std::exception_ptr& failure,
                     call::Result result);
  // The client that sent this POST hung up: its calls are cancelled upstream (their slots freed)
  // and nothing more is owed to it.
  void abandon(const std::shared_ptr<Session>& session, const std::shared_ptr<PostStream>& stream,
               const std::string& reason);

 private:
  struct Incoming {
    const std::shared_ptr<Session>& session;
    const std::shared_ptr<PostStream>& stream;
    const json::Envelope& env;
    std::string_view message;
    std::string id;                             // raw JSON
    std::shared_ptr<call::Call>* deferred = nullptr;  // where run_call leaves its call, if set
    std::string_view params() const { return env.params.in(message); }
  };
  using Handler = void (Methods::*)(const Incoming&);

  void answer(const Incoming& in, std::string response);
  // answer(make()) once start-up is over (gateway.ready_timeout at most), so an agent that
  // initializes or lists tools right after the gateway started sees every server that comes up.
  void answer_when_settled(const Incoming& in, std::function<std::string()> make);
  void on_notification(const Incoming& in);
  void on_cancelled(const Incoming& in);

  void initialize(const Incoming& in);
  void ping(const Incoming& in);
  void tools_list(const Incoming& in);
  void surface_list(const Incoming& in);  // tools/list of a session opened on a surface
  void prompts_list(const Incoming& in);
  void resources_list(const Incoming& in);
  void templates_list(const Incoming& in);
  void set_log_level(const Incoming& in);
  void release(const Incoming& in);
  // tools/call, prompts/get, resources/*, completion/complete.
  void run_call(const Incoming& in);
  // The call as the pipeline needs it, or why not (malformed params or _meta, a trajectory
  // refused).
  base::Expected<std::shared_ptr<call::Call>> make_call(const Incoming& in);

  Gateway& gateway_;
  std::unordered_map<std::string_view, Handler> table_;
};

}  // namespace toolbridge::gateway
