#include "policy/deadline.h"

#include <fmt/format.h>


namespace toolbridge::policy {

boost::asio::awaitable<call::Result> DeadlineStage::handle(call::Call& call, call::Next next) {
  // Not a coroutine: an attempt within its deadline costs no frame of its own.
  if (clock_.now() >= call.deadline) {
    return call::ready(call::Result::failure(
        call::Fault::kTimeout,
        fmt::format("{} timed out after {:g} s before it could be sent", call.route.display_name,
                    static_cast<double>(call.timeout.count()) / 1000.0)));
  }
  return next(call);
}

}  // namespace toolbridge::policy
