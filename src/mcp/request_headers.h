#pragma once
// An HTTP request's headers as the revision rules read them (mcp::HeaderView): a value comes
// trimmed of spaces and tabs. Shared by the gateway's stateless front end and the fixture's host.
#include <boost/beast/core/string.hpp>
#include <optional>
#include <string_view>

#include "mcp/revision.h"
#include "transport/http_server.h"

namespace toolbridge::mcp {

inline HeaderView headers_of(const transport::Request& req) {
  const auto trim = [](std::string_view v) {
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
    while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
    return v;
  };
  return {[&req, trim](std::string_view name) -> std::optional<std::string_view> {
            auto it = req.find(boost::beast::string_view(name.data(), name.size()));
            if (it == req.end()) return std::nullopt;
            return trim(std::string_view(it->value().data(), it->value().size()));
          },
          [&req](std::string_view name) {
            return req.count(boost::beast::string_view(name.data(), name.size()));
          }};
}

}  // namespace toolbridge::mcp
