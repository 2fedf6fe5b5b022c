#pragma once
// What the retry stage keeps of a call it sent again (a slot, call/slots.h): for each retry,
// when the attempt before it failed and how, and the pause waited. Made only when a call is
// retried, so a call sent once holds nothing; the call's spans (gateway/call_spans.cpp) write
// one toolbridge.attempt span per attempt from it.
#include <boost/container/small_vector.hpp>
#include <chrono>

#include "call/call.h"

namespace toolbridge::policy {

struct RetryAttempts {
  struct Retry {
    call::Call::Clock::time_point failed_at{};     // the attempt before this retry ended
    call::Fault fault = call::Fault::kNone;        // how it ended
    std::chrono::milliseconds backoff{0};          // the pause chosen before this retry
    call::Call::Clock::time_point resumed_at{};    // the pause ended: this attempt begins
  };
  boost::container::small_vector<Retry, 2> retries;
};

}  // namespace toolbridge::policy
