#include "gateway/dispatch.h"

#include <fmt/format.h>

#include <boost/asio/async_result.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>
#include <optional>

#include "call/stoppable_wait.h"
#include "json/parse.h"
#include "upstream/upstream.h"

namespace toolbridge::gateway {

namespace asio = boost::asio;

namespace {

call::Fault fault_of(upstream::Failure f) {
  switch (f) {
    case upstream::Failure::kUnavailable:
      return call::Fault::kUnavailable;
    case upstream::Failure::kOverloaded:
      return call::Fault::kOverloaded;
    case upstream::Failure::kTimeout:
      return call::Fault::kTimeout;
    case upstream::Failure::kCrashed:
      return call::Fault::kCrashed;
    case upstream::Failure::kNotSent:
      return call::Fault::kNotSent;
  }
  return call::Fault::kCrashed;
}

// The awaiting coroutine's completion handler, type-erased (moving asio's own
// any_completion_handler recursed without end in Boost 1.81).
class Resume {
 public:
  virtual ~Resume() = default;
  virtual void operator()(call::Result r) = 0;
};
template <class Handler>
class ResumeWith final : public Resume {
 public:
  explicit ResumeWith(Handler h) : handler_(std::move(h)) {}
  void operator()(call::Result r) override { std::move(handler_)(std::move(r)); }

 private:
  Handler handler_;
};

// One send of a call to an instance: the instance's CallSink, turned into an awaitable Result.
class Attempt final : public upstream::CallSink,
                      public call::Abandonable,
                      public std::enable_shared_from_this<Attempt> {
 public:
  Attempt(asio::io_context& io, std::shared_ptr<call::Events> events,
          std::weak_ptr<upstream::Instance> instance, std::string id)
      : io_(io), events_(std::move(events)), instance_(std::move(instance)), id_(std::move(id)) {}
  ~Attempt() override {
    if (!resume_) return;
    // Dropped unanswered (an instance torn down with the call pending): the call still ends.
    asio::post(io_, [resume = std::move(resume_)]() {
      (*resume)(call::Result::failure(call::Fault::kCrashed,
                                      "the instance went away with the call pending"));
    });
  }

  void on_response(std::string message) override {
    complete(classify_response(std::move(message)));
  }
  void on_scanned_response(std::string message, const upstream::Scanned& scanned) override {
    complete(classify_response(std::move(message), scanned));
  }
  void on_failure(upstream::Failure failure, std::string_view, std::string detail) override {
    complete(call::Result::failure(fault_of(failure), std::move(detail)));
  }
  void on_notification(std::string message) override {
    if (events_) events_->on_notification(std::move(message));
  }
  void on_server_request(const std::string& method, std::string params, Reply reply) override {
    if (events_) return events_->on_server_request(method, std::move(params), std::move(reply));
    reply(true,
          R"({"code":-32603,"message":"the caller has no stream to receive server requests"})");
  }

  void complete(call::Result r) {
    if (result_) return;
    result_ = std::move(r);
    if (auto resume = std::move(resume_)) (*resume)(std::move(*result_));
  }
  bool done() const { return result_.has_value(); }
  void abandon(const std::string& reason) override {
    if (auto instance = instance_.lock()) instance->cancel(shared_from_this(), id_, reason);
    complete(call::Result::failure(call::Fault::kCancelled, reason));
  }
  call::Result take() { return std::move(*result_); }

  // Resumes the awaiting coroutine when complete() is called.
  auto wait() {
    return asio::async_initiate<const asio::use_awaitable_t<>, void(call::Result)>(
        [this](auto handler) {
          resume_ = std::make_unique<ResumeWith<decltype(handler)>>(std::move(handler));
        },
        asio::use_awaitable);
  }

 private:
  asio::io_context& io_;
  std::shared_ptr<call::Events> events_;
  std::weak_ptr<upstream::Instance> instance_;
  std::string id_;
  std::optional<call::Result> result_;
  std::unique_ptr<Resume> resume_;
};

}  // namespace

call::Result classify_response(std::string response) {
  const json::Envelope env = json::parse_envelope(response);
  return classify_response(std::move(response), {env.result, env.error, env.is_error});
}

call::Result classify_response(std::string response, const upstream::Scanned& scanned) {
  call::Result r;
  if (!scanned.error.empty()) {
    // The server's own error (the gateway's failures arrive typed, through on_failure): its
    // message says why.
    r.fault = call::Fault::kServerError;
    boost::system::error_code ec;
    const boost::json::value err = json::parse(scanned.error.in(response), ec);
    const auto* text = !ec && err.is_object() ? err.as_object().if_contains("message") : nullptr;
    if (text && text->is_string()) r.why = text->as_string();
  } else if (scanned.is_error) {
    r.fault = call::Fault::kToolError;
  }
  // Front ends and the recorder read the result where the scan found it (call::known_result).
  if (scanned.error.empty()) r.result_at = scanned.result;
  r.response = std::move(response);
  return r;
}

asio::awaitable<call::Result> DispatchStage::handle(call::Call& call, call::Next) {
  // Not a coroutine: a call that finds its instance at once costs only send()'s frame.
  upstream::Upstream::Pick picked = call.route.upstream->pick(call.trajectory);
  if (picked.instance) return send(call, std::move(picked.instance), false);
  return wait_and_send(call, std::move(picked.error), picked.wait);
}

asio::awaitable<call::Result> DispatchStage::wait_and_send(call::Call& call, std::string error,
                                                           bool wait) {
  if (!wait && call.attempts == 0)
    co_return call::Result::failure(call::Fault::kUnavailable, std::move(error));
  // An instance is starting for this call (the session's own, or a growing pool), or a retry
  // waits out a restart.
  upstream::Upstream& up = *call.route.upstream;
  const auto limit =
      std::min(call.deadline, clock_.now() + std::chrono::duration_cast<base::Clock::duration>(
                                                 up.config().checkout_timeout));
  upstream::Upstream::Pick picked;
  if (call.cancelled()) co_return call::Result::failure(call::Fault::kCancelled, "cancelled");
  const auto waiting = std::make_shared<call::StoppableWait>();
  call.set_in_flight(waiting);
  for (;;) {
    picked = co_await up.checkout(call.trajectory, limit, &waiting->stop);
    if (call.cancelled()) co_return call::Result::failure(call::Fault::kCancelled, "cancelled");
    if (picked.instance || call.attempts == 0 || clock_.now() >= limit || stopping_) break;
    // A retry while the server restarts: asked again when its instances change.
    co_await up.until_changed(limit, &waiting->stop);
  }
  if (!picked.instance)
    co_return call::Result::failure(call::Fault::kUnavailable, std::move(picked.error));
  if (clock_.now() >= call.deadline) {
    co_return call::Result::failure(
        call::Fault::kTimeout,
        fmt::format("{} timed out after {:g} s waiting for an instance to start",
                    call.route.display_name, static_cast<double>(call.timeout.count()) / 1000.0));
  }
  co_return co_await send(call, std::move(picked.instance), true);
}

asio::awaitable<call::Result> DispatchStage::send(call::Call& call,
                                                  std::shared_ptr<upstream::Instance> instance,
                                                  bool waited) {
  auto attempt = std::make_shared<Attempt>(io_, call.events, instance, call.id);
  // The first send gets the whole budget (its timeout message names it); a retry what is left.
  const auto left =
      call.sends == 0 && call.attempts == 0 && !waited
          ? call.timeout
          : std::chrono::duration_cast<std::chrono::milliseconds>(call.deadline - clock_.now());
  if (call.sends == 0) call.sent = clock_.now();
  call.instance_pid = instance->pid();
  call.instance = instance;
  ++call.sends;
  call.set_in_flight(attempt);
  instance->call(call.method, call.server_params(), call.id, call.progress_token, attempt,
                 std::max(left, std::chrono::milliseconds(1)), call.route.display_name);
  call::Result result;
  if (attempt->done()) {
    result = attempt->take();
  } else {
    // From here the instance owns the attempt: if it ever drops the call unanswered, the attempt
    // answers for it (see ~Attempt).
    Attempt* pending = attempt.get();
    attempt.reset();
    result = co_await pending->wait();
  }
  call.set_in_flight({});
  co_return result;
}

}  // namespace toolbridge::gateway
