#pragma once
// POST /v1/parse: a model's raw output in, its tool calls out — parsed in the model's format (or
// `auto`), resolved against the catalog, and with `execute` run as one batch through the
// pipeline (the same runs as /v1/batch), answered in the conversation's shape and, with
// `render`, in the format's own tool-response convention.
//
// Streaming, for output still being generated: POST /v1/parse/streams opens a stream (the same
// options, text optional) and answers {"stream": ID, ...}; POST /v1/parse/streams/ID appends
// {"text": CHUNK} and answers the calls that chunk completed (with `execute`, already started);
// {"done": true} ends the output and answers as /v1/parse does; DELETE drops a stream and
// cancels its calls.
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "frontend/parse_turn.h"
#include "gateway/gateway.h"
#include "transport/http_server.h"

namespace toolbridge::frontend {

// Parse streams: open at once (more: 503), text one stream holds (more: 413), and how long an
// idle one is kept (then dropped, its calls cancelled).
struct ParseStreamLimits {
  std::size_t max_streams = 256;
  std::size_t max_stream_bytes = 4u << 20;
  std::chrono::milliseconds idle_ttl{60'000};
};

class Parse {
 public:
  explicit Parse(gateway::Gateway& gateway, ParseStreamLimits limits = {});

  boost::asio::awaitable<void> post(transport::Exchange& ex);
  boost::asio::awaitable<void> open(transport::Exchange& ex);
  // /v1/parse/streams/ID: POST appends, DELETE drops.
  boost::asio::awaitable<void> stream(transport::Exchange& ex, std::string_view path);

  std::size_t open_streams() const { return streams_.size(); }

 private:
  struct Stream {
    std::unique_ptr<Turn> turn;
    std::string owner;
    std::chrono::steady_clock::time_point last_used;
    bool finishing = false;
  };

  // The body as JSON and the request's options, or a refusal already answered (nullptr).
  std::unique_ptr<Turn> begin(transport::Exchange& ex, bool stream, BatchRefusal& refusal);
  boost::asio::awaitable<void> append(transport::Exchange& ex, const std::string& id);
  // Ends the turn: waits for its calls, releases a request-scoped trajectory, answers.
  boost::asio::awaitable<void> finish(transport::Exchange& ex, Turn& turn);
  boost::asio::awaitable<void> refuse(transport::Exchange& ex, const BatchRefusal& refusal);
  void expire_streams();
  void drop(const std::string& id, const std::string& why);

  gateway::Gateway& gateway_;
  ParseStreamLimits limits_;
  parse::ToolIndexCache index_;
  std::map<std::string, std::shared_ptr<Stream>, std::less<>> streams_;
  std::uint64_t next_ephemeral_ = 0;
  std::uint64_t next_call_id_ = 0;
  std::uint64_t next_stream_ = 0;
  std::uint64_t* parsed_ = nullptr;
  std::uint64_t* refused_ = nullptr;
  std::uint64_t* calls_ = nullptr;
  std::uint64_t* unparsed_ = nullptr;
};

}  // namespace toolbridge::frontend
