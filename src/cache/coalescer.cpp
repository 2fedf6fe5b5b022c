#include "cache/coalescer.h"

#include <fmt/format.h>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <vector>

#include "call/shared_result.h"

namespace toolbridge::cache {

namespace asio = boost::asio;
using call::Call;
using call::Fault;
using call::Result;

struct Coalescer::Flight {
  bool done = false;
  std::optional<Result> result;  // unset when done: the leader gave up
  double upstream_seconds = 0;
  std::vector<std::weak_ptr<base::Timer>> waiting;
  std::size_t followers = 0;
};

Coalescer::Lead::Lead(Lead&& o) noexcept : owner_(o.owner_), key_(std::move(o.key_)) {
  o.owner_ = nullptr;
}

Coalescer::Lead& Coalescer::Lead::operator=(Lead&& o) noexcept {
  if (this != &o) {
    if (owner_) owner_->complete(key_, nullptr, 0);
    owner_ = o.owner_;
    key_ = std::move(o.key_);
    o.owner_ = nullptr;
  }
  return *this;
}

Coalescer::Lead::~Lead() {
  if (owner_) owner_->complete(key_, nullptr, 0);
}

void Coalescer::Lead::finish(const Result& result, double upstream_seconds) {
  if (!owner_) return;
  Coalescer* owner = owner_;
  owner_ = nullptr;
  // A cancelled leader's "result" is no answer for the others: they run the call themselves.
  owner->complete(key_, result.fault == Fault::kCancelled ? nullptr : &result, upstream_seconds);
}

Coalescer::Lead Coalescer::lead(const std::string& key) {
  Lead l;
  if (!flights_.emplace(key, std::make_shared<Flight>()).second) return l;
  l.owner_ = this;
  l.key_ = key;
  return l;
}

std::size_t Coalescer::followers(const std::string& key) const {
  auto it = flights_.find(key);
  return it == flights_.end() ? 0 : it->second->followers;
}

void Coalescer::complete(const std::string& key, const Result* result, double seconds) {
  auto it = flights_.find(key);
  if (it == flights_.end()) return;
  std::shared_ptr<Flight> flight = std::move(it->second);
  flights_.erase(it);
  flight->done = true;
  if (result) flight->result = *result;
  flight->upstream_seconds = seconds;
  for (auto& w : flight->waiting) {
    if (auto timer = w.lock()) timer->cancel();
  }
  flight->waiting.clear();
}

asio::awaitable<Coalescer::Join> Coalescer::join(const std::string& key, Call& call) {
  Join join;
  auto it = flights_.find(key);
  if (it == flights_.end()) co_return join;
  join.joined = true;
  std::shared_ptr<Flight> flight = it->second;
  auto timer = std::make_shared<base::Timer>(io_, clock_, call.deadline);
  auto wait = std::make_shared<call::TimerWait>(timer);
  call.set_in_flight(wait);
  flight->waiting.push_back(timer);
  ++flight->followers;
  boost::system::error_code ec;
  co_await timer->async_wait(asio::redirect_error(asio::use_awaitable, ec));
  --flight->followers;
  if (wait->abandoned) {
    join.result = Result::failure(Fault::kCancelled, wait->why);
  } else if (flight->done) {
    if (flight->result) {
      join.result = call::under_own_id(*flight->result, call);
      join.upstream_seconds = flight->upstream_seconds;
    }
  } else {
    join.result = Result::failure(
        Fault::kTimeout,
        fmt::format("{} timed out after {:g} s waiting for the identical call "
                    "already in flight",
                    call.route.display_name, static_cast<double>(call.timeout.count()) / 1000.0));
  }
  co_return join;
}

}  // namespace toolbridge::cache
