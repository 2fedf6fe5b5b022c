#pragma once
// Single-flight: identical calls in flight at the same time share one upstream execution. The
// first call of a key leads (runs the rest of the chain); the others wait for its result, each
// bounded by its own deadline and cancellable on its own. A leader that was cancelled leaves its
// followers to run the call themselves: one caller hanging up never fails the others.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "base/clock.h"
#include "call/stage.h"

namespace toolbridge::cache {

class Coalescer {
 public:
  Coalescer(boost::asio::io_context& io, const base::Clock& clock) : io_(io), clock_(clock) {}

  // The shared execution of `key`, if one is in flight: waits for its result (nullopt: the
  // leader gave up — cancelled — and the caller should run the call itself; a kTimeout or
  // kCancelled Result: this caller's own deadline or cancel).
  struct Join {
    bool joined = false;
    std::optional<call::Result> result;
    double upstream_seconds = 0;  // what the shared execution took upstream
  };
  boost::asio::awaitable<Join> join(const std::string& key, call::Call& call);

  // Marks `key` in flight with the caller as its leader; finish() hands the result to the
  // followers. One Lead per key; destroying it unfinished releases the followers (nullopt).
  class Lead {
   public:
    Lead() = default;
    Lead(Lead&&) noexcept;
    Lead& operator=(Lead&&) noexcept;
    ~Lead();
    void finish(const call::Result& result, double upstream_seconds);
    explicit operator bool() const { return owner_ != nullptr; }

   private:
    friend class Coalescer;
    Coalescer* owner_ = nullptr;
    std::string key_;
  };
  Lead lead(const std::string& key);

  std::size_t in_flight() const { return flights_.size(); }
  // Followers waiting on `key` now (tests).
  std::size_t followers(const std::string& key) const;

 private:
  struct Flight;
  void complete(const std::string& key, const call::Result* result, double seconds);

  boost::asio::io_context& io_;
  const base::Clock& clock_;
  std::unordered_map<std::string, std::shared_ptr<Flight>> flights_;
};

}  // namespace toolbridge::cache
