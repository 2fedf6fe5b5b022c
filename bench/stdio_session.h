#pragma once
// A direct stdio MCP session to a server process, as an efficient client would hold one: many
// requests in flight on the one pipe, writes coalesced, every response matched by id. This is
// the baseline the gateway is compared with.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "process/child.h"
#include "transport/line_framer.h"

namespace toolbridge::bench {

class StdioSession {
 public:
  StdioSession(boost::asio::io_context& io, std::chrono::milliseconds timeout);
  StdioSession(const StdioSession&) = delete;
  StdioSession& operator=(const StdioSession&) = delete;
  ~StdioSession();

  // Spawns the server and starts reading its stdout and stderr. Error text or empty.
  std::string spawn(const std::vector<std::string>& argv);
  pid_t pid() const { return child_.pid(); }

  // initialize + notifications/initialized. Error text or empty.
  boost::asio::awaitable<std::string> open();
  boost::asio::awaitable<std::string> call_tool(std::string_view name, std::string_view arguments_json,
                                                std::size_t min_result_bytes);
  // Closes stdin, waits up to `grace` for the exit, then kills the group; always reaps.
  // Returns how the process ended.
  boost::asio::awaitable<std::string> shutdown(std::chrono::milliseconds grace);

 private:
  struct Pending {
    explicit Pending(boost::asio::any_io_executor ex) : timer(std::move(ex)) {}
    boost::asio::steady_timer timer;
    std::string response;
    std::string error;
    bool done = false;
  };

  boost::asio::awaitable<std::string> request(std::string_view method, std::string_view params,
                                              std::string& response);
  void send(std::string line);
  boost::asio::awaitable<void> write_loop();
  boost::asio::awaitable<void> read_loop();
  boost::asio::awaitable<void> drain_stderr();
  void on_line(std::string_view line);
  void fail_all(const std::string& why);

  boost::asio::io_context& io_;
  std::chrono::milliseconds timeout_;
  process::Child child_;
  boost::asio::posix::stream_descriptor in_;
  boost::asio::posix::stream_descriptor out_;
  boost::asio::posix::stream_descriptor err_;
  transport::LineFramer framer_{256u << 20};
  std::string queued_;   // lines waiting for the writer
  bool writing_ = false;
  std::string failed_;   // set once the pipe broke or the server exited
  std::uint64_t next_id_ = 1;
  std::unordered_map<std::uint64_t, Pending*> pending_;
  std::vector<std::string> stderr_tail_;
};

}  // namespace toolbridge::bench
