#pragma once
// GET /v1/trajectories/ID/model_calls: one trajectory's token records (src/llm/token_records.h)
// as JSON, or as MessagePack (the same map, logprobs as 32-bit floats) for size.
#include <string>
#include <string_view>

#include "llm/token_records.h"

namespace toolbridge::frontend {

// The answer's fields besides the records: when the records go and whether released.
struct TokenRecordsView {
  std::string_view trajectory;
  const llm::TokenRecords::Trajectory* records = nullptr;
  bool released = false;
  double expires_in_s = 0;
};

std::string token_records_json(const TokenRecordsView& v);
std::string token_records_msgpack(const TokenRecordsView& v);

}  // namespace toolbridge::frontend
