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
  const auto named = named_trajectory(request_with(""), split->name);
  EXPECT_FALSE(named);
  EXPECT_NE(named.error().find("character 2 ('/') is not allowed"), std::string::npos)
      << named.error();
}

// The trajectory named, or the failure's message in "error: ..." (so one EXPECT_EQ says both).
std::string named(const transport::Request& req, std::string_view from_path) {
  const base::Expected<std::string> n = named_trajectory(req, from_path);
  return n ? *n : "error: " + n.error();
}

TEST(NamedTrajectory, PathOrHeaderOrBothWhenTheyAgree) {
  EXPECT_EQ(named(request_with(""), ""), "");
  EXPECT_EQ(named(request_with(""), "traj-1"), "traj-1");
  EXPECT_EQ(named(request_with("traj-2"), ""), "traj-2");
  EXPECT_EQ(named(request_with("traj-3"), "traj-3"), "traj-3");
}

TEST(NamedTrajectory, DifferentNamesInPathAndHeaderAreAnErrorNotAGuess) {
  const std::string error = named(request_with("b"), "a");
  EXPECT_TRUE(error.starts_with("error: ")) << error;
  EXPECT_NE(error.find("names trajectory 'a' but X-Toolbridge-Trajectory names 'b'"),
            std::string::npos)
      << error;
}

TEST(NamedTrajectory, NamesAreCheckedWithTheTrajectoryRule) {
  std::string error = named(request_with("../etc"), "");
  EXPECT_TRUE(
      error.starts_with("error: X-Toolbridge-Trajectory: character 1 ('.') is not allowed first"))
      << error;
  error = named(request_with(""), std::string(300, 'x'));
  EXPECT_TRUE(error.starts_with("error: ")) << error;
  EXPECT_NE(error.find("URL path"), std::string::npos) << error;
  EXPECT_NE(error.find("longer than 256 characters"), std::string::npos) << error;
}

TEST(SessionTrajectory, ASessionBelongsToOneTrajectory) {
  EXPECT_TRUE(check_session_trajectory("", "").ok());
  EXPECT_TRUE(check_session_trajectory("a", "").ok());  // requests need not repeat it
  EXPECT_TRUE(check_session_trajectory("a", "a").ok());
  EXPECT_FALSE(check_session_trajectory("a", "b").ok());
  EXPECT_NE(check_session_trajectory("a", "b").error().find("opened for 'a'"), std::string::npos);
  EXPECT_NE(check_session_trajectory("", "b").error().find("opened without one"),
            std::string::npos);
}

}  // namespace
}  // namespace toolbridge::frontend
