#pragma once
// The completion token of a coroutine started on its own (asio::co_spawn) whose caller does not
// wait for it: what the coroutine threw is logged, naming the coroutine, instead of dropped as
// asio::detached drops it. A coroutine that ends normally logs nothing.
//
//   asio::co_spawn(io, read_loop(), base::log_failure("stdio read loop"));
#include <exception>

namespace toolbridge::base {

class LogFailure {
 public:
  explicit constexpr LogFailure(const char* what) : what_(what) {}
  // co_spawn completes with (exception_ptr) or (exception_ptr, T) for an awaitable<T>.
  template <class... Value>
  void operator()(std::exception_ptr e, Value&&...) const {
    if (e) report(e);
  }

 private:
  void report(std::exception_ptr e) const;
  const char* what_;  // a string literal, so it lives as long as the coroutine
};

// `what` names the coroutine in the log line ("stdio read loop").
constexpr LogFailure log_failure(const char* what) { return LogFailure(what); }

}  // namespace toolbridge::base
