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

// The surface named, or the failure's message in "error: ..." (so one EXPECT_EQ says both).
std::string named(const transport::Request& req, std::string_view from_path,
                  const surfaces::Registry& registry) {
  const base::Expected<std::string> n = named_surface(req, from_path, registry);
  return n ? *n : "error: " + n.error();
}

TEST(SurfaceKey, NamesAreCheckedAndPathAndHeaderMustAgree) {
  Fixture f;
  EXPECT_EQ(named(with_header(""), "", *f.registry), "");
  EXPECT_EQ(named(with_header("bench"), "", *f.registry), "bench");
  EXPECT_EQ(named(with_header("bench"), "bench", *f.registry), "bench");
  EXPECT_EQ(named(with_header("other"), "bench", *f.registry),
            "error: the URL path names surface 'bench' but X-Toolbridge-Surface names 'other'; "
            "name one surface");
  EXPECT_EQ(named(with_header("benc"), "", *f.registry),
            "error: X-Toolbridge-Surface: Unknown surface: 'benc'; did you mean 'bench'? "
            "Configured surfaces: bench, other");
  EXPECT_EQ(named(with_header("zzz"), "", *f.registry),
            "error: X-Toolbridge-Surface: Unknown surface: 'zzz'. Configured surfaces: bench, "
            "other");
  const std::string bad = named(with_header(""), "a/b", *f.registry);
  EXPECT_TRUE(bad.starts_with("error: ")) << bad;
  EXPECT_NE(bad.find("1-64 characters of [A-Za-z0-9_-]"), std::string::npos) << bad;
}

TEST(SurfaceKey, ASessionShowsOneSurfaceForLife) {
  EXPECT_TRUE(check_session_surface("bench", "").ok());
  EXPECT_TRUE(check_session_surface("bench", "bench").ok());
  EXPECT_FALSE(check_session_surface("bench", "other").ok());
  EXPECT_NE(check_session_surface("bench", "other").error().find("opened on 'bench'"),
            std::string::npos);
  EXPECT_NE(check_session_surface("", "bench").error().find("opened without one"),
            std::string::npos);
}

TEST(SurfaceKey, AKeyRestrictedToSurfacesReachesOnlyThem) {
  config::ApiKey open;
  open.name = "open";
  EXPECT_TRUE(check_key_surface(open, with_header(""), "/mcp").ok());
  config::ApiKey bench;
  bench.name = "bench";
  bench.surfaces = {"bench"};
  EXPECT_TRUE(check_key_surface(bench, with_header(""), "/s/bench/mcp").ok());
  EXPECT_TRUE(check_key_surface(bench, with_header(""), "/t/run/s/bench/mcp").ok());
  EXPECT_TRUE(check_key_surface(bench, with_header("bench"), "/mcp").ok());
  EXPECT_TRUE(check_key_surface(bench, with_header(""), "/v1/batch").ok());  // its body decides
  EXPECT_TRUE(check_key_surface(bench, with_header("bench"), "/v1/tools").ok());
  EXPECT_TRUE(check_key_surface(bench, with_header("bench"), "/sse").ok());
  for (const auto& [path, header] :
       std::vector<std::pair<const char*, const char*>>{{"/mcp", ""},
                                                        {"/s/other/mcp", ""},
                                                        {"/mcp", "other"},
                                                        {"/v1/tools", ""},
                                                        {"/sse", ""},
                                                        {"/v1/trajectories", "bench"},
                                                        {"/metrics", ""}}) {
    EXPECT_NE(check_key_surface(bench, with_header(header), path)
                  .error()
                  .find("API key 'bench' may only use the tool surfaces bench"),
              std::string::npos)
        << path << " " << header;
  }
  EXPECT_TRUE(check_key_surface(bench, std::string("bench")).ok());
  EXPECT_NE(check_key_surface(bench, std::string()).error().find("names no surface"),
            std::string::npos);
}

}  // namespace
}  // namespace toolbridge::frontend
