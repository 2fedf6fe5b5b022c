#pragma once
// The gateway: downstream Streamable HTTP sessions on one side, supervised upstream servers on
// the other, and the pipeline between them (catalog -> instance -> response).
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "config/config.h"
#include "gateway/catalog.h"
#include "gateway/legacy_sse.h"
#include "gateway/session.h"
#include "telemetry/metrics.h"
#include "transport/http_server.h"
#include "upstream/upstream.h"

namespace toolbridge::gateway {

class Gateway {
 public:
  Gateway(boost::asio::io_context& io, config::Config config);
  ~Gateway();

  // Binds the listener, then starts every server concurrently (bounded by start_concurrency).
  // Returns an error message if the listener cannot bind.
  std::string start();
  // Stops accepting, ends sessions, stops every server with the stop ladder.
  boost::asio::awaitable<void> shutdown();

  unsigned short port() const { return http_.port(); }
  const Catalog& catalog() const { return catalog_; }
  std::string health_json() const;
  telemetry::Metrics& metrics() { return metrics_; }

 private:
  boost::asio::awaitable<void> handle_http(transport::Exchange& ex);
  boost::asio::awaitable<void> handle_post(transport::Exchange& ex);
  boost::asio::awaitable<void> handle_get(transport::Exchange& ex);
  boost::asio::awaitable<void> handle_delete(transport::Exchange& ex);
  boost::asio::awaitable<void> answer_post(transport::Exchange& ex, std::shared_ptr<PostStream> stream,
                                           bool batch, const transport::Headers& headers);

  // Handles one message of a POST. Requests either answer at once (into stream->responses) or
  // are forwarded with the stream as their sink.
  void dispatch(const std::shared_ptr<Session>& session, const std::shared_ptr<PostStream>& stream,
                std::string_view message);
  void forward(const std::shared_ptr<Session>& session, const std::shared_ptr<PostStream>& stream,
               const std::string& server, std::string_view method, std::string params,
               std::string id, std::string progress_token, const std::string& display_name,
               const std::string& tool_label, const std::string& tool,
               std::chrono::milliseconds requested_timeout, std::string key);
  std::shared_ptr<upstream::Upstream> find_upstream(std::string_view name) const;

  bool origin_allowed(std::string_view origin) const;
  std::shared_ptr<Session> create_session();
  // Cancels the session's calls upstream, closes its stream, forgets it (DELETE, legacy SSE close).
  void end_session(const std::shared_ptr<Session>& session, const std::string& why);
  void rebuild_catalog();
  void broadcast(const std::string& message);
  void expire_sessions();
  // Frees the per_session instances bound to `key` on every server; returns how many.
  std::size_t release_session(const std::string& key);
  void register_metrics();

  boost::asio::io_context& io_;
  config::Config config_;
  telemetry::Metrics metrics_;
  upstream::StartGate gate_;
  std::vector<std::shared_ptr<upstream::Upstream>> upstreams_;
  Catalog catalog_;
  transport::HttpServer http_;
  std::unordered_map<std::string, std::shared_ptr<Session>> sessions_;
  std::unique_ptr<LegacySse> legacy_;  // GET /sse + POST /messages (2024-11-05 transport)
  boost::asio::steady_timer sweep_;
  std::string session_dir_root_;  // per_session servers' ${session.dir} directories go here
  bool stopping_ = false;
};

}  // namespace toolbridge::gateway
