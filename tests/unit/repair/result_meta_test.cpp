#include "repair/result_meta.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace toolbridge::repair {
namespace {

namespace bj = boost::json;

const std::string kRepairs =
    repairs_json({{"tool_name", "", "serch", "s__search"}, {"type_coerced", "/n", "\"5\"", "5"}});

TEST(RepairResultMeta, RepairsJson) {
  EXPECT_EQ(bj::parse(kRepairs), bj::parse(R"([{"kind":"tool_name","from":"serch","to":"s__search"},
      {"kind":"type_coerced","path":"/n","from":"\"5\"","to":"5"}])"));
}

TEST(RepairResultMeta, AddedToAResultWithoutMeta) {
  const std::string out = with_repairs(
      R"({"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"ok"}]}})", kRepairs);
  const bj::value v = bj::parse(out);
  EXPECT_EQ(v.at("result").at("_meta").at("toolbridge/repairs"), bj::parse(kRepairs));
  EXPECT_EQ(v.at("result").at("content").at(0).at("text"), "ok");
  EXPECT_EQ(v.at("id"), 7);
}

TEST(RepairResultMeta, AddedBesideTheServersOwnMeta) {
  const std::string out = with_repairs(
      R"({"jsonrpc":"2.0","id":"a","result":{"_meta":{"x":1},"isError":false}})", kRepairs);
  const bj::value v = bj::parse(out);
  EXPECT_EQ(v.at("result").at("_meta").at("x"), 1);
  EXPECT_EQ(v.at("result").at("_meta").at("toolbridge/repairs"), bj::parse(kRepairs));
}

TEST(RepairResultMeta, ThePayloadBytesAreKeptAsTheyWere) {
  // Unusual spacing and escapes in the payload survive byte for byte.
  const std::string payload = R"({"content": [ {"type":"text", "text":"caf\u00e9  \"q\""} ]})";
  const std::string out =
      with_repairs(R"({"jsonrpc":"2.0","id":1,"result":)" + payload + "}", kRepairs);
  EXPECT_NE(out.find(R"([ {"type":"text", "text":"caf\u00e9  \"q\""} ])"), std::string::npos);
}

TEST(RepairResultMeta, ErrorsAndOddResultsAreLeftAlone) {
  const std::string error = R"({"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"x"}})";
  EXPECT_EQ(with_repairs(error, kRepairs), error);
  const std::string odd = R"({"jsonrpc":"2.0","id":1,"result":[1]})";
  EXPECT_EQ(with_repairs(odd, kRepairs), odd);
  EXPECT_EQ(with_repairs("not json", kRepairs), "not json");
}

}  // namespace
}  // namespace toolbridge::repair
