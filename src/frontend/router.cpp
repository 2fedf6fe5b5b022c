#include "frontend/router.h"

#include <boost/beast/http.hpp>

#include "json/envelope.h"

namespace toolbridge::frontend {

namespace http = boost::beast::http;

std::string header(const transport::Request& req, std::string_view name) {
  auto it = req.find(name);
  return it == req.end() ? std::string() : std::string(it->value());
}

void Router::add(std::optional<http::verb> method, std::string path, Handler handler, bool prefix) {
  entries_.push_back(Entry{method, std::move(path), prefix, std::move(handler)});
}

boost::asio::awaitable<void> Router::route(transport::Exchange& ex) const {
  const auto& req = ex.request();
  const std::string_view target(req.target().data(), req.target().size());
  const std::string_view path = target.substr(0, target.find('?'));
  std::string allow;
  for (const auto& e : entries_) {
    if (!e.matches(path)) continue;
    if (!e.method || *e.method == req.method()) {
      co_await e.handler(ex, path);
      co_return;
    }
    if (!allow.empty()) allow += ", ";
    allow += std::string(http::to_string(*e.method));
  }
  if (!allow.empty()) {
    const transport::Headers headers{{"Allow", allow}};
    const std::string body =
        json::make_error({}, json::kInvalidRequest, "Method not allowed on " + std::string(path));
    co_await ex.reply(http::status::method_not_allowed, "application/json", body, headers);
    co_return;
  }
  if (fallback_) co_await fallback_(ex, path);
}

}  // namespace toolbridge::frontend
