#pragma once
// POST /v1/batch: one request carries a turn's tool calls (tool, arguments, optional timeout)
// with its trajectory and tenant. The calls run through the same pipeline as MCP calls —
// concurrently, or one after another when `sequential` — and come back in order, each with its
// outcome and a timing split. One bad call is one error entry, never a failed batch; only what
// spoils the whole request (its encoding, its shape, its trajectory or tenant, its size) is a
// 4xx, and a batch whose every call was shed by admission control is a 429 with Retry-After.
// GET /v1/tools lists the catalog for clients that do not speak MCP.
#include <boost/asio/awaitable.hpp>
#include <boost/json/value.hpp>
#include <chrono>
#include <memory>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/gateway.h"
#include "tasks/store.h"
#include "transport/http_server.h"

namespace toolbridge::frontend {

class CallRun;
struct CallScope;

// A tool name longer than this is an error entry (no catalog holds one).
inline constexpr std::size_t kMaxBatchToolName = 512;

// One call as the request named it, or why that entry cannot run.
struct BatchCallSpec {
  std::string tool;
  std::string arguments = "{}";          // a JSON object, serialized
  std::chrono::milliseconds timeout{0};  // 0: the batch's timeout_ms, else the server's
  // `id`: the call's idempotency key (src/idempotency/): a retried batch in the same trajectory
  // gets this call's first result. Empty: none.
  std::string id;
  std::string error;                     // non-empty: answered as invalid_params, not run
};

struct BatchRequest {
  std::vector<BatchCallSpec> calls;
  std::string trajectory;  // from the body; empty if not named there
  std::string tenant;      // from the body; empty if not named there
  std::string surface;     // the tool surface its calls name tools by (body); empty: none
  bool fail_fast = false;  // mode "fail_fast": the first failure cancels the calls left
  bool tasks = false;      // mode "tasks": answered at once with a task per call (docs/tasks.md)
  bool sequential = false;
  std::chrono::milliseconds timeout{0};  // default per-call timeout_ms, 0: none
};

// Why the whole request cannot run, with the HTTP status to answer.
struct BatchRefusal {
  int status = 400;
  std::string code;  // short machine-readable kind: "invalid_request", "too_many_calls", ...
  std::string message;
  bool empty() const { return message.empty(); }
};

// Reads a decoded request body into `out`. Entries of `calls` that are malformed get their
// `error` set; the request's own faults (not an object, no calls, unknown keys, wrong types,
// too many calls) are returned.
// `max_calls`: gateway.batch_max_calls (more is a 413 naming the limit).
BatchRefusal read_batch_request(const boost::json::value& body, BatchRequest& out,
                                std::size_t max_calls);

// The same for a JSON body, read from its text without a DOM: each call's `arguments` are the
// body's own bytes. Only a request that is well-formed in every respect is read (true); for any
// other (malformed JSON, a refusal, an entry in error, a form it leaves alone such as escapes in
// a tool name) it returns false with `out` unspecified: decode_body + read_batch_request answer.
bool read_plain_batch_request(std::string_view body, BatchRequest& out, std::size_t max_calls);

class Batch {
 public:
  explicit Batch(gateway::Gateway& gateway);

  boost::asio::awaitable<void> post(transport::Exchange& ex);
  boost::asio::awaitable<void> tools(transport::Exchange& ex);
  // Where mode "tasks" keeps its tasks: the MCP front end's store, so tasks/get reaches them.
  void set_task_store(tasks::Store& store) { tasks_ = &store; }

 private:
  boost::asio::awaitable<void> refuse(transport::Exchange& ex, const BatchRefusal& refusal,
                                      const transport::Headers& headers);
  // Mode "tasks" (batch_tasks.cpp): a task per call, answered at once with their ids; the calls
  // run on without the request (the ephemeral trajectory is released when the last one ends).
  boost::asio::awaitable<void> start_tasks(transport::Exchange& ex, std::shared_ptr<CallRun> run,
                                           const BatchRequest& request, const CallScope& scope);

  gateway::Gateway& gateway_;
  std::uint64_t next_ephemeral_ = 0;  // batches without a trajectory get "batch/N"
  std::uint64_t* accepted_ = nullptr;
  std::uint64_t* refused_ = nullptr;
  std::uint64_t* shed_ = nullptr;
  tasks::Store* tasks_ = nullptr;
};

}  // namespace toolbridge::frontend
