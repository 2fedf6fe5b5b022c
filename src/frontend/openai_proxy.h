#pragma once
// The last stage of a model request's chain (openai.cpp builds it: measure → admission → this):
// the model's routing policy picks a worker, failures before the first byte are retried on
// another one, and the answer is relayed to the client chunk by chunk.
#include <boost/asio/any_io_executor.hpp>
#include <boost/beast/http/status.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "base/expected.h"
#include "call/stage.h"
#include "llm/model.h"
#include "llm/token_records.h"
#include "transport/http_client.h"
#include "transport/http_server.h"

namespace toolbridge::frontend {

// An OpenAI-style error body: {"error": {"message", "type", "param": null, "code"}}.
std::string openai_error_json(std::string_view message, std::string_view type,
                              std::string_view code);

// One request on its way: shared with the peer-closed callback, which stops it.
struct InFlight {
  std::unique_ptr<transport::HttpExchange> upstream;  // the attempt in flight, if any
  bool client_gone = false;
  bool replied = false;  // something (a status line) went to the client
};

// The last stage of a model request's chain: routing, attempts, relaying the answer.
class ProxyStage final : public call::Stage {
 public:
  ProxyStage(transport::Exchange& ex, llm::Model& model, std::shared_ptr<InFlight> state,
             std::string_view path, const llm::RouteInput& input, boost::asio::any_io_executor exec,
             const base::Clock& clock)
      : ex_(ex),
        model_(model),
        state_(std::move(state)),
        path_(path),
        input_(input),
        exec_(std::move(exec)),
        clock_(clock) {}

  std::string_view name() const override { return "llm-proxy"; }
  boost::asio::awaitable<call::Result> handle(call::Call& call, call::Next) override;

  // When nothing went to the client: what to answer.
  boost::beast::http::status status = boost::beast::http::status::bad_gateway;
  std::string error_body;  // a worker's own error answer, passed on
  std::string error_type = "upstream_error";
  std::chrono::milliseconds retry_hint{0};

  // models.NAME.record_tokens: where the answer's token record goes (null: not recorded).
  struct Recording {
    llm::TokenRecords* store = nullptr;
    std::string trajectory;
    std::string endpoint;       // chat/completions or completions
    std::string messages_hash;  // "sha256:HEX"
  } record;

 private:
  // Relays the worker's answer to the client; a failure saying why when it was not relayed whole.
  boost::asio::awaitable<base::Status> relay(call::Call& call, std::size_t worker,
                                             transport::HttpExchange& hx);
  // The answer relayed (or cut short): its record, when recording.
  void keep_record(const call::Call& call, std::size_t worker, int status, bool stream,
                   bool complete, llm::TokenScanner& scan, base::Clock::time_point first_byte);

  transport::Exchange& ex_;
  llm::Model& model_;
  std::shared_ptr<InFlight> state_;
  std::string_view path_;
  const llm::RouteInput& input_;
  boost::asio::any_io_executor exec_;
  const base::Clock& clock_;
  base::Clock::time_point sent_at_{};  // the attempt being relayed was sent
};

}  // namespace toolbridge::frontend
