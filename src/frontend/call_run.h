#pragma once
// Tool calls run together through the pipeline on behalf of one HTTP request: a batch
// (/v1/batch) or a parsed turn (/v1/parse). Shared by both front ends: who the calls belong to
// (trajectory and tenant, from headers or the body), how each call is built, how they run
// (concurrently, one after another, fail-fast), and the timing of each answer.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/event.h"
#include "call/call.h"
#include "frontend/batch.h"
#include "frontend/batch_codec.h"
#include "gateway/gateway.h"
#include "gateway/pipeline.h"
#include "surfaces/view.h"
#include "transport/http_server.h"

namespace toolbridge::frontend {

// Who a request's calls belong to.
struct CallScope {
  std::string key;         // the per_session key: the trajectory, or "PREFIX/N" for this request
  bool ephemeral = false;  // no trajectory named: the key is released when the request ends
  std::string tenant;
  const config::ApiKey* principal = nullptr;  // the API key the request came with, if any
  std::string traceparent;  // the caller's W3C trace context, validated; empty if none
  // The tool surface the calls name their tools by (X-Toolbridge-Surface or the body's
  // `surface`); null: the gateway's catalog.
  std::shared_ptr<const surfaces::View> surface;
  call::Call::Clock::time_point arrived{};  // on the gateway's clock
};

// The scope of the request in `ex` from its headers and the trajectory, tenant and surface its
// body named (empty if not): a refusal when they disagree, the trajectory belongs to another
// owner, the surface is unknown or not the API key's, or the gateway is stopping. `prefix` +
// `next_ephemeral` name a request without a trajectory.
BatchRefusal call_scope(transport::Exchange& ex, gateway::Gateway& gateway,
                        const std::string& body_trajectory, const std::string& body_tenant,
                        std::string_view prefix, std::uint64_t& next_ephemeral, CallScope& out,
                        const std::string& body_surface = {});

// The surface the request in `ex` names by X-Toolbridge-Surface and its body (`body_surface`,
// empty if none) into out.surface: a refusal when they disagree, the surface is unknown, or the
// request's API key is restricted to other surfaces. call_scope() includes it.
BatchRefusal surface_scope(transport::Exchange& ex, const gateway::Gateway& gateway,
                           const std::string& body_surface, CallScope& out);

// A tools/call of `tool` with `arguments` (a JSON object), numbered `index` in its request.
std::shared_ptr<call::Call> make_tool_call(std::size_t index, std::string_view tool,
                                           std::string_view arguments, const CallScope& scope,
                                           std::chrono::milliseconds timeout);

// Arguments known to be exactly one valid JSON object, no whitespace around it (a batch's, read
// and checked with its body): the call's members are known without scanning its params again.
struct CheckedArguments {
  std::string_view text;
};
std::shared_ptr<call::Call> make_tool_call(std::size_t index, std::string_view tool,
                                           CheckedArguments arguments, const CallScope& scope,
                                           std::chrono::milliseconds timeout);
// The same, made in `call` (a new Call): for a request that allocates its calls together.
void set_tool_call(call::Call& call, std::size_t index, std::string_view tool,
                   CheckedArguments arguments, const CallScope& scope,
                   std::chrono::milliseconds timeout);

// The calls of one request in flight: their results, and who waits for them. Shared by the
// handler, each call's completion and the peer-closed callback.
class CallRun : public std::enable_shared_from_this<CallRun> {
 public:
  CallRun(boost::asio::io_context& io, const gateway::Pipeline& pipeline, bool fail_fast,
          bool sequential, std::size_t max_result_bytes);

  std::vector<std::shared_ptr<call::Call>> calls;    // null for an entry that cannot run
  std::vector<std::optional<call::Result>> results;  // preset: an entry that cannot run
  std::vector<call::Call::Clock::time_point> done_at;

  // Runs every call in `calls`.
  void start();
  // Adds one more call (or, with `preset`, an entry that cannot run) and starts it at once
  // (concurrent runs only). Returns its index.
  std::size_t add(std::shared_ptr<call::Call> call, std::optional<call::Result> preset);
  // Returns once every call started so far has its result.
  boost::asio::awaitable<void> wait();
  bool done() const { return pending_ == 0; }
  // The client hung up: nothing more is owed to it, so its calls stop taking slots.
  void abandon(const std::string& reason);

  // Every result is kShed (the request as a whole gets 429).
  bool all_shed() const;
  // Call i's answer with its timing, measured from `arrived`.
  BatchEntry entry(std::size_t i, std::string tool, call::Call::Clock::time_point arrived);

  std::optional<std::size_t> stopped_by;  // the call whose failure stopped a fail_fast run
  // Called as each call gets its result (batch mode "tasks": the call's task ends then).
  std::function<void(std::size_t, const call::Result&)> on_result;

 private:
  // Answers call i without running it if it cannot run (preset), the client left or a fail_fast
  // run stopped; false if it is to run.
  bool finished_without_running(std::size_t i);
  void launch(std::size_t i);
  // Runs call i and, while the run is starting, the calls after it for as long as each is answered
  // without waiting (cache hits): a coroutine is started only for a call that waits.
  static boost::asio::awaitable<void> run_from(std::shared_ptr<CallRun> self, std::size_t i);
  void next();
  void finish(std::size_t i, call::Result result);
  std::string skipped_why() const;
  void cancel_all(const std::string& reason);

  boost::asio::io_context& io_;
  const gateway::Pipeline& pipeline_;
  const bool fail_fast_;
  const bool sequential_;
  base::Event done_;  // notified when the last call ends
  std::size_t pending_ = 0;
  std::size_t next_ = 0;
  std::size_t held_bytes_ = 0;  // of the results kept for the answer
  std::size_t max_result_bytes_ = 0;
  bool abandoned_ = false;
  bool starting_ = false;  // start() is launching the calls of a concurrent run
  // Calls answered while start() launched them, finished once it has launched every call (as
  // each call's own coroutine would have finished it).
  std::vector<std::pair<std::size_t, call::Result>> answered_;
};

}  // namespace toolbridge::frontend
