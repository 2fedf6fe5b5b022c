#pragma once
// Time as a seam, for reading and for waiting: every clock read and every timer in src/ goes
// through a Clock (tests/unit/base/clock_seam_test.cpp fails on one that does not), so unit tests
// drive time with a ManualClock, whose advance() fires the timers that are due, instead of
// sleeping. The real path costs what std::chrono and asio::steady_timer cost: now() is a branch,
// not a virtual call, and a Timer on the real clock is a steady_timer and a null pointer.
#include <boost/asio/associator.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

namespace toolbridge::base {

class ManualClock;

class Clock {
 public:
  using duration = std::chrono::steady_clock::duration;
  using time_point = std::chrono::steady_clock::time_point;
  using wall_time_point = std::chrono::system_clock::time_point;
  Clock(const Clock&) = delete;
  Clock& operator=(const Clock&) = delete;
  virtual ~Clock() = default;

  // Monotonic time, for durations, deadlines and expiry.
  time_point now() const { return manual_ ? manual_now_ : std::chrono::steady_clock::now(); }
  // Wall time, for what people and other programs read (logs, traces, ages since the epoch); on
  // a ManualClock, a fixed date plus the simulated time that has passed.
  wall_time_point wall_now() const;
  // The clock's wall time of one of its monotonic time points. The cast is for libc++, whose
  // system_clock counts microseconds (libstdc++'s counts nanoseconds, like steady_clock).
  wall_time_point wall_time(time_point t) const {
    return wall_now() + std::chrono::duration_cast<wall_time_point::duration>(t - now());
  }
  const ManualClock* manual() const { return manual_; }  // null on the real clock

 protected:
  Clock() = default;
  const ManualClock* manual_ = nullptr;
  time_point manual_now_{};
};

// The process's monotonic clock; one instance serves everyone.
class SteadyClock final : public Clock {
 public:
  SteadyClock() = default;
};
const Clock& steady_clock();

namespace detail {
struct ManualWaits;
// A wait on a ManualClock's timer: the timer is cancelled to complete it, and `fired` tells a
// wait that came due from one that was cancelled.
template <class Handler>
struct ManualWait {
  Handler handler;
  std::shared_ptr<bool> fired;
  void operator()(boost::system::error_code ec) {
    if (ec == boost::asio::error::operation_aborted && *fired) ec = {};
    std::move(handler)(ec);
  }
};
}  // namespace detail

// A one-shot timer on a Clock, with steady_timer's interface: co_await async_wait(token);
// expires_at/expires_after/cancel complete the waits in progress with operation_aborted. A timer
// that was never set never expires, so it also serves as a wake-up its owner cancels.
class Timer {
 public:
  using time_point = Clock::time_point;
  using duration = Clock::duration;
  static constexpr time_point never() { return time_point::max(); }

  template <class ExecutorOrContext>
  Timer(ExecutorOrContext&& ex, const Clock& clock, time_point expiry = never())
      : timer_(std::forward<ExecutorOrContext>(ex), clock.manual() ? never() : expiry) {
    if (clock.manual()) bind(*clock.manual(), expiry);
  }
  template <class ExecutorOrContext>
  Timer(ExecutorOrContext&& ex, const Clock& clock, duration after)
      : Timer(std::forward<ExecutorOrContext>(ex), clock, clock.now() + after) {}
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;
  ~Timer();

  auto get_executor() { return timer_.get_executor(); }
  time_point expiry() const;
  std::size_t expires_at(time_point t);
  std::size_t expires_after(duration d);
  std::size_t cancel();

  template <class Token>
  auto async_wait(Token&& token) {
    if (!manual_) return timer_.async_wait(std::forward<Token>(token));
    return boost::asio::async_initiate<Token, void(boost::system::error_code)>(
        [this](auto handler) { this->wait_manually(std::move(handler)); }, token);
  }

 private:
  friend class ManualClock;
  void bind(const ManualClock& clock, time_point expiry);
  std::shared_ptr<bool> start_manual_wait();  // registers a wait; true already if it is due
  void finish_start();                        // completes at once a wait that was due
  template <class Handler>
  void wait_manually(Handler handler) {
    auto fired = start_manual_wait();
    const bool due = *fired;
    timer_.async_wait(detail::ManualWait<Handler>{std::move(handler), std::move(fired)});
    if (due) finish_start();
  }

  boost::asio::steady_timer timer_;  // on a ManualClock: never expires, cancelled to complete
  std::unique_ptr<detail::ManualWaits> manual_;  // null on the real clock
};

// A clock that moves only when told (unit tests). Moving it forward fires, in expiry order, the
// timers on it that are then due: their waits complete when their io_context next runs.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(time_point start = time_point{} + std::chrono::hours(1));
  ~ManualClock() override;
  void advance(duration d) { set(now() + d); }
  void set(time_point t);
  std::size_t timers_waiting() const;  // timers with a wait in progress
  wall_time_point wall_at_start() const { return wall_start_; }

 private:
  friend class Timer;
  friend class Clock;
  time_point start_;
  wall_time_point wall_start_;
  mutable std::vector<detail::ManualWaits*> timers_;  // every timer made on this clock
};

namespace detail {
struct ManualWaits {
  const ManualClock* clock;
  Clock::time_point expiry;
  std::vector<std::shared_ptr<bool>> waits;  // one flag per wait in progress: set when it fires
  boost::asio::steady_timer* timer;
};
}  // namespace detail

}  // namespace toolbridge::base

// A manual wait completes on its handler's executor and honours its cancellation slot.
namespace boost::asio {
template <template <typename, typename> class Associator, typename Handler, typename Default>
struct associator<Associator, toolbridge::base::detail::ManualWait<Handler>, Default>
    : Associator<Handler, Default> {
  static typename Associator<Handler, Default>::type get(
      const toolbridge::base::detail::ManualWait<Handler>& h) noexcept {
    return Associator<Handler, Default>::get(h.handler);
  }
  static auto get(const toolbridge::base::detail::ManualWait<Handler>& h, const Default& c) noexcept
      -> decltype(Associator<Handler, Default>::get(h.handler, c)) {
    return Associator<Handler, Default>::get(h.handler, c);
  }
};
}  // namespace boost::asio
