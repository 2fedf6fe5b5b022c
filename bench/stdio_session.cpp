#include "stdio_session.h"

#include <signal.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <charconv>

#include "json/envelope.h"
#include "mcp_http.h"

namespace toolbridge::bench {

namespace asio = boost::asio;

StdioSession::StdioSession(asio::io_context& io, std::chrono::milliseconds timeout)
    : io_(io), timeout_(timeout), in_(io), out_(io), err_(io) {}

StdioSession::~StdioSession() {
  boost::system::error_code ec;
  in_.close(ec);
  out_.close(ec);
  err_.close(ec);
  // process::Child's destructor kills the group and reaps if shutdown() did not.
}

std::string StdioSession::spawn(const std::vector<std::string>& argv) {
  process::Spec spec;
  spec.argv = argv;
  spec.env = process::build_env({}, {});
  base::Expected<process::Child> spawned = process::Child::spawn(spec);
  if (!spawned) return spawned.error();
  child_ = std::move(*spawned);
  in_.assign(child_.release_stdin());
  out_.assign(child_.release_stdout());
  err_.assign(child_.release_stderr());
  asio::co_spawn(io_, read_loop(), asio::detached);
  asio::co_spawn(io_, drain_stderr(), asio::detached);
  return {};
}

void StdioSession::send(std::string line) {
  queued_ += line;
  queued_ += '\n';
  if (!writing_) {
    writing_ = true;
    asio::co_spawn(io_, write_loop(), asio::detached);
  }
}

asio::awaitable<void> StdioSession::write_loop() {
  // Everything queued while the previous write was in progress goes out in one write.
  std::string sending;
  while (!queued_.empty() && in_.is_open()) {
    sending.clear();
    sending.swap(queued_);
    boost::system::error_code ec;
    co_await asio::async_write(in_, asio::buffer(sending), asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
      fail_all("writing to the server's stdin: " + ec.message());
      break;
    }
  }
  writing_ = false;
}

asio::awaitable<void> StdioSession::read_loop() {
  std::vector<char> buf(256 * 1024);
  for (;;) {
    boost::system::error_code ec;
    const std::size_t n =
        co_await out_.async_read_some(asio::buffer(buf), asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
      fail_all(ec == asio::error::eof ? "the server closed its stdout" : "reading the server's stdout: " + ec.message());
      co_return;
    }
    const bool ok = framer_.feed(std::string_view(buf.data(), n), [this](std::string_view line) { on_line(line); });
    if (!ok) {
      fail_all("a line from the server exceeded the framing cap");
      co_return;
    }
  }
}

asio::awaitable<void> StdioSession::drain_stderr() {
  std::vector<char> buf(16 * 1024);
  for (;;) {
    boost::system::error_code ec;
    const std::size_t n =
        co_await err_.async_read_some(asio::buffer(buf), asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return;
    if (stderr_tail_.size() < 20) stderr_tail_.emplace_back(buf.data(), n);
  }
}

void StdioSession::on_line(std::string_view line) {
  const json::Envelope env = json::parse_envelope(line);
  if (env.kind != json::Kind::kResponse) return;  // notifications and server requests: not used here
  const std::string_view id = env.id.in(line);
  std::uint64_t number = 0;
  if (std::from_chars(id.data(), id.data() + id.size(), number).ec != std::errc()) return;
  auto it = pending_.find(number);
  if (it == pending_.end()) return;
  it->second->response.assign(line);
  it->second->done = true;
  it->second->timer.cancel();
}

void StdioSession::fail_all(const std::string& why) {
  if (failed_.empty()) failed_ = why;
  for (auto& [id, p] : pending_) {
    p->error = why;
    p->done = true;
    p->timer.cancel();
  }
}

asio::awaitable<std::string> StdioSession::request(std::string_view method, std::string_view params,
                                                   std::string& response) {
  if (!failed_.empty()) co_return failed_;
  const std::uint64_t id = next_id_++;
  Pending p(io_.get_executor());
  p.timer.expires_after(timeout_);
  pending_[id] = &p;
  send(json::make_request(std::to_string(id), method, params));
  // The response cannot arrive before this wait starts: the reader runs on this same thread.
  while (!p.done) {
    boost::system::error_code ec;
    co_await p.timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (!ec) break;  // expired
  }
  pending_.erase(id);
  if (!p.done) co_return "no response within " + std::to_string(timeout_.count()) + " ms";
  if (!p.error.empty()) co_return p.error;
  response = std::move(p.response);
  co_return std::string();
}

asio::awaitable<std::string> StdioSession::open() {
  std::string response;
  std::string err = co_await request(
      "initialize",
      R"({"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"toolbridge-bench","version":"0.1.0"}})",
      response);
  if (!err.empty()) co_return "initialize: " + err;
  const json::Envelope env = json::parse_envelope(response);
  if (env.result.empty()) co_return "initialize failed: " + response.substr(0, 300);
  send(json::make_notification("notifications/initialized", {}));
  co_return std::string();
}

asio::awaitable<std::string> StdioSession::call_tool(std::string_view name, std::string_view arguments_json,
                                                     std::size_t min_result_bytes) {
  std::string params = "{\"name\":" + json::quote(name) + ",\"arguments\":";
  params += arguments_json;
  params += '}';
  std::string response;
  std::string err = co_await request("tools/call", params, response);
  if (!err.empty()) co_return err;
  const json::Envelope env = json::parse_envelope(response);
  co_return check_tool_response(response, env.id.in(response), min_result_bytes);
}

asio::awaitable<std::string> StdioSession::shutdown(std::chrono::milliseconds grace) {
  if (child_.pid() <= 0) co_return std::string("not running");
  boost::system::error_code ec;
  in_.close(ec);  // EOF on stdin: a well-behaved stdio server exits
  asio::posix::stream_descriptor exited(io_, child_.release_pidfd());
  asio::steady_timer kill_timer(io_);
  kill_timer.expires_after(grace);
  bool killed = false;
  kill_timer.async_wait([this, &killed](boost::system::error_code e) {
    if (e) return;
    killed = true;
    child_.signal_group(SIGKILL);
  });
  co_await exited.async_wait(asio::posix::stream_descriptor::wait_read, asio::redirect_error(asio::use_awaitable, ec));
  kill_timer.cancel();
  // The timer's handler runs (aborted) before this frame goes away only if we yield once more.
  asio::steady_timer yield(io_);
  yield.expires_after(std::chrono::milliseconds(0));
  co_await yield.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  child_.try_reap();
  std::string how = child_.reaped() ? process::describe_status(child_.wait_status()) : "not reaped";
  if (killed) how = "did not exit within " + std::to_string(grace.count()) + " ms of stdin closing; killed";
  co_return how;
}

}  // namespace toolbridge::bench
