#pragma once
// A stand-in OpenTelemetry collector for `overhead --otel`: an HTTP/1.1 server on 127.0.0.1 port
// 0, on a thread of its own, that reads each OTLP/HTTP export request whole and answers 200 at
// once, counting requests and bytes. It does what a collector on the same host costs the gateway
// (a request per batch on a keep-alive connection) without a collector's own CPU in the figures.
#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <string>
#include <thread>

namespace toolbridge::bench {

class OtlpSink {
 public:
  OtlpSink();
  ~OtlpSink();
  OtlpSink(const OtlpSink&) = delete;
  OtlpSink& operator=(const OtlpSink&) = delete;

  std::string endpoint() const;  // http://127.0.0.1:PORT/v1/traces
  std::uint64_t requests() const { return requests_; }
  std::uint64_t bytes() const { return bytes_; }

 private:
  boost::asio::awaitable<void> accept_loop();
  boost::asio::awaitable<void> serve(boost::asio::ip::tcp::socket socket);

  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::atomic<std::uint64_t> requests_{0}, bytes_{0};
  std::thread thread_;
};

}  // namespace toolbridge::bench
