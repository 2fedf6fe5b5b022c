#include <gtest/gtest.h>

#include <string>

#include "call/call.h"
#include "json/envelope.h"

namespace toolbridge::call {
namespace {

Call tool_call(std::string params) {
  Call call;
  call.method = "tools/call";
  call.params = std::move(params);
  call.members = *json::object_members(call.params);
  call.server_name = "sleep";
  return call;
}

TEST(ServerParams, ATaskParamGoesToTheServerOnlyWhenTheCallIsSentAsItsTask) {
  // A plain call (a stateless client's tolerated `task`, an older session's): the server must not
  // make a task nobody follows.
  Call plain = tool_call(R"({"name":"fixture__sleep","arguments":{"ms":1},"task":{"ttl":5}})");
  EXPECT_EQ(plain.server_params(), R"({"name":"sleep","arguments":{"ms":1}})");
  // Sent as the server's own task (docs/tasks.md).
  Call augmented = tool_call(R"({"name":"fixture__sleep","arguments":{"ms":1},"task":{"ttl":5}})");
  augmented.task_augmented = true;
  EXPECT_EQ(augmented.server_params(), R"({"name":"sleep","arguments":{"ms":1},"task":{"ttl":5}})");
  // Without `task`, the name is all that changes.
  Call other = tool_call(R"({"name":"fixture__sleep","arguments":{}})");
  EXPECT_EQ(other.server_params(), R"({"name":"sleep","arguments":{}})");
}

}  // namespace
}  // namespace toolbridge::call
