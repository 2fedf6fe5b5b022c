#pragma once
// A call's wait for an instance or for its server's start, registered as the call's attempt in
// flight so that a cancel ends the wait at once (the agent's request is released then, not when
// an instance frees up or checkout_timeout passes).
#include <string>

#include "call/call.h"
#include "upstream/upstream.h"

namespace toolbridge::call {

class StoppableWait final : public Abandonable {
 public:
  void abandon(const std::string&) override { stop.stop(); }
  upstream::WaitStop stop;
};

}  // namespace toolbridge::call
