#include "otel/exporter.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "otel/ids.h"
#include "otel/otlp.h"
#include "transport/http_client.h"

namespace toolbridge::otel {

namespace asio = boost::asio;

namespace {
// A collector's answer is read only to free the connection; its size is bounded.
constexpr std::size_t kMaxAnswerBytes = 64 * 1024;

// kBatchesPerWake full batches, or as many as half the queue holds (at least one).
std::size_t wake_at(const config::Otel& o) {
  const std::size_t batch = std::max<std::size_t>(o.batch_size, 1);
  const std::size_t batches =
      std::clamp<std::size_t>(o.queue_size / (2 * batch), 1, Exporter::kBatchesPerWake);
  return batch * batches;
}
}  // namespace

Exporter::Exporter(config::Otel options, Resource resource, const base::Clock& clock)
    : options_(std::move(options)),
      resource_(std::move(resource)),
      clock_(clock),
      wake_at_(wake_at(options_)) {}

Exporter::~Exporter() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  asio::post(io_, [this] { timer_->cancel(); });
  thread_.join();
}

void Exporter::start() {
  if (thread_.joinable()) return;
  timer_ = std::make_unique<base::Timer>(io_, clock_);
  asio::co_spawn(io_, run(), [](std::exception_ptr e) {
    if (!e) return;
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& ex) {
      spdlog::error("otel: the span exporter stopped: {}", ex.what());
    }
  });
  thread_ = std::thread([this] { io_.run(); });
}

bool Exporter::sampled(const TraceId& id) const {
  return sampled_at(id, options_.sample_ratio);
}

Encoding Exporter::encoding() const {
  return options_.protocol == config::Otel::Protocol::kJson ? Encoding::kJson : Encoding::kProtobuf;
}

bool Exporter::submit(std::vector<Span>& spans) {
  // Encoded into a buffer of this thread's that keeps its capacity.
  thread_local std::string encoded;
  encoded.clear();
  SpanWriter w(encoded, encoding());
  for (const Span& s : spans) write_span(w, s);
  spans.clear();
  return submit(encoded, w.ends());
}

bool Exporter::submit(std::string_view encoded, std::span<const std::size_t> ends) {
  bool wake = false, all = true;
  {
    std::lock_guard lock(mutex_);
    const std::size_t base = pending_.size();
    if (!stopping_ && pending_ends_.size() + ends.size() <= options_.queue_size) {
      pending_ += encoded;  // all of them fit: one append
      for (std::size_t end : ends) pending_ends_.push_back(base + end);
      queued_total_ += ends.size();
    } else {
      std::size_t begin = 0;
      for (std::size_t end : ends) {
        if (pending_ends_.size() >= options_.queue_size || stopping_) {
          ++stats_.dropped_queue;
          all = false;
        } else {
          pending_.append(encoded.substr(begin, end - begin));
          pending_ends_.push_back(pending_.size());
          ++queued_total_;
        }
        begin = end;
      }
    }
    if (pending_ends_.size() >= wake_at_ && !wake_posted_ && thread_.joinable()) {
      wake = wake_posted_ = true;
    }
  }
  if (wake) asio::post(io_, [this] { timer_->cancel(); });
  return all;
}

void Exporter::flush() {
  std::unique_lock lock(mutex_);
  if (!thread_.joinable()) return;
  const std::uint64_t target = queued_total_;
  take_whole_ = true;
  asio::post(io_, [this] { timer_->cancel(); });
  drained_.wait(lock, [&] { return settled_total_ >= target; });
}

Exporter::Stats Exporter::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

std::string Exporter::last_error() const {
  std::lock_guard lock(mutex_);
  return last_error_;
}

void Exporter::take_queue(bool whole) {
  taken_.clear();
  taken_ends_.clear();
  std::lock_guard lock(mutex_);
  wake_posted_ = false;
  whole = whole || take_whole_ || stopping_;
  take_whole_ = false;
  const std::size_t n = pending_ends_.size();
  const std::size_t take = whole ? n : n / options_.batch_size * options_.batch_size;
  if (take == n) {
    pending_.swap(taken_);
    pending_ends_.swap(taken_ends_);
    return;
  }
  if (take == 0) return;
  // The full batches go; the rest waits, moved to the front of the queue.
  const std::size_t bytes = pending_ends_[take - 1];
  taken_.append(pending_, 0, bytes);
  pending_.erase(0, bytes);
  taken_ends_.assign(pending_ends_.begin(),
                     pending_ends_.begin() + static_cast<std::ptrdiff_t>(take));
  pending_ends_.erase(pending_ends_.begin(),
                      pending_ends_.begin() + static_cast<std::ptrdiff_t>(take));
  for (std::size_t& end : pending_ends_) end -= bytes;
}

bool Exporter::drop_all_if_stopping_and_failing(std::size_t taken_left) {
  // At shutdown a collector that is down would hold the gateway `timeout` per batch.
  {
    std::lock_guard lock(mutex_);
    if (!stopping_ || !failing_) return false;
    const std::size_t n = taken_left + pending_ends_.size();
    stats_.dropped_export += n;
    settled_total_ += n;
    pending_.clear();
    pending_ends_.clear();
  }
  drained_.notify_all();
  return true;
}

asio::awaitable<void> Exporter::run() {
  transport::HttpClientOptions client_options;
  client_options.connect_timeout = options_.timeout;
  client_options.handshake_timeout = options_.timeout;
  client_options.max_connections = 1;
  client_options.max_idle = 1;
  client_options.user_agent = "toolbridge-otlp";
  transport::HttpClient client(co_await asio::this_coro::executor, client_options);
  client_ = &client;
  for (;;) {
    timer_->expires_after(kScheduleDelay);
    boost::system::error_code ec;
    co_await timer_->async_wait(asio::redirect_error(asio::use_awaitable, ec));
    // The schedule delay passed: whatever waits goes. Woken early: full batches only.
    bool whole = !ec;
    for (;; whole = false) {
      take_queue(whole);
      if (taken_ends_.empty()) break;
      bool dropped = false;
      for (std::size_t from = 0; from < taken_ends_.size() && !dropped;
           from += options_.batch_size) {
        const std::size_t to = std::min(taken_ends_.size(), from + options_.batch_size);
        co_await export_batch(from, to);
        dropped = drop_all_if_stopping_and_failing(taken_ends_.size() - to);
      }
      if (dropped) break;
    }
    std::lock_guard lock(mutex_);
    if (stopping_) break;
  }
  client_ = nullptr;
  client.close();
}

asio::awaitable<void> Exporter::export_batch(std::size_t from, std::size_t to) {
  const bool json = options_.protocol == config::Otel::Protocol::kJson;
  transport::HttpRequest request;
  request.verb = transport::http::verb::post;
  std::string error;
  if (auto url = transport::parse_url(options_.endpoint))
    request.url = std::move(*url);
  else
    error = url.error();
  request.headers = options_.headers;
  request.headers.emplace_back("Content-Type",
                               json ? "application/json" : "application/x-protobuf");
  const std::size_t begin = from == 0 ? 0 : taken_ends_[from - 1];
  std::string_view spans(taken_.data() + begin, taken_ends_[to - 1] - begin);
  if (json) spans.remove_suffix(1);  // the ',' after the last span
  std::string body;  // moved into the request: the HTTP client sends it without a copy
  if (json) {
    wrap_json(resource_, spans, body);
  } else {
    wrap_protobuf(resource_, spans, body);
  }
  request.body = std::move(body);
  request.write_timeout = request.header_timeout = request.body_timeout = options_.timeout;
  if (error.empty()) {
    const transport::HttpResponse answer =
        co_await client_->fetch(std::move(request), kMaxAnswerBytes);
    if (answer.error) {
      error = answer.error.message;
    } else if (answer.status < 200 || answer.status > 299) {
      error = fmt::format("the collector at {} answered {} {}: {}", options_.endpoint,
                          answer.status, answer.reason, answer.body.substr(0, 200));
    }
  }
  bool recovered = false, failing = false;
  {
    std::lock_guard lock(mutex_);
    ++stats_.requests;
    if (error.empty()) {
      stats_.exported += to - from;
      recovered = failing_;
      failing_ = false;
    } else {
      ++stats_.failed_requests;
      stats_.dropped_export += to - from;
      failing = !failing_;
      failing_ = true;
      last_error_ = error;
    }
    settled_total_ += to - from;
  }
  drained_.notify_all();
  // Logged when export starts or stops failing, not once per batch.
  if (failing)
    spdlog::warn("otel: span export failed, spans are dropped until it works: {}", error);
  if (recovered) spdlog::info("otel: span export works again");
}

}  // namespace toolbridge::otel
