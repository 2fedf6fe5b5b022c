#pragma once
// A key of params._meta that a stage reads from its caller ("toolbridge/cache",
// "toolbridge/repair", ...). The stage declares it next to its own code; the front end finds it
// in the pipeline's list (gateway::Pipeline::meta_keys), reads it into the call and takes it out
// of what the server is sent.
#include <boost/json/value.hpp>
#include <string>
#include <string_view>

#include "base/expected.h"
#include "call/call.h"

namespace toolbridge::call {

struct MetaKey {
  std::string_view name;
  // Takes the value into the call (its stage's slot), or says why it is malformed (the caller
  // gets -32602 with it).
  base::Status (*read)(Call& call, const boost::json::value& value);
};

}  // namespace toolbridge::call
