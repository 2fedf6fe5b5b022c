#include "config/config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "config/duration.h"

namespace toolbridge::config {
namespace {

using std::chrono::milliseconds;

Config yaml(const std::string& text) {
  return load_text(text, "cfg.yaml", false);
}
Config json(const std::string& text) {
  return load_text(text, "cfg.json", true);
}

// The message load_text throws, or a marker that makes the comparison fail readably.
std::string error_of(const std::string& text, bool is_json) {
  try {
    load_text(text, is_json ? "cfg.json" : "cfg.yaml", is_json);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "<no error>";
}
std::string yaml_error(const std::string& text) {
  return error_of(text, false);
}
std::string json_error(const std::string& text) {
  return error_of(text, true);
}

// A file in the test's temporary directory, removed at the end of the test.
class TempFile {
 public:
  TempFile(const std::string& name, const std::string& contents)
      : path_(::testing::TempDir() + std::to_string(::getpid()) + "_" + name) {
    std::ofstream(path_) << contents;
  }
  ~TempFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// ---------------------------------------------------------------------------------------------
// Good files

TEST(Config, YamlWithEveryKey) {
  const Config c = yaml(R"(
gateway:
  listen: 0.0.0.0:9000
  allowed_origins: [http://localhost:3000, https://app.example.com]
  max_body_bytes: 8MiB
  max_sessions: 50
  session_idle_ttl: 10m
  session_reclaim_after: 90s
  call_log_max_bytes: 16MiB
  max_unread_bytes: 512MiB
  max_unread_bytes_per_client: 32MiB
  start_concurrency: 2
  tool_naming: unprefixed_when_unique
  separator: "--"
  log_level: debug
servers:
  fixture:
    command: /usr/bin/fixture
    args: [--mode, echo, 8080]
    env: {TOKEN: abc, PORT: 8080}
    inherit_env: [HOME, PATH]
    cwd: /tmp
    enabled: false
    startup_timeout: 5s
    call_timeout: 1.5m
    restart_backoff: {initial: 250ms, max: 1m}
    stop_grace: 0
    max_line_bytes: 1MiB
    max_in_flight: 8
  second_one:
    command: npx
)");
  EXPECT_EQ(c.source, "cfg.yaml");
  EXPECT_EQ(c.gateway.host, "0.0.0.0");
  EXPECT_EQ(c.gateway.port, 9000);
  EXPECT_EQ(c.gateway.allowed_origins,
            (std::vector<std::string>{"http://localhost:3000", "https://app.example.com"}));
  EXPECT_EQ(c.gateway.max_body_bytes, 8u << 20);
  EXPECT_EQ(c.gateway.max_sessions, 50u);
  EXPECT_EQ(c.gateway.session_idle_ttl, milliseconds(600'000));
  EXPECT_EQ(c.gateway.session_reclaim_after, milliseconds(90'000));
  EXPECT_EQ(c.gateway.call_log_max_bytes, 16u << 20);
  EXPECT_EQ(c.gateway.max_unread_bytes, 512u << 20);
  EXPECT_EQ(c.gateway.max_unread_bytes_per_client, 32u << 20);
  EXPECT_EQ(c.gateway.start_concurrency, 2u);
  EXPECT_EQ(c.gateway.tool_naming, ToolNaming::kUnprefixedWhenUnique);
  EXPECT_EQ(c.gateway.separator, "--");
  EXPECT_EQ(c.gateway.log_level, "debug");

  ASSERT_EQ(c.servers.size(), 2u);
  const Server& s = c.servers[0];
  EXPECT_EQ(s.name, "fixture");
  EXPECT_EQ(s.command, "/usr/bin/fixture");
  EXPECT_EQ(s.args, (std::vector<std::string>{"--mode", "echo", "8080"}));
  EXPECT_EQ(s.env, (std::map<std::string, std::string>{{"PORT", "8080"}, {"TOKEN", "abc"}}));
  EXPECT_EQ(s.inherit_env, (std::vector<std::string>{"HOME", "PATH"}));
  EXPECT_EQ(s.cwd, "/tmp");
  EXPECT_FALSE(s.enabled);
  EXPECT_EQ(s.startup_timeout, milliseconds(5'000));
  EXPECT_EQ(s.call_timeout, milliseconds(90'000));
  EXPECT_EQ(s.restart_backoff_initial, milliseconds(250));
  EXPECT_EQ(s.restart_backoff_max, milliseconds(60'000));
  EXPECT_EQ(s.stop_grace, milliseconds(0));
  EXPECT_EQ(s.max_line_bytes, 1u << 20);
  EXPECT_EQ(s.max_in_flight, 8u);
  EXPECT_EQ(c.servers[1].name, "second_one");  // file order is kept
  EXPECT_TRUE(c.servers[1].enabled);
}

TEST(Config, DefaultsWhenKeysAreAbsent) {
  const Server server_defaults;
  const Gateway gateway_defaults;
  for (const Config& c : {yaml("servers:\n  a:\n    command: x\n"),
                          json(R"({"mcpServers": {"a": {"command": "x"}}})")}) {
    EXPECT_EQ(c.gateway.host, "127.0.0.1");
    EXPECT_EQ(c.gateway.port, 8848);
    EXPECT_TRUE(c.gateway.allowed_origins.empty());
    EXPECT_EQ(c.gateway.max_body_bytes, gateway_defaults.max_body_bytes);
    EXPECT_EQ(c.gateway.max_sessions, gateway_defaults.max_sessions);
    EXPECT_EQ(c.gateway.session_idle_ttl, gateway_defaults.session_idle_ttl);
    EXPECT_EQ(c.gateway.start_concurrency, gateway_defaults.start_concurrency);
    EXPECT_EQ(c.gateway.tool_naming, ToolNaming::kPrefixed);
    EXPECT_EQ(c.gateway.separator, "__");
    EXPECT_EQ(c.gateway.log_level, "info");
    ASSERT_EQ(c.servers.size(), 1u);
    const Server& s = c.servers[0];
    EXPECT_TRUE(s.args.empty());
    EXPECT_TRUE(s.env.empty());
    EXPECT_TRUE(s.cwd.empty());
    EXPECT_TRUE(s.enabled);
    EXPECT_EQ(s.startup_timeout, server_defaults.startup_timeout);
    EXPECT_EQ(s.call_timeout, server_defaults.call_timeout);
    EXPECT_EQ(s.restart_backoff_initial, server_defaults.restart_backoff_initial);
    EXPECT_EQ(s.restart_backoff_max, server_defaults.restart_backoff_max);
    EXPECT_EQ(s.stop_grace, server_defaults.stop_grace);
    EXPECT_EQ(s.max_line_bytes, server_defaults.max_line_bytes);
    EXPECT_EQ(s.max_in_flight, server_defaults.max_in_flight);
  }
}

TEST(Config, EmptyFilesAndEmptyServerListsAreAGatewayWithNoServers) {
  EXPECT_TRUE(yaml("").servers.empty());
  EXPECT_TRUE(yaml("# only a comment\n").servers.empty());
  EXPECT_TRUE(yaml("servers:\n").servers.empty());
  EXPECT_TRUE(yaml("servers: {}\ngateway:\n").servers.empty());
  EXPECT_TRUE(json(R"({"mcpServers": {}})").servers.empty());
  EXPECT_TRUE(json("{}").servers.empty());
}

TEST(Config, ClaudeDesktopJsonAsIs) {
  const Config c = json(R"({
  "globalShortcut": "Ctrl+Space",
  "mcpServers": {
    "filesystem": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Desktop"]
    },
    "github": {
      "command": "docker",
      "args": ["run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN",
               "ghcr.io/github/github-mcp-server"],
      "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_\u0041bc"}
    }
  }
})");
  ASSERT_EQ(c.servers.size(), 2u);
  EXPECT_EQ(c.servers[0].name, "filesystem");
  EXPECT_EQ(c.servers[0].command, "npx");
  EXPECT_EQ(c.servers[0].args.back(), "/Users/me/Desktop");
  EXPECT_EQ(c.servers[1].name, "github");
  EXPECT_EQ(c.servers[1].args.size(), 6u);
  EXPECT_EQ(c.servers[1].env.at("GITHUB_PERSONAL_ACCESS_TOKEN"), "ghp_Abc");  // escapes decoded
}

TEST(Config, JsonKeysOfOtherClientsAreHonouredOrIgnored) {
  const Config c = json(R"({"mcpServers": {
    "cline": {"command": "a", "type": "stdio", "disabled": true, "autoApprove": ["x"],
              "alwaysAllow": [], "timeout": 120, "transportType": "stdio"},
    "gemini": {"command": "b", "timeout": 600000, "trust": false, "includeTools": ["t"]},
    "both": {"command": "c", "timeout": 60, "call_timeout": "10m", "disabled": false},
    "vscode": {"type": "stdio", "command": "d", "envFile": "${workspaceFolder}/.env",
               "dev": {"watch": "*.ts"}}
  }})");
  ASSERT_EQ(c.servers.size(), 4u);
  EXPECT_FALSE(c.servers[0].enabled);
  EXPECT_EQ(c.servers[0].call_timeout, milliseconds(120'000));  // Cline writes seconds
  EXPECT_EQ(c.servers[1].call_timeout, milliseconds(600'000));  // Gemini CLI writes milliseconds
  EXPECT_EQ(c.servers[2].call_timeout, milliseconds(600'000));  // our own key wins
  EXPECT_TRUE(c.servers[2].enabled);
  EXPECT_EQ(c.servers[3].command, "d");
}

TEST(Config, JsonGatewayObjectAndNumbersAsSeconds) {
  const Config c = json(R"({
  "gateway": {"listen": "[::1]:0", "session_idle_ttl": 90, "max_body_bytes": 1048576,
              "max_sessions": 3},
  "servers": {"s": {"command": "x", "startup_timeout": 2.5, "call_timeout": "1h",
                    "args": ["-p", 80, true], "restart_backoff": {"initial": 1, "max": "2s"},
                    "enabled": false}}
})");
  EXPECT_EQ(c.gateway.host, "::1");
  EXPECT_EQ(c.gateway.port, 0);
  EXPECT_EQ(c.gateway.session_idle_ttl, milliseconds(90'000));
  EXPECT_EQ(c.gateway.max_body_bytes, 1u << 20);
  EXPECT_EQ(c.gateway.max_sessions, 3u);
  ASSERT_EQ(c.servers.size(), 1u);
  EXPECT_EQ(c.servers[0].startup_timeout, milliseconds(2'500));
  EXPECT_EQ(c.servers[0].call_timeout, milliseconds(3'600'000));
  EXPECT_EQ(c.servers[0].args, (std::vector<std::string>{"-p", "80", "true"}));
  EXPECT_EQ(c.servers[0].restart_backoff_initial, milliseconds(1'000));
  EXPECT_FALSE(c.servers[0].enabled);

  EXPECT_EQ(json(R"({"toolbridge": {"separator": "."}})").gateway.separator, ".");
}

TEST(Config, JsonWithCommentsTrailingCommasAndByteOrderMark) {
  const Config c = json(
      "\xEF\xBB\xBF{\n  // Cursor writes JSONC\n  \"mcpServers\": {\n    /* a */ \"a\": "
      "{\"command\": \"x\", "
      "\"args\": [\"1\",],},\n  },\n}\n");
  ASSERT_EQ(c.servers.size(), 1u);
  EXPECT_EQ(c.servers[0].args, (std::vector<std::string>{"1"}));
}

TEST(Config, YamlAcceptsMcpServersAsAliasOfServers) {
  const Config c = yaml("mcpServers:\n  a:\n    command: x\n    args: [y]\n");
  ASSERT_EQ(c.servers.size(), 1u);
  EXPECT_EQ(c.servers[0].args, (std::vector<std::string>{"y"}));
}

TEST(Config, ListenForms) {
  EXPECT_EQ(yaml("gateway: {listen: 'localhost:1'}").gateway.host, "localhost");
  const Config v6 = yaml("gateway: {listen: '[::1]:65535'}");
  EXPECT_EQ(v6.gateway.host, "::1");
  EXPECT_EQ(v6.gateway.port, 65535);
}

// ---------------------------------------------------------------------------------------------
// Errors name file:line:col and the key path

TEST(Config, BadDurationNamesFileLineAndKeyPath) {
  EXPECT_EQ(yaml_error("servers:\n  fixture:\n    command: x\n    startup_timeout: abc\n"),
            "cfg.yaml:4:22: servers.fixture.startup_timeout: expected a duration like 30s or "
            "500ms, got 'abc'");
  EXPECT_EQ(json_error("{\"mcpServers\": {\n  \"fixture\": {\"command\": \"x\",\n    "
                       "\"call_timeout\": \"10x\"}}}"),
            "cfg.json:3:21: mcpServers.fixture.call_timeout: expected a duration like 30s or "
            "500ms, got '10x'");
  EXPECT_EQ(
      yaml_error("servers:\n  f:\n    command: x\n    call_timeout:\n"),
      "cfg.yaml:4:5: servers.f.call_timeout: expected a duration like 30s or 500ms, got nothing");
  EXPECT_EQ(
      yaml_error("servers:\n  f:\n    command: x\n    stop_grace: -1s\n"),
      "cfg.yaml:4:17: servers.f.stop_grace: expected a duration like 30s or 500ms, got '-1s'");
  EXPECT_EQ(yaml_error("servers:\n  f:\n    command: x\n    call_timeout: 0s\n"),
            "cfg.yaml:4:19: servers.f.call_timeout: must be longer than 0");
  EXPECT_EQ(
      yaml_error("gateway:\n  session_idle_ttl: [1]\n"),
      "cfg.yaml:2:21: gateway.session_idle_ttl: expected a duration like 30s or 500ms, got a list");
}

TEST(Config, UnknownYamlKeysAreErrorsWithSuggestions) {
  EXPECT_EQ(yaml_error("servers:\n  fixture:\n    comand: x\n"),
            "cfg.yaml:3:5: servers.fixture: unknown key 'comand' (did you mean 'command'?)");
  EXPECT_EQ(yaml_error("gateway:\n  Listen: x\n"),
            "cfg.yaml:2:3: gateway: unknown key 'Listen' (did you mean 'listen'?)");
  EXPECT_EQ(yaml_error("server:\n  a: {command: x}\n"),
            "cfg.yaml:1:1: unknown key 'server' (did you mean 'servers'?)");
  const std::string no_suggestion =
      yaml_error("servers:\n  a:\n    command: x\n    autoApprove: []\n");
  EXPECT_EQ(
      no_suggestion.rfind(
          "cfg.yaml:4:5: servers.a: unknown key 'autoApprove'; expected one of: command, args, env",
          0),
      0u)
      << no_suggestion;
  EXPECT_EQ(
      yaml_error("servers:\n  a:\n    command: x\n    restart_backoff: {intial: 1s}\n"),
      "cfg.yaml:4:23: servers.a.restart_backoff: unknown key 'intial' (did you mean 'initial'?)");
  EXPECT_EQ(
      yaml_error(
          "servers:\n  a:\n    command: x\n    restart_backoff: {initial: 1s, maximum: 2s}\n"),
      "cfg.yaml:4:36: servers.a.restart_backoff: unknown key 'maximum'; expected one of: initial, "
      "max");
}

TEST(Config, JsonNearMissesOfOurKeysAreErrorsButOtherToolsKeysAreNot) {
  EXPECT_EQ(json_error("{\"mcpServers\": {\"a\": {\n  \"comand\": \"x\"}}}"),
            "cfg.json:2:3: mcpServers.a: unknown key 'comand' (did you mean 'command'?)");
  EXPECT_EQ(json_error("{\"mcpServer\": {}}"),
            "cfg.json:1:2: unknown key 'mcpServer' (did you mean 'mcpServers'?)");
  EXPECT_EQ(json_error("{\"mcpServers\": {\"a\": {\"command\": \"x\", \"Env\": {}}}}"),
            "cfg.json:1:39: mcpServers.a: unknown key 'Env' (did you mean 'env'?)");
  // The gateway object is ours alone, so it is strict even in JSON.
  // (Every gateway key is listed; new keys only add to the end.)
  const std::string port = json_error("{\"gateway\": {\"port\": 1}}");
  EXPECT_TRUE(port.starts_with("cfg.json:1:14: gateway: unknown key 'port'; expected one of: listen, "
                               "allowed_origins, max_body_bytes, max_sessions, "))
      << port;
  for (const char* key : {", tenants", ", trace", ", dashboard", ", cache", ", ready_timeout"})
    EXPECT_NE(port.find(key), std::string::npos) << key << " in " << port;
}

// ---------------------------------------------------------------------------------------------
// Sharing policies

Config yaml_config(const std::string& text) {
  return load_text(text, "cfg.yaml", false);
}

TEST(Config, PolicyDefaultsFollowThePolicy) {
  const Config c = yaml_config(
      "servers:\n"
      "  s:\n    command: x\n"
      "  p:\n    command: x\n    policy: pool\n"
      "  t:\n    command: x\n    policy: per_session\n");
  ASSERT_EQ(c.servers.size(), 3u);
  const Server& shared = c.servers[0];
  EXPECT_EQ(shared.policy, Policy::kShared);
  EXPECT_EQ(shared.effective_max_instances(), 1u);
  EXPECT_EQ(shared.effective_spares(), 0u);
  EXPECT_EQ(shared.effective_idle_ttl().count(), 0);
  const Server& pool = c.servers[1];
  EXPECT_EQ(pool.policy, Policy::kPool);
  EXPECT_EQ(pool.effective_max_instances(), 4u);
  EXPECT_EQ(pool.effective_spares(), 0u);
  EXPECT_EQ(pool.effective_idle_ttl().count(), 60'000);
  const Server& per = c.servers[2];
  EXPECT_EQ(per.policy, Policy::kPerSession);
  EXPECT_EQ(per.effective_max_instances(), 1024u);
  EXPECT_EQ(per.effective_spares(), 2u);
  EXPECT_EQ(to_string(per.policy), "per_session");
}

TEST(Config, PolicyKeysAreRead) {
  const Config c = yaml_config(
      "gateway:\n  session_dir_root: /var/tmp/tb\n  ready_timeout: 5s\n"
      "servers:\n"
      "  p:\n    command: x\n    policy: pool\n    min_instances: 0\n    max_instances: 8\n"
      "    spares: 1\n    target_in_flight: 4\n    checkout_timeout: 2s\n    max_calls: 100\n"
      "    max_age: 10m\n    max_rss_mb: 512\n    rss_check_interval: 1s\n    idle_ttl: 0s\n"
      "  t:\n    command: x\n    policy: per_session\n    rebind_on_exit: true\n"
      "    keep_session_dir: true\n    env:\n      MEMORY_FILE_PATH: ${session.dir}/m.json\n");
  EXPECT_EQ(c.gateway.session_dir_root, "/var/tmp/tb");
  EXPECT_EQ(c.gateway.ready_timeout.count(), 5000);
  EXPECT_EQ(Gateway{}.ready_timeout.count(), 30'000);
  const Server& p = c.servers[0];
  EXPECT_EQ(p.min_instances, 0u);
  EXPECT_EQ(p.effective_max_instances(), 8u);
  EXPECT_EQ(p.effective_spares(), 1u);
  EXPECT_EQ(p.target_in_flight, 4u);
  EXPECT_EQ(p.checkout_timeout.count(), 2000);
  EXPECT_EQ(p.max_calls, 100u);
  EXPECT_EQ(p.max_age.count(), 600'000);
  EXPECT_EQ(p.max_rss_mb, 512u);
  EXPECT_EQ(p.rss_check_interval.count(), 1000);
  EXPECT_EQ(p.effective_idle_ttl().count(), 0);
  const Server& t = c.servers[1];
  EXPECT_TRUE(t.rebind_on_exit);
  EXPECT_TRUE(t.keep_session_dir);
  EXPECT_TRUE(t.uses_session_var("${session.dir}"));
  EXPECT_FALSE(t.uses_session_var("${session.id}"));
}

TEST(Config, PolicyKeysOutOfPlaceAreErrors) {
  EXPECT_EQ(yaml_error("servers:\n  s:\n    command: x\n    spares: 2\n"),
            "cfg.yaml:4:5: servers.s.spares: applies only to policy: pool or per_session; this "
            "server's policy is shared");
  EXPECT_EQ(yaml_error("servers:\n  s:\n    command: x\n    policy: per_session\n    min_instances: 2\n"),
            "cfg.yaml:5:5: servers.s.min_instances: applies only to policy: pool; this server's "
            "policy is per_session");
  EXPECT_EQ(yaml_error("servers:\n  s:\n    command: x\n    policy: pool\n    keep_session_dir: true\n"),
            "cfg.yaml:5:5: servers.s.keep_session_dir: applies only to policy: per_session; this "
            "server's policy is pool");
  EXPECT_EQ(yaml_error("servers:\n  s:\n    command: x\n    policy: pool\n    min_instances: 5\n"
                       "    max_instances: 2\n"),
            "cfg.yaml:5:5: servers.s.min_instances: 5 is more than max_instances (2)");
  EXPECT_EQ(yaml_error("servers:\n  s:\n    command: x\n    policy: per-session\n"),
            "cfg.yaml:4:13: servers.s.policy: expected one of shared, pool, per_session, got "
            "'per-session' (did you mean 'per_session'?)");
}

TEST(Config, SessionVariablesNeedPerSessionAndKnownNames) {
  EXPECT_EQ(yaml_error("servers:\n  s:\n    command: x\n    args: [\"${session.dir}\"]\n"),
            "cfg.yaml:4:5: servers.s.args: '${session.dir}' needs policy: per_session (each "
            "session gets its own process); this server's policy is shared");
  EXPECT_EQ(yaml_error("servers:\n  s:\n    command: x\n    policy: per_session\n"
                       "    cwd: ${session.path}\n"),
            "cfg.yaml:5:5: servers.s.cwd: unknown variable '${session.path}' (known: "
            "${session.id}, ${session.dir})");
  EXPECT_EQ(yaml_error("servers:\n  s:\n    command: x\n    policy: per_session\n    spares: 1\n"
                       "    args: [\"--id=${session.id}\"]\n"),
            "cfg.yaml:5:5: servers.s.spares: spares start before their session exists, so they "
            "cannot use ${session.id}; use ${session.dir} (created with the spare and handed to "
            "its session) or spares: 0");
  // Without explicit spares, ${session.id} simply means no spares.
  const Config c = yaml_config("servers:\n  s:\n    command: x\n    policy: per_session\n"
                               "    args: [\"--id=${session.id}\"]\n");
  EXPECT_EQ(c.servers[0].effective_spares(), 0u);
  // Other ${...} text is not ours: no shell ever expands it.
  EXPECT_NO_THROW(yaml_config("servers:\n  s:\n    command: x\n    args: [\"${HOME}\"]\n"));
}

TEST(Config, RemoteServersAreRead) {
  const Config c = yaml(
      "servers:\n  r:\n    url: https://x.example/mcp\n    transport: sse\n    headers:\n"
      "      Authorization: Bearer k\n      X-Plain: v\n    tls_verify: false\n"
      "    ca_file: /etc/ca.pem\n    max_connections: 3\n    connect_timeout: 2s\n"
      "    call_timeout: 5s\n");
  ASSERT_EQ(c.servers.size(), 1u);
  const Server& s = c.servers[0];
  EXPECT_TRUE(s.remote());
  EXPECT_EQ(s.url, "https://x.example/mcp");
  EXPECT_EQ(s.transport, RemoteTransport::kSse);
  EXPECT_EQ(s.headers.at("Authorization"), "Bearer k");
  EXPECT_EQ(s.headers.at("X-Plain"), "v");
  EXPECT_FALSE(s.tls_verify);
  EXPECT_EQ(s.ca_file, "/etc/ca.pem");
  EXPECT_EQ(s.max_connections, 3u);
  EXPECT_EQ(s.connect_timeout, milliseconds(2000));
  const Server d = yaml("servers:\n  r:\n    url: http://127.0.0.1:9/mcp\n").servers[0];
  EXPECT_EQ(d.transport, RemoteTransport::kAuto);
  EXPECT_TRUE(d.tls_verify);
  EXPECT_EQ(d.max_connections, 16u);
  EXPECT_TRUE(d.command.empty());
}

TEST(Config, RemoteServersFromOtherClientsJson) {
  const Config c = json(
      "{\"mcpServers\": {\"a\": {\"type\": \"http\", \"url\": \"https://a/mcp\", \"headers\": "
      "{\"X-Key\": \"1\"}}, \"b\": {\"type\": \"sse\", \"url\": \"http://b/sse\"}, \"c\": "
      "{\"serverUrl\": \"https://c/mcp\"}, \"d\": {\"httpUrl\": \"https://d/mcp\"}, \"e\": "
      "{\"type\": \"streamable-http\", \"url\": \"https://e/mcp\"}}}");
  ASSERT_EQ(c.servers.size(), 5u);
  EXPECT_EQ(c.servers[0].transport, RemoteTransport::kStreamableHttp);
  EXPECT_EQ(c.servers[0].headers.at("X-Key"), "1");
  EXPECT_EQ(c.servers[1].transport, RemoteTransport::kSse);
  EXPECT_EQ(c.servers[2].url, "https://c/mcp");
  EXPECT_EQ(c.servers[2].transport, RemoteTransport::kAuto);
  EXPECT_EQ(c.servers[3].transport, RemoteTransport::kStreamableHttp);
  EXPECT_EQ(c.servers[4].transport, RemoteTransport::kStreamableHttp);
  EXPECT_EQ(json("{\"mcpServers\": {\"s\": {\"type\": \"stdio\", \"command\": \"x\"}}}")
                .servers[0]
                .command,
            "x");
}

TEST(Config, HeaderValuesMayNameEnvironmentVariables) {
  ::setenv("TB_CONFIG_TEST_KEY", "sekret", 1);
  ::unsetenv("TB_CONFIG_TEST_UNSET");
  EXPECT_EQ(yaml("servers:\n  r:\n    url: http://h/\n    headers:\n      Authorization: 'Bearer "
                 "${env:TB_CONFIG_TEST_KEY}!'\n")
                .servers[0]
                .headers.at("Authorization"),
            "Bearer sekret!");
  EXPECT_EQ(yaml_error("servers:\n  r:\n    url: http://h/\n    headers:\n      A: "
                       "${env:TB_CONFIG_TEST_UNSET}\n"),
            "cfg.yaml:5:10: servers.r.headers.A: environment variable TB_CONFIG_TEST_UNSET (from "
            "${env:TB_CONFIG_TEST_UNSET}) is not set in the gateway's environment");
  EXPECT_EQ(yaml_error("servers:\n  r:\n    url: http://h/\n    headers:\n      A: ${env:X\n"),
            "cfg.yaml:5:10: servers.r.headers.A: '${env:' without a closing '}'");
  EXPECT_EQ(yaml_error("servers:\n  r:\n    url: http://h/\n    headers:\n      'A B': x\n"),
            "cfg.yaml:5:7: servers.r.headers: 'A B' is not an HTTP header name");
}

TEST(Config, RemoteServerErrors) {
  EXPECT_EQ(yaml_error("servers:\n  r:\n    url: ftp://h/x\n"),
            "cfg.yaml:3:10: servers.r.url: 'ftp://h/x': only http:// and https:// URLs are "
            "supported");
  EXPECT_EQ(yaml_error("servers:\n  r:\n    url: 'not a url'\n").rfind(
                "cfg.yaml:3:10: servers.r.url: 'not a url' is not a URL", 0),
            0u);
  EXPECT_EQ(yaml_error("servers:\n  r:\n    command: x\n    url: http://h/\n"),
            "cfg.yaml:4:5: servers.r.url: a server has either 'command' (stdio) or 'url' "
            "(remote), not both");
  EXPECT_EQ(yaml_error("servers:\n  r:\n    url: http://h/\n    args: [a]\n"),
            "cfg.yaml:4:5: servers.r.args: applies only to stdio servers (command); this one has "
            "a url");
  EXPECT_EQ(yaml_error("servers:\n  r:\n    command: x\n    headers: {A: b}\n"),
            "cfg.yaml:4:5: servers.r.headers: applies only to remote servers (url)");
  EXPECT_EQ(yaml_error("servers:\n  r:\n    url: http://h/\n    transport: websocket\n"),
            "cfg.yaml:4:16: servers.r.transport: expected one of auto, streamable_http, sse, got "
            "'websocket'");
  EXPECT_EQ(json_error("{\"mcpServers\": {\"r\": {\"type\": \"http\", \"command\": \"x\"}}}"),
            "cfg.json:1:31: mcpServers.r.type: a remote type needs 'url'");
  EXPECT_EQ(json_error("{\"mcpServers\": {\"r\": {\"url\": \"http://a/\", \"serverUrl\": "
                       "\"http://b/\"}}}"),
            "cfg.json:1:43: mcpServers.r.serverUrl: a second URL; 'url' was given at line 1");
  EXPECT_EQ(yaml_error("servers:\n  r:\n    url: http://h/\n    max_connections: 0\n"),
            "cfg.yaml:4:22: servers.r.max_connections: expected a whole number of at least 1, "
            "got '0'");
}

TEST(Config, ServerNamesAreValidated) {
  EXPECT_EQ(
      yaml_error("servers:\n  'my server':\n    command: x\n"),
      "cfg.yaml:2:3: servers: server name 'my server' must be 1-64 letters, digits, '_' or '-'");
  EXPECT_EQ(yaml_error("servers:\n  " + std::string(65, 'a') + ":\n    command: x\n")
                .rfind("cfg.yaml:2:3: servers: server name", 0),
            0u);
  EXPECT_EQ(yaml_error("servers:\n  a__b:\n    command: x\n"),
            "cfg.yaml:2:3: servers: server name 'a__b' must not contain '__': it joins server and "
            "tool names in "
            "namespaced tools (a__b__tool)");
  // The check follows the configured separator, which is read before the servers wherever it is.
  EXPECT_NE(yaml_error("servers:\n  a-b:\n    command: x\ngateway:\n  separator: '-'\n")
                .find("must not contain '-'"),
            std::string::npos);
  EXPECT_EQ(yaml("servers:\n  a__b:\n    command: x\ngateway:\n  separator: '.'\n").servers[0].name,
            "a__b");
  EXPECT_EQ(
      json_error("{\"mcpServers\": {\"a.b\": {\"command\": \"x\"}}}"),
      "cfg.json:1:17: mcpServers: server name 'a.b' must be 1-64 letters, digits, '_' or '-'");
}

TEST(Config, DuplicatesNameBothLines) {
  EXPECT_EQ(
      yaml_error("servers:\n  a:\n    command: x\n  b:\n    command: y\n  a:\n    command: z\n"),
      "cfg.yaml:6:3: servers: duplicate server name 'a' (lines 2 and 6)");
  EXPECT_EQ(
      json_error("{\"mcpServers\": {\n\"a\": {\"command\": \"x\"},\n\"a\": {\"command\": \"y\"}}}"),
      "cfg.json:3:1: mcpServers: duplicate server name 'a' (lines 2 and 3)");
  EXPECT_EQ(yaml_error("servers:\n  a:\n    command: x\n    command: y\n"),
            "cfg.yaml:4:5: servers.a: duplicate key 'command' (first at line 3)");
  EXPECT_EQ(yaml_error("servers:\n  a:\n    command: x\n    env: {K: 1, K: 2}\n"),
            "cfg.yaml:4:17: servers.a.env: duplicate variable 'K'");
  EXPECT_EQ(yaml_error("servers: {}\nmcpServers: {}\n"),
            "cfg.yaml:2:1: 'mcpServers' and 'servers' (line 1) are the same section; keep one");
}

TEST(Config, CommandIsRequiredAndNotEmpty) {
  EXPECT_EQ(yaml_error("servers:\n  a:\n    command: ''\n"),
            "cfg.yaml:3:14: servers.a.command: must not be empty");
  EXPECT_EQ(yaml_error("servers:\n  a:\n    args: [x]\n"),
            "cfg.yaml:2:3: servers.a: missing required key 'command' (the program to run, like npx "
            "or uvx) or 'url' (a remote server)");
  EXPECT_EQ(yaml_error("servers:\n  a:\n"),
            "cfg.yaml:2:3: servers.a: missing required key 'command' (the program to run, like npx "
            "or uvx) or 'url' (a remote server)");
  EXPECT_EQ(json_error("{\"mcpServers\": {\"a\": {\"autoApprove\": []}}}"),
            "cfg.json:1:17: mcpServers.a: missing required key 'command' (the program to run, like "
            "npx or uvx) or 'url' (a remote server)");
}

TEST(Config, ListenErrors) {
  EXPECT_EQ(
      yaml_error("gateway:\n  listen: 127.0.0.1:65536\n"),
      "cfg.yaml:2:11: gateway.listen: port 65536 is out of range 0-65535 (0 picks a free port)");
  EXPECT_EQ(yaml_error("gateway:\n  listen: 127.0.0.1:99999999999999999999999\n"),
            "cfg.yaml:2:11: gateway.listen: port 99999999999999999999999 is out of range 0-65535 "
            "(0 picks a free port)");
  EXPECT_EQ(
      yaml_error("gateway:\n  listen: 127.0.0.1\n"),
      "cfg.yaml:2:11: gateway.listen: expected host:port like 127.0.0.1:8848, got '127.0.0.1'");
  EXPECT_EQ(yaml_error("gateway:\n  listen: '::1:80'\n"),
            "cfg.yaml:2:11: gateway.listen: an IPv6 address needs brackets, like [::1]:8848; got "
            "'::1:80'");
  EXPECT_EQ(
      yaml_error("gateway:\n  listen: '[::1]80'\n"),
      "cfg.yaml:2:11: gateway.listen: expected [address]:port like [::1]:8848, got '[::1]80'");
  EXPECT_EQ(yaml_error("gateway:\n  listen: 'host:http'\n"),
            "cfg.yaml:2:11: gateway.listen: expected a port number after ':', got 'host:http'");
  EXPECT_EQ(yaml_error("gateway:\n  listen: ':80'\n"),
            "cfg.yaml:2:11: gateway.listen: missing the host in ':80' (127.0.0.1 is local only)");
}

TEST(Config, SyntaxErrorsReportLineAndColumn) {
  EXPECT_EQ(yaml_error("servers:\n  a: [x,\n  b: 1\n").rfind("cfg.yaml:", 0), 0u);
  const std::string yaml_message = yaml_error("servers:\n  a:\n\tcommand: x\n");
  EXPECT_NE(yaml_message.find("cfg.yaml:3:"), std::string::npos) << yaml_message;
  EXPECT_NE(yaml_message.find("invalid YAML"), std::string::npos) << yaml_message;

  EXPECT_EQ(json_error("{\n  \"mcpServers\": {\n    \"a\": {\"command\" \"x\"}\n}"),
            "cfg.json:3:21: invalid JSON: syntax error at '\"'");
  EXPECT_EQ(json_error("{\"mcpServers\": {}"), "cfg.json:1:18: invalid JSON: incomplete JSON");
  EXPECT_EQ(json_error("{}\n{}"), "cfg.json:2:1: invalid JSON: extra data at '{'");
  EXPECT_EQ(json_error(""), "cfg.json:1:1: invalid JSON: incomplete JSON");
  EXPECT_EQ(json_error("[1]"), "cfg.json:1:1: expected an object at the top level, got an array");
  EXPECT_EQ(yaml_error("- a\n"), "cfg.yaml:1:1: expected a mapping at the top level, got a list");
}

TEST(Config, WrongShapesNameTheKeyPath) {
  EXPECT_EQ(yaml_error("servers:\n  a:\n    command: x\n    args: --flag\n"),
            "cfg.yaml:4:11: servers.a.args: expected a list, got '--flag'");
  EXPECT_EQ(json_error("{\"mcpServers\": {\"a\": {\"command\": \"x\", \"args\": [\"ok\", {}]}}}"),
            "cfg.json:1:54: mcpServers.a.args[1]: expected a string, got an object");
  EXPECT_EQ(yaml_error("servers:\n  a:\n    command: x\n    env: [A=1]\n"),
            "cfg.yaml:4:10: servers.a.env: expected a mapping, got a list");
  EXPECT_EQ(yaml_error("servers:\n  a:\n    command: x\n    env: {A: }\n"),
            "cfg.yaml:4:11: servers.a.env.A: expected a value (write \"\" for an empty string)");
  EXPECT_EQ(yaml_error("servers:\n  a: npx foo\n"),
            "cfg.yaml:2:6: servers.a: expected a mapping, got 'npx foo'");
  EXPECT_EQ(
      json_error("{\"mcpServers\": {\"a\": {\"command\": \"x\", \"args\": [\"a\\u0000b\"]}}}"),
      "cfg.json:1:48: mcpServers.a.args[0]: must not contain a NUL character");
  EXPECT_EQ(yaml_error("servers:\n  a:\n    command: x\n    enabled: maybe\n"),
            "cfg.yaml:4:14: servers.a.enabled: expected true or false, got 'maybe'");
  EXPECT_EQ(yaml_error("servers:\n  a:\n    command: x\n    inherit_env: [HOME, 1X]\n"),
            "cfg.yaml:4:25: servers.a.inherit_env[1]: '1X' is not an environment variable name");
  EXPECT_EQ(yaml_error("servers:\n  a:\n    command: x\n    enabled: true\n    disabled: true\n"),
            "cfg.yaml:5:15: servers.a.disabled: contradicts 'enabled'; keep one of the two");
}

TEST(Config, GatewayValueErrors) {
  EXPECT_EQ(yaml_error("gateway:\n  max_body_bytes: 4M\n"),
            "cfg.yaml:2:19: gateway.max_body_bytes: expected a size like 4MiB, 64KiB or 512 "
            "(bytes), got '4M'");
  EXPECT_EQ(yaml_error("gateway:\n  max_sessions: 0\n"),
            "cfg.yaml:2:17: gateway.max_sessions: expected a whole number of at least 1, got '0'");
  EXPECT_EQ(
      yaml_error("gateway:\n  start_concurrency: -2\n"),
      "cfg.yaml:2:22: gateway.start_concurrency: expected a whole number of at least 1, got '-2'");
  EXPECT_EQ(yaml_error("gateway:\n  tool_naming: prefix\n"),
            "cfg.yaml:2:16: gateway.tool_naming: expected one of prefixed, unprefixed_when_unique, "
            "got 'prefix' (did "
            "you mean 'prefixed'?)");
  EXPECT_EQ(yaml_error("gateway:\n  log_level: verbose\n"),
            "cfg.yaml:2:14: gateway.log_level: expected one of trace, debug, info, warn, error, "
            "got 'verbose'");
  EXPECT_EQ(yaml_error("gateway:\n  separator: '::'\n"),
            "cfg.yaml:2:14: gateway.separator: '::' must be 1-8 characters from [A-Za-z0-9_.-] so "
            "that namespaced "
            "tool names stay valid");
  EXPECT_EQ(yaml_error("gateway:\n  allowed_origins: [http://localhost:3000/]\n"),
            "cfg.yaml:2:21: gateway.allowed_origins[0]: expected an origin like "
            "http://localhost:3000, got "
            "'http://localhost:3000/' (an origin has no path: 'http://localhost:3000')");
  EXPECT_EQ(yaml_error("gateway:\n  allowed_origins: ['*']\n"),
            "cfg.yaml:2:21: gateway.allowed_origins[0]: expected an origin like "
            "http://localhost:3000, got '*'");
  EXPECT_EQ(
      yaml_error("servers:\n  a:\n    command: x\n    restart_backoff: {initial: 10s, max: 1s}\n"),
      "cfg.yaml:4:42: servers.a.restart_backoff.max: 1s is shorter than initial (10s)");
  EXPECT_EQ(yaml_error("servers:\n  a:\n    command: x\n    max_line_bytes: 0\n"),
            "cfg.yaml:4:21: servers.a.max_line_bytes: must be at least 1 byte");
}

// Every prefix and every single-byte corruption of a good file either loads or throws
// ConfigError: nothing else escapes, and (under ASan) nothing reads out of bounds.
TEST(Config, DamagedFilesOnlyEverThrowConfigError) {
  const std::string good_json =
      "{\"gateway\": {\"listen\": \"[::1]:80\"},\n \"mcpServers\": {\"a\": {\"command\": "
      "\"x\\u00e9\", /* c */\n"
      " \"args\": [\"-y\", 1.5, true], \"env\": {\"K\": \"v\"}, \"timeout\": 60, \"autoApprove\": "
      "[],}}}\n";
  const std::string good_yaml =
      "gateway:\n  listen: '[::1]:80'\nservers:\n  a:\n    command: x\n    args: [-y, 1.5]\n    "
      "env: {K: v}\n"
      "    restart_backoff: {initial: 1s, max: 2s}\n";
  for (const auto& [good, is_json] : {std::pair{good_json, true}, std::pair{good_yaml, false}}) {
    ASSERT_EQ(error_of(good, is_json), "<no error>");
    std::vector<std::string> damaged;
    for (std::size_t n = 0; n < good.size(); ++n) damaged.push_back(good.substr(0, n));
    for (std::size_t i = 0; i < good.size(); ++i) {
      for (char c : {'{', '}', '[', '"', '\\', ',', ':', '\n', '/', '*', '\0', '\xff'}) {
        std::string copy = good;
        copy[i] = c;
        damaged.push_back(std::move(copy));
      }
    }
    for (const std::string& text : damaged) {
      try {
        load_text(text, "cfg", is_json);
      } catch (const ConfigError&) {
      } catch (const std::exception& e) {
        ADD_FAILURE() << "unexpected " << e.what() << " for:\n" << text;
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Files

TEST(Config, LoadFilePicksTheFormatByExtensionOrContent) {
  const TempFile yml("c.yml", "servers:\n  a:\n    command: x\n");
  EXPECT_EQ(load_file(yml.path()).servers.size(), 1u);
  EXPECT_EQ(load_file(yml.path()).source, yml.path());

  const TempFile json_file("c.json",
                           R"({"mcpServers": {"a": {"command": "x"}, "b": {"command": "y"}}})");
  EXPECT_EQ(load_file(json_file.path()).servers.size(), 2u);

  const TempFile sniffed_json("claude_desktop_config",
                              "\n  {\"mcpServers\": {\"a\": {\"command\": \"x\"}}}");
  EXPECT_EQ(load_file(sniffed_json.path()).servers.size(), 1u);

  const TempFile sniffed_yaml("toolbridge.conf", "servers:\n  a:\n    command: x\n");
  EXPECT_EQ(load_file(sniffed_yaml.path()).servers.size(), 1u);

  // JSON is valid YAML, but a .yaml name means YAML's strict rules apply.
  const TempFile json_named_yaml("c.yaml",
                                 R"({"mcpServers": {"a": {"command": "x", "autoApprove": []}}})");
  try {
    load_file(json_named_yaml.path());
    ADD_FAILURE() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(json_named_yaml.path() +
                                         ":1:39: mcpServers.a: unknown key 'autoApprove'"),
              std::string::npos)
        << e.what();
  }
}

TEST(Config, LoadFileReportsUnreadableFiles) {
  try {
    load_file("/nonexistent/toolbridge.yaml");
    ADD_FAILURE() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "cannot read /nonexistent/toolbridge.yaml: No such file or directory");
  }
  try {
    load_file("/");
    ADD_FAILURE() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "cannot read /: Is a directory");
  }
}

// ---------------------------------------------------------------------------------------------
// Durations and sizes

TEST(Config, ParseDurationAcceptsUnitsFractionsAndBareSeconds) {
  EXPECT_EQ(parse_duration("250ms"), milliseconds(250));
  EXPECT_EQ(parse_duration("30s"), milliseconds(30'000));
  EXPECT_EQ(parse_duration("2m"), milliseconds(120'000));
  EXPECT_EQ(parse_duration("1h"), milliseconds(3'600'000));
  EXPECT_EQ(parse_duration("1.5s"), milliseconds(1'500));
  EXPECT_EQ(parse_duration("30"), milliseconds(30'000));
  EXPECT_EQ(parse_duration("0.25"), milliseconds(250));
  EXPECT_EQ(parse_duration("0"), milliseconds(0));
  EXPECT_EQ(parse_duration("1h30m"), milliseconds(5'400'000));
  EXPECT_EQ(parse_duration("1m30s500ms"), milliseconds(90'500));
  EXPECT_EQ(parse_duration("1.5ms"), milliseconds(2));  // rounds to the nearest millisecond
  EXPECT_EQ(parse_duration("0.4ms"), milliseconds(0));
  EXPECT_EQ(parse_duration("0.1234567891s"),
            milliseconds(123));  // digits past the sixth are dropped
  EXPECT_EQ(parse_duration("007s"), milliseconds(7'000));
  EXPECT_EQ(parse_duration("9223372036854775807ms"), milliseconds::max());
  EXPECT_EQ(parse_duration("2562047788015h"), milliseconds(2'562'047'788'015 * 3'600'000));
}

TEST(Config, ParseDurationRejectsEverythingElse) {
  for (const char* bad : {"",
                          " ",
                          "-1s",
                          "+1s",
                          "-0",
                          "10x",
                          "s",
                          "ms",
                          "1S",
                          "1 s",
                          " 30s",
                          "30s ",
                          "1.s",
                          ".5s",
                          "1..5s",
                          "1e3",
                          "1m1h",
                          "1s1s",
                          "1m30",
                          "30s1",
                          "1h-1m",
                          "1d",
                          "1us",
                          "0x10",
                          "9223372036854775808ms",
                          "2562047788016h",
                          "99999999999999999999s",
                          "18446744073709551616",
                          "9223372036854775807ms1ms"}) {
    EXPECT_EQ(parse_duration(bad), std::nullopt) << "'" << bad << "'";
  }
}

TEST(Config, FormatDurationIsReadableAndRoundTrips) {
  EXPECT_EQ(format_duration(milliseconds(0)), "0s");
  EXPECT_EQ(format_duration(milliseconds(250)), "250ms");
  EXPECT_EQ(format_duration(milliseconds(1'500)), "1.5s");
  EXPECT_EQ(format_duration(milliseconds(30'000)), "30s");
  EXPECT_EQ(format_duration(milliseconds(90'000)), "1m30s");
  EXPECT_EQ(format_duration(milliseconds(3'600'000)), "1h");
  EXPECT_EQ(format_duration(milliseconds(5'400'000)), "1h30m");
  EXPECT_EQ(format_duration(milliseconds(61'010)), "1m1.01s");
  EXPECT_EQ(format_duration(milliseconds(-1'500)), "-1.5s");
  EXPECT_EQ(format_duration(milliseconds::min()), "-2562047788015h12m55.808s");
  for (long long ms : {0LL, 1LL, 999LL, 1'000LL, 1'001LL, 59'999LL, 60'000LL, 3'599'999LL,
                       3'600'001LL, 86'400'000LL, 9'223'372'036'854'775'807LL}) {
    EXPECT_EQ(parse_duration(format_duration(milliseconds(ms))), milliseconds(ms)) << ms;
  }
}

TEST(Config, ParseSizeUsesBinaryForKiBAndDecimalForKB) {
  EXPECT_EQ(parse_size("512"), 512u);
  EXPECT_EQ(parse_size("512B"), 512u);
  EXPECT_EQ(parse_size("0"), 0u);
  EXPECT_EQ(parse_size("64KiB"), 64u << 10);
  EXPECT_EQ(parse_size("4MiB"), 4u << 20);
  EXPECT_EQ(parse_size("1GiB"), 1u << 30);
  EXPECT_EQ(parse_size("2TiB"), std::size_t{2} << 40);
  EXPECT_EQ(parse_size("4MB"), 4'000'000u);
  EXPECT_EQ(parse_size("64KB"), 64'000u);
  EXPECT_EQ(parse_size("64kB"), 64'000u);
  EXPECT_EQ(parse_size("4mib"), 4u << 20);
  EXPECT_EQ(parse_size("1.5KiB"), 1'536u);
  EXPECT_EQ(parse_size("0.5MB"), 500'000u);
  EXPECT_EQ(parse_size("18446744073709551615"), std::size_t(-1));
  EXPECT_EQ(parse_size("16383GiB"), std::size_t{16383} << 30);
  for (const char* bad :
       {"", "-1", "+1", "10x", "4M", "4K", "1.5", "1.5B", "4 MiB", "MiB", "1e3", " 1", "1EiB",
        "18446744073709551616", "17179869184GiB", "99999999999999999999TB", "4MiBs"}) {
    EXPECT_EQ(parse_size(bad), std::nullopt) << "'" << bad << "'";
  }
}

TEST(Config, FormatSizePicksTheLargestExactUnit) {
  EXPECT_EQ(format_size(0), "0");
  EXPECT_EQ(format_size(1023), "1023");
  EXPECT_EQ(format_size(1024), "1KiB");
  EXPECT_EQ(format_size(4u << 20), "4MiB");
  EXPECT_EQ(format_size(64u << 20), "64MiB");
  EXPECT_EQ(format_size(4'000'000), "4MB");
  EXPECT_EQ(format_size(1'000), "1KB");
  for (std::size_t n : {std::size_t{1}, std::size_t{1000}, std::size_t{1536}, std::size_t{3} << 30,
                        std::size_t(-1)}) {
    EXPECT_EQ(parse_size(format_size(n)), n) << n;
  }
}

}  // namespace
}  // namespace toolbridge::config
