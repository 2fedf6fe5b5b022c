#include "gateway/session.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>

namespace toolbridge::gateway {
namespace {

TEST(SessionTest, AnAgentThatNeverAnswersKeepsABoundedTableAndTheOldestRequestIsFailed) {
  boost::asio::io_context io;
  Session session(io, "s1", "127.0.0.1");
  std::vector<std::string> failures;
  std::vector<std::int64_t> ids;
  for (std::size_t i = 0; i < Session::kMaxOutbound + 2; ++i) {
    ids.push_back(session.register_outbound([&failures](bool is_error, std::string raw) {
      if (is_error) failures.push_back(std::move(raw));
    }));
  }
  ASSERT_EQ(failures.size(), 2u);
  EXPECT_NE(failures[0].find("did not answer"), std::string::npos) << failures[0];
  // The two oldest are gone; a late answer to them is not delivered twice.
  EXPECT_FALSE(session.answer_outbound(std::to_string(ids[0]), false, "{}"));
  EXPECT_TRUE(session.answer_outbound(std::to_string(ids.back()), false, "{}"));
  // Ids that are not ours (or would overflow) are refused, not parsed.
  EXPECT_FALSE(session.answer_outbound("99999999999999999999999", false, "{}"));
  EXPECT_FALSE(session.answer_outbound("-1", false, "{}"));
}

}  // namespace
}  // namespace toolbridge::gateway
