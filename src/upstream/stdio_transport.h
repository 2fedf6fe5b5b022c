#pragma once
// A server run as a child process: one JSON-RPC message per line on its stdin and stdout, its
// stderr drained into the log, its exit watched through a pidfd, and a bounded stop ladder
// (close stdin -> SIGTERM -> SIGKILL to its group).
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <deque>
#include <memory>
#include <vector>

#include "base/clock.h"
#include "config/config.h"
#include "process/child.h"
#include "transport/line_framer.h"
#include "upstream/noise_log.h"
#include "upstream/transport.h"

namespace toolbridge::upstream {

class StdioTransport : public Transport, public std::enable_shared_from_this<StdioTransport> {
 public:
  StdioTransport(boost::asio::io_context& io, const base::Clock& clock,
                 const config::Server& server, std::uint64_t number, Handlers handlers);
  ~StdioTransport() override;

  base::Status open() override;
  void send(std::string message, std::uint64_t call_id) override;
  base::Status congestion() const override;
  boost::asio::awaitable<void> stop() override;
  void abort() override;
  pid_t pid() const override { return child_.pid(); }

 private:
  boost::asio::awaitable<void> write_loop();
  boost::asio::awaitable<void> read_stdout();
  boost::asio::awaitable<void> read_stderr();
  boost::asio::awaitable<void> watch_exit();
  void fail(const std::string& reason);

  boost::asio::io_context& io_;
  const base::Clock& clock_;
  const config::Server server_;  // a copy: coroutines may outlive the Instance
  const std::uint64_t number_;
  Handlers handlers_;
  process::Child child_;
  boost::asio::posix::stream_descriptor stdin_;
  boost::asio::posix::stream_descriptor stdout_;
  boost::asio::posix::stream_descriptor stderr_;
  boost::asio::posix::stream_descriptor pidfd_;
  transport::LineFramer framer_;
  std::deque<std::string> write_queue_;
  std::vector<std::uint64_t> queued_calls_;
  std::size_t queued_bytes_ = 0;  // to the child's stdin, not written yet
  bool writing_ = false;
  bool stopping_ = false;  // stop() or abort() began: handlers are not called any more
  std::deque<std::string> stderr_tail_;
  base::Timer exited_;                // cancelled once the child is reaped
  NoiseLog stderr_log_;               // the server's stderr lines
  NoiseLog dropped_log_;              // writes dropped because the server does not read
};

}  // namespace toolbridge::upstream
