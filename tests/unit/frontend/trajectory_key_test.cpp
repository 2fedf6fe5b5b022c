#include "frontend/trajectory_key.h"

#include <gtest/gtest.h>

namespace toolbridge::frontend {
namespace {

transport::Request request_with(std::string_view header_value) {
  transport::Request req;
  if (!header_value.empty()) req.set(kTrajectoryHeader, header_value);
  return req;
}

TEST(TrajectoryPath, SplitsNameAndEndpointAndDecodesTheName) {
  const auto plain = split_trajectory_path("/t/run-7:traj-3/mcp");
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->name, "run-7:traj-3");
  EXPECT_EQ(plain->endpoint, "mcp");
  const auto encoded = split_trajectory_path("/t/t%C3%A9%3A1/sse");
  ASSERT_TRUE(encoded);
  EXPECT_EQ(encoded->name, "t\xC3\xA9:1");
  EXPECT_EQ(encoded->endpoint, "sse");
}

TEST(TrajectoryPath, OtherShapesAreNotTrajectoryPaths) {
  EXPECT_FALSE(split_trajectory_path("/mcp"));
  EXPECT_FALSE(split_trajectory_path("/t/"));
  EXPECT_FALSE(split_trajectory_path("/t/name"));
  EXPECT_FALSE(split_trajectory_path("/t//mcp"));
}

TEST(TrajectoryPath, AnEncodedSlashStaysInTheNameAndIsRefusedByTheRule) {
  const auto split = split_trajectory_path("/t/a%2Fb/mcp");
  ASSERT_TRUE(split);
  EXPECT_EQ(split->name, "a/b");
  std::string error;
  EXPECT_EQ(named_trajectory(request_with(""), split->name, error), "");
  EXPECT_NE(error.find("character 2 ('/') is not allowed"), std::string::npos) << error;
}

TEST(NamedTrajectory, PathOrHeaderOrBothWhenTheyAgree) {
  std::string error;
  EXPECT_EQ(named_trajectory(request_with(""), "", error), "");
  EXPECT_EQ(named_trajectory(request_with(""), "traj-1", error), "traj-1");
  EXPECT_EQ(named_trajectory(request_with("traj-2"), "", error), "traj-2");
  EXPECT_EQ(named_trajectory(request_with("traj-3"), "traj-3", error), "traj-3");
  EXPECT_EQ(error, "");
}

TEST(NamedTrajectory, DifferentNamesInPathAndHeaderAreAnErrorNotAGuess) {
  std::string error;
  EXPECT_EQ(named_trajectory(request_with("b"), "a", error), "");
  EXPECT_NE(error.find("names trajectory 'a' but X-Toolbridge-Trajectory names 'b'"),
            std::string::npos)
      << error;
}

TEST(NamedTrajectory, NamesAreCheckedWithTheTrajectoryRule) {
  std::string error;
  EXPECT_EQ(named_trajectory(request_with("../etc"), "", error), "");
  EXPECT_TRUE(error.starts_with("X-Toolbridge-Trajectory: character 1 ('.') is not allowed first"))
      << error;
  error.clear();
  EXPECT_EQ(named_trajectory(request_with(""), std::string(300, 'x'), error), "");
  EXPECT_NE(error.find("URL path"), std::string::npos) << error;
  EXPECT_NE(error.find("longer than 256 characters"), std::string::npos) << error;
}

TEST(SessionMismatch, ASessionBelongsToOneTrajectory) {
  EXPECT_EQ(session_mismatch("", ""), "");
  EXPECT_EQ(session_mismatch("a", ""), "");  // requests need not repeat it
  EXPECT_EQ(session_mismatch("a", "a"), "");
  EXPECT_NE(session_mismatch("a", "b").find("opened for 'a'"), std::string::npos);
  EXPECT_NE(session_mismatch("", "b").find("opened without one"), std::string::npos);
}

}  // namespace
}  // namespace toolbridge::frontend
