// Session ids that name their gateway: the 404 for a session of another (gone) gateway says
// which one and what was lost; an id of this gateway, or without an owner, gets the usual one.
#include "frontend/client_identity.h"

#include <gtest/gtest.h>

#include "policy/trajectory_owner.h"

namespace toolbridge::frontend {
namespace {

TEST(UnknownSession, NamesTheGatewayThatHeldIt) {
  EXPECT_EQ(unknown_session_message("gw-a.0123abcd", "gw-b"),
            "Session not found: it belongs to gateway 'gw-a', which is gone (the load balancer "
            "sent this request to gateway 'gw-b'); its per_session instances and their state are "
            "lost. Initialize a new session");
  const std::string plain =
      "Session not found: it expired or was deleted; initialize a new session";
  EXPECT_EQ(unknown_session_message("gw-b.0123abcd", "gw-b"), plain);
  EXPECT_EQ(unknown_session_message("0123abcd", "gw-b"), plain);
  EXPECT_EQ(unknown_session_message("gw-a.0123abcd", ""), plain);
  EXPECT_EQ(unknown_session_message(".0123", "gw-b"), plain);
}

TEST(TrajectoryOwner, TheLostMessageNamesGatewayAndServer) {
  EXPECT_EQ(policy::TrajectoryOwnerStage::lost_message("rollout-7", "gw-a", "memory", "gw-c"),
            "trajectory 'rollout-7' was held by gateway 'gw-a', which is gone (the load balancer "
            "sent this call to gateway 'gw-c'): its per_session instance of server 'memory' and "
            "that instance's state are lost. The trajectory's next call starts a fresh instance "
            "on gateway 'gw-c'");
}

TEST(TrajectoryOwner, TheRestartMessageSaysThisGatewayRestarted) {
  EXPECT_EQ(policy::TrajectoryOwnerStage::restarted_message("rollout-7", "memory", "gw-c"),
            "trajectory 'rollout-7' was held by this gateway ('gw-c') before it restarted: its "
            "per_session instance of server 'memory' and that instance's state are lost. The "
            "trajectory's next call starts a fresh instance");
}

}  // namespace
}  // namespace toolbridge::frontend
