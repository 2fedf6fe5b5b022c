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
// cancels its calls. One sweep timer (armed while any stream is open) drops streams idle past
// gateway.parse_stream_idle, so their calls are cancelled without waiting for another request.
//
// Many turns at once (one per trajectory of a rollout step): {"turns": [{"text": ...}, ...]}
// with the options above as defaults each turn may override; answered {"turns": [...]} in
// order, so one round trip carries them all.
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "base/clock.h"
#include "frontend/parse_turn.h"
#include "gateway/gateway.h"
#include "transport/http_server.h"

namespace toolbridge::frontend {

class Parse {
 public:
  explicit Parse(gateway::Gateway& gateway);

  boost::asio::awaitable<void> post(transport::Exchange& ex);
  boost::asio::awaitable<void> open(transport::Exchange& ex);
  // /v1/parse/streams/ID: POST appends, DELETE drops.
  boost::asio::awaitable<void> stream(transport::Exchange& ex, std::string_view path);

  std::size_t open_streams() const { return streams_.size(); }
  // Shutdown: the sweep stops and every open stream is dropped (its calls cancelled).
  void stop();

 private:
  struct Stream {
    std::unique_ptr<Turn> turn;
    std::string owner;
    base::Clock::time_point last_used;
    bool finishing = false;
    std::size_t chunks = 0;  // appends so far (the stream span's toolbridge.parse.chunks)
  };

  // The request's options (from the body read as JSON), or a refusal (nullptr).
  std::unique_ptr<Turn> begin(transport::Exchange& ex, const boost::json::value& body, bool stream,
                              BatchRefusal& refusal);
  std::unique_ptr<Turn> begin(ParseOptions options, transport::Exchange& ex, bool stream,
                              call::Call::Clock::time_point arrived, BatchRefusal& refusal);
  // Extracts and resolves a whole turn; with execute starts its calls. A refusal (too many
  // calls) leaves the turn unstarted.
  BatchRefusal run_turn(Turn& turn);
  // {"turns": [...]}: every turn parsed (and run) at once, answered in order.
  boost::asio::awaitable<void> post_turns(transport::Exchange& ex, const boost::json::value& body);
  boost::asio::awaitable<void> append(transport::Exchange& ex, const std::string& id);
  // Ends the turn: waits for its calls, releases a request-scoped trajectory, answers.
  boost::asio::awaitable<void> finish(transport::Exchange& ex, Turn& turn);
  boost::asio::awaitable<void> refuse(transport::Exchange& ex, const BatchRefusal& refusal);
  void expire_streams();
  // Arms the sweep if it is not armed; it re-arms itself while streams are open.
  void arm_sweep();
  void drop(const std::string& id, const std::string& why);

  gateway::Gateway& gateway_;
  parse::ToolIndexCache index_;
  base::Timer sweep_;
  bool sweep_armed_ = false;
  bool stopped_ = false;
  std::map<std::string, std::shared_ptr<Stream>, std::less<>> streams_;
  std::uint64_t next_ephemeral_ = 0;
  std::uint64_t next_call_id_ = 0;
  std::uint64_t next_stream_ = 0;
  std::uint64_t* parsed_ = nullptr;
  std::uint64_t* refused_ = nullptr;
  std::uint64_t* calls_ = nullptr;
  std::uint64_t* unparsed_ = nullptr;
  std::uint64_t* expired_ = nullptr;
};

}  // namespace toolbridge::frontend
