#pragma once
// What server_tasks.cpp and server_tasks_polled.cpp share of a server's own task (docs/tasks.md,
// "A server's own tasks"): the store's Run that drives it, a request asked of its instance, and
// the bounds. Not for other files: ServerTasks (server_tasks.h) is the interface.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "base/clock.h"
#include "base/event.h"
#include "gateway/gateway.h"
#include "gateway/input_required.h"
#include "json/envelope.h"
#include "tasks/store.h"
#include "upstream/instance.h"

namespace toolbridge::frontend::server_task {

// A server's task id this long or longer is refused: the gateway keeps and sends it.
inline constexpr std::size_t kMaxUpstreamTaskId = 256;

// A 2026-07-28 server's task is followed by polling its tasks/get (the protocol's own way: the
// revision has no tasks/result to hold): at the server's pollIntervalMs, kept within these
// bounds (500 ms when it names none), until the task ends in the store (its TTL at the latest).
inline constexpr std::chrono::milliseconds kMinPoll{100};
inline constexpr std::chrono::milliseconds kMaxPoll{5'000};
inline constexpr std::chrono::milliseconds kDefaultPoll{500};
// ...and given up (the task failed) after this many unusable answers in a row.
inline constexpr int kMaxPollFailures = 3;
// A 2026-07-28 server's task asks at most this many requests in all (inputRequests keys, each
// at most kMaxInputKey bytes); past it the task fails.
inline constexpr std::size_t kMaxInputRequests = 64;
inline constexpr std::size_t kMaxInputKey = 256;

// The answer to a request nobody waits for (tasks/cancel sent on a cancel).
class Ignore final : public upstream::CallSink {
 public:
  void on_response(std::string) override {}
  void on_failure(upstream::Failure, std::string_view, std::string) override {}
  void on_notification(std::string) override {}
  void on_server_request(const std::string&, std::string, Reply reply) override {
    reply(true, R"({"code":-32601,"message":"not expected here"})");
  }
};

// A server's own task, as the store drives it.
class UpstreamRun final : public tasks::Run {
 public:
  std::weak_ptr<upstream::Instance> instance;
  std::string upstream_id;               // the server's task id
  std::string display;                   // "server__tool", for messages
  std::chrono::milliseconds timeout{0};  // for tasks/get and tasks/cancel asked of the server
  bool cancel_supported = false;         // the server declares tasks.cancel
  bool told = false;                     // tasks/cancel has been sent already
  // A 2026-07-28 server's task: followed by polling tasks/get at this interval (no follower).
  bool polled = false;
  std::chrono::milliseconds poll{0};
  std::set<std::string, std::less<>> asked;  // its inputRequests keys passed to the client
  int unanswered = 0;                        // of those, a session's not answered yet
  std::shared_ptr<upstream::CallSink> follower;
  // A stateless client's task: the server's requests wait here for tasks/update.
  std::shared_ptr<gateway::Conversation> asks;
  std::function<void()> ended;  // ServerTasks::keep_busy

  UpstreamRun() = default;
  UpstreamRun(const UpstreamRun&) = delete;
  UpstreamRun& operator=(const UpstreamRun&) = delete;
  ~UpstreamRun() override {
    if (ended) ended();
  }

  // The store cancelled the task (tasks/cancel, its TTL, the gateway stopping): the server is
  // told, and the follower stops waiting.
  void cancel(const std::string& why) override {
    if (asks) asks->refuse_all(why);
    auto inst = instance.lock();
    if (!inst) return;
    if (cancel_supported && !std::exchange(told, true)) {
      inst->call("tasks/cancel", R"({"taskId":)" + json::quote(upstream_id) + "}", "0", {},
                 std::make_shared<Ignore>(), timeout, display);
    }
    if (follower) inst->cancel(follower, "0", why);
  }
  // tasks/update of a stateless client (sessions answer requests as JSON-RPC responses).
  std::string provide(const boost::json::object& responses) override {
    if (!asks) return {};
    asks->provide(responses);
    return asks->has_asks() ? asks->pending_requests() : std::string();
  }
};

inline UpstreamRun* upstream_run(const tasks::Task& t) {
  return t.run ? dynamic_cast<UpstreamRun*>(t.run.get()) : nullptr;
}

// One request to an instance, awaited: its whole JSON-RPC response, or empty with `failure` set.
class Ask final : public upstream::CallSink {
 public:
  explicit Ask(const base::Clock& clock) : answered(clock) {}
  void on_response(std::string message) override {
    response = std::move(message);
    done = true;
    answered.notify_all();
  }
  void on_failure(upstream::Failure, std::string_view, std::string detail) override {
    failure = std::move(detail);
    done = true;
    answered.notify_all();
  }
  void on_notification(std::string) override {}
  void on_server_request(const std::string&, std::string, Reply reply) override {
    reply(true, R"({"code":-32601,"message":"not expected here"})");
  }
  base::Event answered;
  bool done = false;
  std::string response;
  std::string failure;
};

// `method` ({taskId: the server's id}) asked of the instance that holds `run`'s task; nullptr
// when the instance is gone.
boost::asio::awaitable<std::shared_ptr<Ask>> ask(gateway::Gateway& gateway, const UpstreamRun& run,
                                                 std::string method);
// The result object of a JSON-RPC response, or null.
boost::json::value result_of(const std::string& response);
// A JSON-RPC error object (-32603) with `message`.
std::string gateway_error(std::string_view message);

}  // namespace toolbridge::frontend::server_task
