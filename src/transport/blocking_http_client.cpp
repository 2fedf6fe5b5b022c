#include "transport/blocking_http_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>

namespace toolbridge::transport {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;

std::string BlockingResponse::header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (beast::iequals(k, name)) return v;
  }
  return {};
}

struct BlockingHttpClient::Impl {
  asio::io_context io;
  beast::tcp_stream stream{io};
  bool connected = false;
};

BlockingHttpClient::BlockingHttpClient(Url url) : url_(std::move(url)), impl_(new Impl) {}
BlockingHttpClient::~BlockingHttpClient() {
  delete impl_;
}

bool BlockingHttpClient::request(http::verb verb, const std::string& body, const Headers& headers,
                                 BlockingResponse& out, std::string& error) {
  boost::system::error_code ec;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (!impl_->connected) {
      tcp::resolver resolver(impl_->io);
      auto results = resolver.resolve(url_.host, url_.port, ec);
      if (!ec) impl_->stream.connect(results, ec);
      if (ec) {
        error = "cannot connect to " + url_.host + ":" + url_.port + ": " + ec.message() +
                " (is `toolbridge serve` running?)";
        return false;
      }
      impl_->stream.socket().set_option(tcp::no_delay(true));
      impl_->connected = true;
    }
    http::request<http::string_body> req{verb, url_.target, 11};
    req.set(http::field::host, host_header(url_));
    req.set(http::field::user_agent, "toolbridge-cli");
    for (const auto& [k, v] : headers) req.set(k, v);
    if (!body.empty()) {
      req.set(http::field::content_type, "application/json");
      req.body() = body;
    }
    req.prepare_payload();
    http::write(impl_->stream, req, ec);
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(std::numeric_limits<std::uint64_t>::max());
    if (!ec) http::read(impl_->stream, buffer, parser, ec);
    if (ec) {
      impl_->stream.socket().close(ec);
      impl_->connected = false;
      if (attempt == 0) continue;  // a keep-alive connection the server had closed
      error = "HTTP exchange failed: " + ec.message();
      return false;
    }
    auto res = parser.release();
    out = BlockingResponse{};
    out.status = static_cast<int>(res.result_int());
    for (const auto& f : res)
      out.headers.emplace_back(std::string(f.name_string()), std::string(f.value()));
    out.content_type = out.header("Content-Type");
    if (out.content_type.find("text/event-stream") != std::string::npos) {
      // Collect `data:` lines per event (events end with a blank line).
      std::string data;
      std::size_t pos = 0;
      const std::string& b = res.body();
      while (pos <= b.size()) {
        std::size_t nl = b.find('\n', pos);
        if (nl == std::string::npos) nl = b.size();
        std::string_view line(b.data() + pos, nl - pos);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line.empty()) {
          if (!data.empty()) out.events.push_back(std::move(data));
          data.clear();
        } else if (line.starts_with("data:")) {
          line.remove_prefix(5);
          if (!line.empty() && line.front() == ' ') line.remove_prefix(1);
          if (!data.empty()) data += '\n';
          data += line;
        }
        pos = nl + 1;
      }
      if (!data.empty()) out.events.push_back(std::move(data));
    } else {
      out.body = std::move(res.body());
    }
    if (!res.keep_alive()) {
      impl_->stream.socket().close(ec);
      impl_->connected = false;
    }
    return true;
  }
  return false;
}

}  // namespace toolbridge::transport
