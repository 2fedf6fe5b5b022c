#include "frontend/router.h"

#include <boost/beast/http.hpp>

#include "json/envelope.h"

namespace toolbridge::frontend {

namespace http = boost::beast::http;

std::string_view header(const transport::Request& req, std::string_view name) {
  // A scan of the few fields in arrival order, by length first: cheaper than Beast's ordered
  // lookup, which compares whole names case-insensitively at every step (about ten lookups per
  // request). The first of repeated fields wins, as with find().
  for (const auto& field : req) {
    const auto n = field.name_string();
    if (n.size() == name.size() && boost::beast::iequals({n.data(), n.size()}, name))
      return {field.value().data(), field.value().size()};
  }
  return {};
}

void Router::add(std::optional<http::verb> method, std::string path, Handler handler, bool prefix) {
  entries_.push_back(Entry{method, std::move(path), prefix, std::move(handler)});
}

namespace {

boost::asio::awaitable<void> method_not_allowed(transport::Exchange& ex, std::string path,
                                                std::string allow) {
  const transport::Headers headers{{"Allow", allow}};
  const std::string body =
      json::make_error({}, json::kInvalidRequest, "Method not allowed on " + path);
  co_await ex.reply(http::status::method_not_allowed, "application/json", body, headers);
}

boost::asio::awaitable<void> nothing() {
  co_return;
}

}  // namespace

boost::asio::awaitable<void> Router::route(transport::Exchange& ex) const {
  // Not a coroutine: the handler's own awaitable is returned, so routing adds no frame per call.
  const auto& req = ex.request();
  const std::string_view target(req.target().data(), req.target().size());
  const std::string_view path = target.substr(0, target.find('?'));
  std::string allow;
  for (const auto& e : entries_) {
    if (!e.matches(path)) continue;
    if (!e.method || *e.method == req.method()) return e.handler(ex, path);
    if (!allow.empty()) allow += ", ";
    allow += std::string(http::to_string(*e.method));
  }
  if (!allow.empty()) return method_not_allowed(ex, std::string(path), std::move(allow));
  if (fallback_) return fallback_(ex, path);
  return nothing();
}

}  // namespace toolbridge::frontend
