#pragma once
// A small router from (method, path) to a front end's handler. A path that matches with another
// method gets 405 with the Allow header; no match goes to the fallback (404).
#include <boost/asio/awaitable.hpp>
#include <boost/beast/http/verb.hpp>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "transport/http_server.h"

namespace toolbridge::frontend {

// `path` is the target without its query.
using Handler =
    std::function<boost::asio::awaitable<void>(transport::Exchange&, std::string_view path)>;

class Router {
 public:
  // `method` nullopt: any method (the handler answers 405 itself). `prefix`: `path` is a prefix.
  void add(std::optional<boost::beast::http::verb> method, std::string path, Handler handler,
           bool prefix = false);
  void fallback(Handler handler) { fallback_ = std::move(handler); }

  boost::asio::awaitable<void> route(transport::Exchange& ex) const;

 private:
  struct Entry {
    std::optional<boost::beast::http::verb> method;
    std::string path;
    bool prefix;
    Handler handler;
    bool matches(std::string_view p) const {
      return prefix ? p.starts_with(path) && p.size() > path.size() : p == path;
    }
  };
  std::vector<Entry> entries_;
  Handler fallback_;
};

// The value of a request header, empty if absent.
std::string_view header(const transport::Request& req, std::string_view name);

}  // namespace toolbridge::frontend
