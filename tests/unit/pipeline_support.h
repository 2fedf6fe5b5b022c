#pragma once
// Test support: the gateway's pipeline as built from an empty configuration (no servers, so
// every tool is unknown and the resolve stage answers each call at once), with what it refers to.
#include <boost/asio/io_context.hpp>
#include <memory>
#include <vector>

#include "gateway/pipeline.h"

namespace toolbridge::testing {

struct EmptyPipeline {
  boost::asio::io_context io;
  config::Config config;
  catalog::Catalog catalog;
  std::vector<std::shared_ptr<upstream::Upstream>> upstreams;
  telemetry::Metrics metrics;
  bool stopping = false;
  telemetry::CallLog log;
  gateway::Pipeline pipeline{
      gateway::PipelineParts{io, config, catalog, upstreams, metrics, stopping, log}};
};

}  // namespace toolbridge::testing
