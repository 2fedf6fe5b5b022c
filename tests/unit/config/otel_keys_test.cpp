// `gateway.otel` and the OTEL_EXPORTER_OTLP_* variables: values, defaults, precedence and errors.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "config/config.h"
#include "config/gateway_section.h"
#include "load_error.h"

namespace toolbridge::config {
namespace {

Otel from_env(const std::map<std::string, std::string>& vars) {
  Otel o;
  read_otel_environment(
      [&](const char* name) -> const char* {
        auto it = vars.find(name);
        return it == vars.end() ? nullptr : it->second.c_str();
      },
      o);
  return o;
}

std::string env_error(const std::map<std::string, std::string>& vars) {
  try {
    from_env(vars);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(ConfigOtel, OffByDefault) {
  const Config c = load_text("servers: {}\n", "cfg.yaml", false);
  EXPECT_TRUE(c.gateway.otel.endpoint.empty());
  EXPECT_EQ(c.gateway.otel.sample_ratio, 1.0);
  EXPECT_EQ(c.gateway.otel.batch_size, 512u);
  EXPECT_EQ(c.gateway.otel.queue_size, 8192u);
}

TEST(ConfigOtel, EveryKeyIsRead) {
  const Config c = load_text(
      "gateway:\n"
      "  otel:\n"
      "    endpoint: http://127.0.0.1:4318\n"
      "    headers: {Authorization: Bearer abc, x-team: rl}\n"
      "    protocol: http/json\n"
      "    sample_ratio: 0.25\n"
      "    batch_size: 100\n"
      "    queue_size: 1000\n"
      "    timeout: 2s\n",
      "cfg.yaml", false);
  const Otel& o = c.gateway.otel;
  EXPECT_EQ(o.endpoint, "http://127.0.0.1:4318/v1/traces");  // no path: the OTLP one
  ASSERT_EQ(o.headers.size(), 2u);
  EXPECT_EQ(o.headers[0], (std::pair<std::string, std::string>{"Authorization", "Bearer abc"}));
  EXPECT_EQ(o.protocol, Otel::Protocol::kJson);
  EXPECT_EQ(o.sample_ratio, 0.25);
  EXPECT_EQ(o.batch_size, 100u);
  EXPECT_EQ(o.queue_size, 1000u);
  EXPECT_EQ(o.timeout, Duration(2000));
}

TEST(ConfigOtel, AnEndpointWithAPathIsKeptAsWritten) {
  const Config c = load_text("gateway: {otel: {endpoint: 'https://c.example/otlp/traces'}}\n",
                             "cfg.yaml", false);
  EXPECT_EQ(c.gateway.otel.endpoint, "https://c.example/otlp/traces");
}

TEST(ConfigOtel, BadValuesSayWhereAndWhy) {
  EXPECT_EQ(yaml_error("gateway:\n  otel:\n    endpoint: ftp://x:1\n"),
            "cfg.yaml:3:15: gateway.otel.endpoint: 'ftp://x:1': only http:// and https:// URLs "
            "are supported (OTLP/HTTP)");
  EXPECT_EQ(yaml_error("gateway:\n  otel:\n    endpoint: http://x:1\n    protocol: grpc\n"),
            "cfg.yaml:4:15: gateway.otel.protocol: grpc is not supported by this build: use "
            "http/protobuf (port 4318) or http/json");
  EXPECT_EQ(yaml_error("gateway:\n  otel:\n    endpoint: http://x:1\n    sample_ratio: 1.5\n"),
            "cfg.yaml:4:19: gateway.otel.sample_ratio: expected a ratio from 0 to 1, got '1.5'");
  EXPECT_EQ(yaml_error("gateway:\n  otel:\n    endpoint: http://x:1\n    batch_size: 10\n"
                       "    queue_size: 5\n"),
            "cfg.yaml:3:5: gateway.otel: queue_size (5) must be at least batch_size (10)");
  EXPECT_EQ(yaml_error("gateway:\n  otel: {batch_size: 10}\n"),
            "cfg.yaml:2:9: gateway.otel: needs `endpoint` (or OTEL_EXPORTER_OTLP_ENDPOINT): the "
            "collector's OTLP/HTTP URL, e.g. http://127.0.0.1:4318");
  EXPECT_NE(yaml_error("gateway:\n  otel:\n    endpoint: http://x:1\n    headres: {}\n")
                .find("did you mean 'headers'"),
            std::string::npos);
  EXPECT_NE(yaml_error("gateway:\n  otel:\n    endpoint: http://x:1\n    timeout: 0s\n")
                .find("gateway.otel.timeout: must be longer than 0"),
            std::string::npos);
}

TEST(ConfigOtel, AHeaderThatWouldSplitTheRequestIsRefused) {
  EXPECT_EQ(yaml_error("gateway:\n  otel:\n    endpoint: http://x:1\n"
                       "    headers: {\"a b\": x}\n"),
            "cfg.yaml:4:15: gateway.otel.headers.a b: 'a b' is not a valid header name");
  EXPECT_NE(yaml_error("gateway:\n  otel:\n    endpoint: http://x:1\n"
                       "    headers: {a: \"x\\r\\nEvil: 1\"}\n")
                .find("has a line break"),
            std::string::npos);
}

TEST(ConfigOtel, TheStandardVariablesAreHonoured) {
  const Otel o = from_env({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/"},
                           {"OTEL_EXPORTER_OTLP_HEADERS", "api-key=s%3Dcret, x-team = rl"},
                           {"OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"},
                           {"OTEL_EXPORTER_OTLP_TIMEOUT", "2500"},
                           {"OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "64"},
                           {"OTEL_BSP_MAX_QUEUE_SIZE", "128"},
                           {"OTEL_SERVICE_NAME", "rollouts"}});
  EXPECT_EQ(o.endpoint, "http://collector:4318/v1/traces");  // a base URL: the path is appended
  ASSERT_EQ(o.headers.size(), 2u);
  EXPECT_EQ(o.headers[0], (std::pair<std::string, std::string>{"api-key", "s=cret"}));
  EXPECT_EQ(o.headers[1], (std::pair<std::string, std::string>{"x-team", "rl"}));
  EXPECT_EQ(o.protocol, Otel::Protocol::kJson);
  EXPECT_EQ(o.timeout, Duration(2500));
  EXPECT_EQ(o.batch_size, 64u);
  EXPECT_EQ(o.queue_size, 128u);
  EXPECT_EQ(o.service_name, "rollouts");
}

TEST(ConfigOtel, TheTracesVariablesWinAndTheirEndpointIsUsedAsIs) {
  const Otel o = from_env({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://general:4318"},
                           {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://traces:4318/custom"},
                           {"OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"},
                           {"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf"}});
  EXPECT_EQ(o.endpoint, "http://traces:4318/custom");
  EXPECT_EQ(o.protocol, Otel::Protocol::kProtobuf);
}

TEST(ConfigOtel, BadVariablesNameTheVariable) {
  EXPECT_EQ(env_error({{"OTEL_EXPORTER_OTLP_TIMEOUT", "10s"}}),
            "environment: OTEL_EXPORTER_OTLP_TIMEOUT: expected a whole number from 1 to "
            "2592000000, got '10s'");
  EXPECT_EQ(env_error({{"OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"}}),
            "environment: OTEL_EXPORTER_OTLP_PROTOCOL: grpc is not supported by this build: use "
            "http/protobuf (port 4318) or http/json");
  EXPECT_EQ(env_error({{"OTEL_EXPORTER_OTLP_HEADERS", "novalue"}}),
            "environment: OTEL_EXPORTER_OTLP_HEADERS: 'novalue' is not key=value");
  EXPECT_EQ(env_error({{"OTEL_EXPORTER_OTLP_HEADERS", "a=%4"}}),
            "environment: OTEL_EXPORTER_OTLP_HEADERS: a '%' escape is cut short");
}

}  // namespace
}  // namespace toolbridge::config
