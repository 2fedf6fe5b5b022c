#pragma once
// A configured server and its supervision: start (bounded, concurrent with the others), restart
// after a crash (single-flight, exponential backoff with jitter), and the instance calls go to.
// Sharing policy today is `shared`: one instance, requests multiplexed by id.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <deque>
#include <memory>
#include <string>

#include "config/config.h"
#include "telemetry/metrics.h"
#include "upstream/instance.h"

namespace toolbridge::upstream {

// Caps how many servers initialise at once (start-up storms hurt every server on a 2-core box).
class StartGate {
 public:
  StartGate(boost::asio::io_context& io, std::size_t limit) : io_(io), free_(limit ? limit : 1) {}
  boost::asio::awaitable<void> acquire();
  void release();

 private:
  boost::asio::io_context& io_;
  std::size_t free_;
  std::deque<std::shared_ptr<boost::asio::steady_timer>> waiters_;
};

class Upstream : public std::enable_shared_from_this<Upstream> {
 public:
  enum class State { kStarting, kReady, kBackoff, kDisabled, kStopped };

  Upstream(boost::asio::io_context& io, config::Server server, StartGate& gate,
           telemetry::Metrics& metrics);

  // Starts the first instance; on failure keeps retrying in the background. Returns once the
  // first attempt has finished, either way.
  boost::asio::awaitable<void> start();
  boost::asio::awaitable<void> stop();

  // The instance to send calls to, or null when none is ready.
  std::shared_ptr<Instance> instance() const;

  const config::Server& config() const { return server_; }
  const std::string& name() const { return server_.name; }
  State state() const { return state_; }
  const std::string& last_error() const { return last_error_; }
  std::uint64_t restarts() const { return restarts_; }
  // Seconds until the next start attempt while in backoff.
  double retry_in_seconds() const;
  std::string describe_unavailable() const;

  // Circuit breaker over call outcomes: empty to admit a call, else why it is refused. While
  // open, calls fail fast; after breaker_cooldown one probe call is admitted (half-open) and its
  // outcome closes or reopens the breaker.
  std::string breaker_admit();
  // `fault`: the call timed out. `why` is kept for the refusal message.
  void breaker_record(bool fault, std::string_view why);
  std::string_view breaker_state() const;

  // Called after the catalog of the ready instance changed (a restart or list_changed).
  std::function<void()> on_catalog_changed;

 private:
  boost::asio::awaitable<bool> attempt();
  void schedule_restart();
  std::chrono::milliseconds backoff_delay();

  boost::asio::io_context& io_;
  config::Server server_;
  StartGate& gate_;
  telemetry::Metrics& metrics_;
  State state_ = State::kStarting;
  std::shared_ptr<Instance> instance_;
  std::string last_error_;
  std::uint64_t restarts_ = 0;
  std::uint64_t instances_started_ = 0;
  int consecutive_failures_ = 0;
  bool restart_scheduled_ = false;
  Instance::Clock::time_point ready_since_{};
  Instance::Clock::time_point retry_at_{};
  boost::asio::steady_timer retry_timer_;
  enum class Breaker { kClosed, kOpen, kHalfOpen };
  Breaker breaker_ = Breaker::kClosed;
  std::size_t consecutive_faults_ = 0;
  bool probe_in_flight_ = false;
  Instance::Clock::time_point probe_started_{};
  Instance::Clock::time_point open_until_{};
  std::chrono::milliseconds cooldown_{0};
  std::string last_fault_;
};

std::string_view to_string(Upstream::State s);

}  // namespace toolbridge::upstream
