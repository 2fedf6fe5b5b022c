#pragma once
// What a person running an evaluation looks at: GET /v1/trajectories (the trajectories, busy
// first, each with its current call), GET /v1/trajectories/{id} (one trajectory's calls in order
// and a summary), GET /dashboard (a live page served from the binary: no CDN) and the JSON it
// polls, GET /dashboard/state. Loopback clients only unless `dashboard: anywhere`.
#include <boost/asio/awaitable.hpp>
#include <string_view>

#include "base/expected.h"
#include "gateway/gateway.h"
#include "llm/token_records.h"
#include "transport/http_server.h"

namespace toolbridge::frontend {

// The dashboard page (dashboard_page.cpp): HTML, CSS and script in one string.
std::string_view dashboard_page();

class Observe {
 public:
  explicit Observe(gateway::Gateway& gateway) : gateway_(gateway) {}

  boost::asio::awaitable<void> trajectories(transport::Exchange& ex);
  // GET /v1/trajectories/ID, and GET /v1/trajectories/ID/model_calls (token records).
  boost::asio::awaitable<void> trajectory(transport::Exchange& ex, std::string_view path);
  boost::asio::awaitable<void> dashboard(transport::Exchange& ex);
  boost::asio::awaitable<void> state(transport::Exchange& ex);

  // Where model_calls reads (the OpenAI front end's records); null: none are kept.
  void set_token_records(llm::TokenRecords* records) { token_records_ = records; }

 private:
  boost::asio::awaitable<void> model_calls(transport::Exchange& ex, const std::string& id);

  // Whether this client may look (dashboard: loopback or off), else why not.
  base::Status may_look(const transport::Exchange& ex) const;

  gateway::Gateway& gateway_;
  llm::TokenRecords* token_records_ = nullptr;
};

}  // namespace toolbridge::frontend
