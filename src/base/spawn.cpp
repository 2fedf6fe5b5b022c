#include "base/spawn.h"

#include <spdlog/spdlog.h>

#include <exception>

namespace toolbridge::base {

void LogFailure::report(std::exception_ptr e) const {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    spdlog::error("{} ended with an exception: {}", what_, ex.what());
  } catch (...) {
    spdlog::error("{} ended with an exception that is not a std::exception", what_);
  }
}

}  // namespace toolbridge::base
