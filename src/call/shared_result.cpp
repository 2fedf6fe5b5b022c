#include "call/shared_result.h"

#include "json/envelope.h"

namespace toolbridge::call {

Result under_own_id(const Result& shared, const Call& call) {
  Result r = shared;
  if (!r.response.empty()) {
    const json::Envelope env = json::parse_envelope(r.response);
    if (!env.id.empty()) r.response = json::with_id(r.response, env.id, call.id);
  }
  return r;
}

}  // namespace toolbridge::call
