#pragma once
// The gateway section (`gateway`, or `toolbridge` in a JSON file shared with other clients).
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "config/config.h"
#include "config/node_reader.h"
#include "config/tree.h"

namespace toolbridge::config {

// The observability keys (observe_keys.cpp): `trace` and `dashboard`.
void read_trace(const NodeReader& r, const Node& node, const std::string& path, Trace& t);
ObserveAccess read_observe_access(const NodeReader& r, const Node& node, const std::string& path);
// `gateway.otel` and the OTEL_EXPORTER_OTLP_* variables under it (otel_keys.cpp). The variables
// are read first (`getenv`), keys in the file override them; a bad value throws ConfigError.
void read_otel(const NodeReader& r, const Node& node, const std::string& path, Otel& o);
void read_otel_environment(const std::function<const char*(const char*)>& getenv, Otel& o);
// `gateway.record` and `gateway.replay` (replay_keys.cpp).
void read_record(const NodeReader& r, const Node& node, const std::string& path, Record& rec);
void read_replay(const NodeReader& r, const Node& node, const std::string& path, Replay& rep);
// `gateway.cache` (cache_keys.cpp).
void read_cache_store(const NodeReader& r, const Node& node, const std::string& path,
                      CacheStore& c);
// Every server's cache tier is one the gateway section configures.
void check_cache_tiers(const Config& config);

// The keys of deploy_keys.cpp: `auth`, `tls`, `gateway_id`.
void read_auth(const NodeReader& r, const Node& node, const std::string& path, Auth& a);
void read_tls(const NodeReader& r, const Node& node, const std::string& path, Tls& t);
std::string read_gateway_id(const NodeReader& r, const Node& node, const std::string& path);
void read_shared_limits(const NodeReader& r, const Node& node, const std::string& path,
                        Gateway::SharedLimits& s);

void read_gateway(const NodeReader& r, const Node& node, const std::string& path, Gateway& g);
// Every key of the gateway section (docs/configuration.md lists exactly these; a test checks).
std::span<const std::string_view> gateway_keys();

}  // namespace toolbridge::config
