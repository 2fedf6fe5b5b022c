#pragma once
// A Redis connection for an Asio io_context: hiredis's async API (redisAsyncContext) driven by
// an adapter that watches the socket with asio::posix::stream_descriptor. Every command has a
// timeout: an answer that does not come in time is no answer (nullopt), and the connection is
// dropped and made again later. While Redis is down, commands fail at once (no connection is
// attempted more than once per retry interval), so a dead Redis costs a caller nothing but the
// miss.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"

struct redisAsyncContext;

namespace toolbridge::redis {

struct RedisReply {
  enum class Type { kString, kNil, kInteger, kStatus, kError, kOther };
  Type type = Type::kOther;
  std::string text;  // string, status or error
  long long integer = 0;
};

class RedisClient {
 public:
  RedisClient(boost::asio::io_context& io, const base::Clock& clock, std::string host,
              unsigned short port, std::chrono::milliseconds timeout);
  ~RedisClient();
  RedisClient(const RedisClient&) = delete;
  RedisClient& operator=(const RedisClient&) = delete;

  // A client of the Redis at `address`, "HOST:PORT" as the config reader checked it.
  static std::shared_ptr<RedisClient> at(boost::asio::io_context& io, const base::Clock& clock,
                                         std::string_view address,
                                         std::chrono::milliseconds timeout);

  // The reply, or nullopt if Redis could not answer within the timeout (down, slow, refused).
  boost::asio::awaitable<std::optional<RedisReply>> command(std::vector<std::string> argv);
  // Sends without waiting for the answer (writes); false if it could not even be sent.
  bool send(const std::vector<std::string>& argv);

  bool connected() const { return connected_; }
  std::uint64_t failures() const { return failures_; }

 private:
  struct Pending;
  class Adapter;
  bool ensure_connection();
  void drop(const char* why);
  bool issue(const std::vector<std::string>& argv, const std::shared_ptr<Pending>& pending);
  static void on_connect(const redisAsyncContext* ac, int status);
  static void on_disconnect(const redisAsyncContext* ac, int status);
  static void on_reply(redisAsyncContext* ac, void* reply, void* privdata);

  boost::asio::io_context& io_;
  const base::Clock& clock_;
  std::string host_;
  unsigned short port_;
  std::chrono::milliseconds timeout_;
  redisAsyncContext* ac_ = nullptr;
  bool connected_ = false;
  base::Clock::time_point next_attempt_{};
  std::size_t outstanding_ = 0;  // commands sent, not answered
  std::uint64_t failures_ = 0;
};

}  // namespace toolbridge::redis
