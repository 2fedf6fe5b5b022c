#include "otlp_sink.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <cctype>
#include <cstdlib>

namespace toolbridge::bench {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

OtlpSink::OtlpSink() : acceptor_(io_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
  asio::co_spawn(io_, accept_loop(), asio::detached);
  thread_ = std::thread([this] { io_.run(); });
}

OtlpSink::~OtlpSink() {
  asio::post(io_, [this] {
    boost::system::error_code ec;
    acceptor_.close(ec);
  });
  io_.stop();
  thread_.join();
}

std::string OtlpSink::endpoint() const {
  return "http://127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port()) + "/v1/traces";
}

asio::awaitable<void> OtlpSink::accept_loop() {
  for (;;) {
    boost::system::error_code ec;
    tcp::socket s = co_await acceptor_.async_accept(asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return;
    asio::co_spawn(io_, serve(std::move(s)), asio::detached);
  }
}

asio::awaitable<void> OtlpSink::serve(tcp::socket socket) {
  static const std::string kAnswer =
      "HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\n\r\n";
  std::string buffer;
  for (;;) {
    boost::system::error_code ec;
    const std::size_t head =
        co_await asio::async_read_until(socket, asio::dynamic_buffer(buffer), "\r\n\r\n",
                                        asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return;
    std::string lower = buffer.substr(0, head);
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::size_t length = 0;
    if (auto at = lower.find("\r\ncontent-length:"); at != std::string::npos)
      length = std::strtoul(lower.c_str() + at + 17, nullptr, 10);
    if (buffer.size() < head + length) {
      const std::size_t missing = head + length - buffer.size();
      const std::size_t had = buffer.size();
      buffer.resize(head + length);
      co_await asio::async_read(socket, asio::buffer(buffer.data() + had, missing),
                                asio::redirect_error(asio::use_awaitable, ec));
      if (ec) co_return;
    }
    buffer.erase(0, head + length);
    ++requests_;
    bytes_ += length;
    co_await asio::async_write(socket, asio::buffer(kAnswer),
                               asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return;
  }
}

}  // namespace toolbridge::bench
