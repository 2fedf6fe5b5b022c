// A surface named by the path (/s/NAME/mcp, /t/TRAJECTORY/s/NAME/mcp) or X-Toolbridge-Surface:
// the shapes accepted, the names checked, a path and a header that disagree, a session's surface
// for life, and API keys restricted to surfaces.
#include "frontend/surface_key.h"

#include <gtest/gtest.h>

namespace toolbridge::frontend {
namespace {

struct Fixture {
  std::shared_ptr<config::Surfaces> config = std::make_shared<config::Surfaces>();
  catalog::Catalog catalog;
  std::unique_ptr<surfaces::Registry> registry;
  Fixture() {
    config->list.push_back(config::Surface{"bench", {}, {}, {{"x", {}}}});
    config->list.push_back(config::Surface{"other", {}, {}, {{"y", {}}}});
    registry = std::make_unique<surfaces::Registry>(config, catalog);
  }
};

transport::Request with_header(std::string_view value) {
  transport::Request req;
  if (!value.empty()) req.set(kSurfaceHeader, value);
  return req;
}

TEST(SurfacePath, SplitsThePlainAndTheTrajectoryForms) {
  const auto plain = split_surface_path("/s/bench/mcp");
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->trajectory, "");
  EXPECT_EQ(plain->surface, "bench");
  EXPECT_EQ(plain->endpoint, "mcp");
  const auto composed = split_surface_path("/t/run%3A7/s/b%2Dx/mcp");
  ASSERT_TRUE(composed);
  EXPECT_EQ(composed->trajectory, "run:7");
  EXPECT_EQ(composed->surface, "b-x");
  EXPECT_EQ(composed->endpoint, "mcp");
  for (const char* other : {"/mcp", "/s/", "/s/bench", "/s//mcp", "/s/bench/mcp/x", "/t/run/mcp",
                            "/t/run/s/bench", "/t//s/bench/mcp"}) {
    EXPECT_FALSE(split_surface_path(other)) << other;
  }
}

TEST(SurfaceKey, NamesAreCheckedAndPathAndHeaderMustAgree) {
  Fixture f;
  std::string error;
  EXPECT_EQ(named_surface(with_header(""), "", *f.registry, error), "");
  EXPECT_EQ(error, "");
  EXPECT_EQ(named_surface(with_header("bench"), "", *f.registry, error), "bench");
  EXPECT_EQ(named_surface(with_header("bench"), "bench", *f.registry, error), "bench");
  EXPECT_EQ(error, "");
  EXPECT_EQ(named_surface(with_header("other"), "bench", *f.registry, error), "");
  EXPECT_NE(error.find("the URL path names surface 'bench' but X-Toolbridge-Surface names 'other'"),
            std::string::npos)
      << error;
  error.clear();
  named_surface(with_header("benc"), "", *f.registry, error);
  EXPECT_EQ(error,
            "X-Toolbridge-Surface: Unknown surface: 'benc'; did you mean 'bench'? Configured "
            "surfaces: bench, other");
  error.clear();
  named_surface(with_header("zzz"), "", *f.registry, error);
  EXPECT_EQ(error,
            "X-Toolbridge-Surface: Unknown surface: 'zzz'. Configured surfaces: bench, other");
  error.clear();
  named_surface(with_header(""), "a/b", *f.registry, error);
  EXPECT_NE(error.find("1-64 characters of [A-Za-z0-9_-]"), std::string::npos) << error;
}

TEST(SurfaceKey, ASessionShowsOneSurfaceForLife) {
  EXPECT_EQ(surface_mismatch("bench", ""), "");
  EXPECT_EQ(surface_mismatch("bench", "bench"), "");
  EXPECT_NE(surface_mismatch("bench", "other").find("opened on 'bench'"), std::string::npos);
  EXPECT_NE(surface_mismatch("", "bench").find("opened without one"), std::string::npos);
}

TEST(SurfaceKey, AKeyRestrictedToSurfacesReachesOnlyThem) {
  config::ApiKey open;
  open.name = "open";
  EXPECT_EQ(key_surface_refusal(open, with_header(""), "/mcp"), "");
  config::ApiKey bench;
  bench.name = "bench";
  bench.surfaces = {"bench"};
  EXPECT_EQ(key_surface_refusal(bench, with_header(""), "/s/bench/mcp"), "");
  EXPECT_EQ(key_surface_refusal(bench, with_header(""), "/t/run/s/bench/mcp"), "");
  EXPECT_EQ(key_surface_refusal(bench, with_header("bench"), "/mcp"), "");
  EXPECT_EQ(key_surface_refusal(bench, with_header(""), "/v1/batch"), "");  // its body decides
  EXPECT_EQ(key_surface_refusal(bench, with_header("bench"), "/v1/tools"), "");
  EXPECT_EQ(key_surface_refusal(bench, with_header("bench"), "/sse"), "");
  for (const auto& [path, header] :
       std::vector<std::pair<const char*, const char*>>{{"/mcp", ""},
                                                        {"/s/other/mcp", ""},
                                                        {"/mcp", "other"},
                                                        {"/v1/tools", ""},
                                                        {"/sse", ""},
                                                        {"/v1/trajectories", "bench"},
                                                        {"/metrics", ""}}) {
    EXPECT_NE(key_surface_refusal(bench, with_header(header), path)
                  .find("API key 'bench' may only use the tool surfaces bench"),
              std::string::npos)
        << path << " " << header;
  }
  EXPECT_EQ(key_surface_refusal(bench, std::string("bench")), "");
  EXPECT_NE(key_surface_refusal(bench, std::string()).find("names no surface"), std::string::npos);
}

}  // namespace
}  // namespace toolbridge::frontend
