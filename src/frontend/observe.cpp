#include "frontend/observe.h"

#include <fmt/format.h>

#include <boost/beast/http.hpp>

#include "frontend/router.h"
#include "frontend/token_records_codec.h"
#include "frontend/trajectory_key.h"
#include "json/envelope.h"

namespace toolbridge::frontend {

namespace asio = boost::asio;
namespace http = boost::beast::http;

namespace {

constexpr std::string_view kTrajectoriesPath = "/v1/trajectories/";
constexpr std::string_view kModelCallsSuffix = "/model_calls";
constexpr std::size_t kMaxListed = 1000;        // trajectories in GET /v1/trajectories
constexpr std::size_t kMaxIdBytes = 1024;       // a longer id names nothing we keep
constexpr std::size_t kSlowestShown = 10;       // active calls on the dashboard
constexpr std::chrono::seconds kWindow{10};     // the dashboard's rates and percentiles

bool is_loopback(std::string_view address) {
  return address.starts_with("127.") || address == "::1" || address.starts_with("::ffff:127.");
}

asio::awaitable<void> answer_json(transport::Exchange& ex, http::status status, std::string body) {
  const transport::Headers headers{{"Cache-Control", "no-store"}};
  co_await ex.reply(status, "application/json", body, headers);
}

asio::awaitable<void> answer_error(transport::Exchange& ex, http::status status,
                                   std::string message) {
  const std::string body = R"({"error":)" + json::quote(message) + "}";
  co_await answer_json(ex, status, body);
}

}  // namespace

base::Status Observe::may_look(const transport::Exchange& ex) const {
  switch (gateway_.config().gateway.dashboard) {
    case config::ObserveAccess::kAnywhere:
      return {};
    case config::ObserveAccess::kOff:
      return base::fail("the dashboard and the trajectory view are off (gateway.dashboard: off)");
    case config::ObserveAccess::kLoopback:
      if (is_loopback(ex.client())) return {};
      return base::fail(fmt::format(
          "the dashboard and the trajectory view answer loopback clients only, not {}: open "
          "them on the gateway's machine (e.g. through an SSH tunnel) or set gateway.dashboard: "
          "anywhere",
          ex.client()));
  }
  return {};
}

asio::awaitable<void> Observe::trajectories(transport::Exchange& ex) {
  if (base::Status may = may_look(ex); !may) {
    co_await answer_error(ex, http::status::forbidden, may.error());
    co_return;
  }
  std::string body = gateway_.call_log().trajectories_json(gateway_.clock().now(), kMaxListed);
  co_await answer_json(ex, http::status::ok, std::move(body));
}

asio::awaitable<void> Observe::trajectory(transport::Exchange& ex, std::string_view path) {
  if (base::Status may = may_look(ex); !may) {
    co_await answer_error(ex, http::status::forbidden, may.error());
    co_return;
  }
  std::string_view raw = path.substr(kTrajectoriesPath.size());
  const bool model_calls_wanted = raw.ends_with(kModelCallsSuffix);
  if (model_calls_wanted) raw.remove_suffix(kModelCallsSuffix.size());
  if (raw.size() > kMaxIdBytes * 3) {
    co_await answer_error(ex, http::status::bad_request,
                          fmt::format("a trajectory id is at most {} bytes", kMaxIdBytes));
    co_return;
  }
  const std::string id = percent_decode(raw);
  if (model_calls_wanted) {
    co_await model_calls(ex, id);
    co_return;
  }
  std::string body = gateway_.call_log().trajectory_json(id, gateway_.clock().now());
  if (body.empty()) {
    // The id is echoed only as a JSON string: quote() escapes whatever it holds.
    co_await answer_error(
        ex, http::status::not_found,
        "no calls of trajectory " + json::quote(id) +
            " are kept: it made no call yet, or was forgotten (the least recently active idle "
            "trajectories go first past 4096)");
    co_return;
  }
  co_await answer_json(ex, http::status::ok, std::move(body));
}

asio::awaitable<void> Observe::model_calls(transport::Exchange& ex, const std::string& id) {
  const auto now = gateway_.clock().now();
  const auto* t = token_records_ ? token_records_->find(id, now) : nullptr;
  if (!t) {
    co_await answer_error(
        ex, http::status::not_found,
        "no token records of trajectory " + json::quote(id) +
            " are kept: none of its model calls went to a model with record_tokens: true, or "
            "they aged out (gateway.token_records_ttl after release) or were evicted "
            "(gateway.token_records_max_bytes)");
    co_return;
  }
  TokenRecordsView view;
  view.trajectory = id;
  view.records = t;
  view.released = token_records_->is_released(*t, now);
  view.expires_in_s = std::chrono::duration<double>(token_records_->expires_at(*t) - now).count();
  const auto& req = ex.request();
  const std::string_view target(req.target().data(), req.target().size());
  const std::string_view query =
      target.find('?') == std::string_view::npos ? "" : target.substr(target.find('?') + 1);
  const bool msgpack = header(req, "Accept").find("msgpack") != std::string_view::npos ||
                       query == "format=msgpack" || query.starts_with("format=msgpack&") ||
                       query.find("&format=msgpack") != std::string_view::npos;
  const transport::Headers headers{{"Cache-Control", "no-store"}};
  if (msgpack) {
    std::string body = token_records_msgpack(view);
    co_await ex.reply(http::status::ok, "application/msgpack", body, headers);
    co_return;
  }
  std::string body = token_records_json(view);
  co_await ex.reply(http::status::ok, "application/json", body, headers);
}

asio::awaitable<void> Observe::dashboard(transport::Exchange& ex) {
  if (base::Status may = may_look(ex); !may) {
    const std::string body = may.error() + "\n";
    co_await ex.reply(http::status::forbidden, "text/plain", body, {});
    co_return;
  }
  const std::string page(dashboard_page());
  const transport::Headers headers{{"Cache-Control", "no-store"},
                                   {"Content-Security-Policy",
                                    "default-src 'self'; script-src 'unsafe-inline'; "
                                    "style-src 'unsafe-inline'"}};
  co_await ex.reply(http::status::ok, "text/html; charset=utf-8", page, headers);
}

asio::awaitable<void> Observe::state(transport::Exchange& ex) {
  if (base::Status may = may_look(ex); !may) {
    co_await answer_error(ex, http::status::forbidden, may.error());
    co_return;
  }
  const auto& metrics = gateway_.metrics();
  const auto* trace = gateway_.trace();
  std::string body = fmt::format(
      R"({{"health":{},"calls":{},"totals":{{"calls":{},"repairs":{},"cache_hits":{},)"
      R"("cache_misses":{}}},"trace":{}}})",
      gateway_.health_json(),
      gateway_.call_log().live_json(gateway_.clock().now(), kWindow, kSlowestShown),
      metrics.counter_total("toolbridge_calls_total"),
      metrics.counter_total("toolbridge_repairs_total"),
      metrics.counter_total("toolbridge_cache_hits_total"),
      metrics.counter_total("toolbridge_cache_misses_total"),
      trace ? fmt::format(R"({{"written":{},"dropped":{}}})", trace->written(), trace->dropped())
            : std::string("null"));
  co_await answer_json(ex, http::status::ok, std::move(body));
}

}  // namespace toolbridge::frontend
