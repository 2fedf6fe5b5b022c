// The keys for running beyond one machine: `auth` (tokens kept only as SHA-256), `tls`,
// `allow_unauthenticated` and `gateway_id`, with their errors.
#include <gtest/gtest.h>
#include <openssl/sha.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "config/config.h"
#include "load_error.h"

namespace toolbridge::config {
namespace {

std::array<unsigned char, 32> sha(const std::string& s) {
  std::array<unsigned char, 32> out{};
  SHA256(reinterpret_cast<const unsigned char*>(s.data()), s.size(), out.data());
  return out;
}

TEST(ConfigDeploy, OffByDefault) {
  const Config c = load_text("servers: {}\n", "cfg.yaml", false);
  EXPECT_TRUE(c.gateway.auth.keys.empty());
  EXPECT_FALSE(c.gateway.allow_unauthenticated);
  EXPECT_TRUE(c.gateway.tls.cert_file.empty());
  EXPECT_TRUE(c.gateway.gateway_id.empty());
}

TEST(ConfigDeploy, KeysAreKeptHashedWithTheirTenantAndAllowlist) {
  const std::string hex(64, 'a');
  const Config c = load_text(
      "gateway:\n"
      "  auth:\n"
      "    keys:\n"
      "      - {name: ci, token: 0123456789abcdef-ci, tenant: team-a, allow: [fixture, x__y]}\n"
      "      - {token_sha256: " +
          hex + ", tenant: team-b}\n",
      "cfg.yaml", false);
  ASSERT_EQ(c.gateway.auth.keys.size(), 2u);
  const ApiKey& a = c.gateway.auth.keys[0];
  EXPECT_EQ(a.name, "ci");
  EXPECT_EQ(a.sha256, sha("0123456789abcdef-ci"));
  EXPECT_EQ(a.tenant, "team-a");
  EXPECT_EQ(a.allow, (std::vector<std::string>{"fixture", "x__y"}));
  const ApiKey& b = c.gateway.auth.keys[1];
  EXPECT_EQ(b.name, "key 1");
  EXPECT_EQ(b.sha256[0], 0xaa);
  EXPECT_TRUE(b.allow.empty());
}

TEST(ConfigDeploy, ATokenComesFromTheEnvironmentOrAFile) {
  ::setenv("TB_TEST_TOKEN", "from-the-environment-1234", 1);
  char path[] = "/tmp/tb-token-XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::close(fd);
  std::ofstream(path) << "token-from-a-file-5678\n";
  const Config c = load_text(std::string("gateway:\n  auth:\n    keys:\n") +
                                 "      - {token: '${env:TB_TEST_TOKEN}', tenant: a}\n" +
                                 "      - {token_file: " + path + ", tenant: b}\n",
                             "cfg.yaml", false);
  std::remove(path);
  EXPECT_EQ(c.gateway.auth.keys[0].sha256, sha("from-the-environment-1234"));
  EXPECT_EQ(c.gateway.auth.keys[1].sha256, sha("token-from-a-file-5678"));  // newline dropped
}

TEST(ConfigDeploy, BadKeysAreRefusedWithTheKeyPath) {
  EXPECT_EQ(yaml_error("gateway: {auth: {keys: [{token: short, tenant: a}]}}\n"),
            "cfg.yaml:1:33: gateway.auth.keys[0].token: a token needs at least 16 characters "
            "(e.g. `openssl rand -hex 32`)");
  EXPECT_EQ(yaml_error("gateway: {auth: {keys: [{token: 0123456789abcdef}]}}\n"),
            "cfg.yaml:1:25: gateway.auth.keys[0]: needs `tenant`: the run its calls belong to");
  EXPECT_EQ(yaml_error("gateway: {auth: {keys: [{tenant: a}]}}\n"),
            "cfg.yaml:1:25: gateway.auth.keys[0]: needs exactly one of `token`, `token_sha256`, "
            "`token_file`");
  EXPECT_EQ(yaml_error("gateway: {auth: {keys: [{token_sha256: abc, tenant: a}]}}\n"),
            "cfg.yaml:1:40: gateway.auth.keys[0].token_sha256: expected the SHA-256 of the token "
            "as 64 hex digits");
  EXPECT_EQ(yaml_error("gateway: {auth: {keys: [{token: 0123456789abcdef, tenant: 'a b'}]}}\n"),
            "cfg.yaml:1:59: gateway.auth.keys[0].tenant: a tenant name is 1-128 characters of "
            "[A-Za-z0-9._:-]");
  EXPECT_EQ(yaml_error("gateway: {auth: {keys: [{token: 0123456789abcdef, tenant: a, "
                       "name: one}, {token: 0123456789abcdef, tenant: b}]}}\n"),
            "cfg.yaml:1:74: gateway.auth.keys[1]: the same token as 'one'");
  EXPECT_EQ(yaml_error("gateway: {auth: {}}\n"),
            "cfg.yaml:1:17: gateway.auth: needs `keys`: at least one API key");
}

TEST(ConfigDeploy, TlsNeedsReadableFilesAndGatewayIdAName) {
  EXPECT_EQ(yaml_error("gateway: {tls: {cert: /nonexistent/c.pem, key: /nonexistent/k.pem}}\n"),
            "cfg.yaml:1:23: gateway.tls.cert: cannot read '/nonexistent/c.pem'");
  EXPECT_EQ(yaml_error("gateway: {tls: {}}\n"),
            "cfg.yaml:1:16: gateway.tls: needs both `cert` and `key` (PEM files)");
  EXPECT_EQ(load_text("gateway: {gateway_id: gw-1, allow_unauthenticated: true}\n", "c.yaml", false)
                .gateway.gateway_id,
            "gw-1");
  EXPECT_EQ(yaml_error("gateway: {gateway_id: 'a.b'}\n"),
            "cfg.yaml:1:23: gateway.gateway_id: a gateway id is 1-32 characters of [A-Za-z0-9_-], "
            "got 'a.b'");
}

}  // namespace
}  // namespace toolbridge::config
