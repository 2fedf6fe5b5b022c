#include "otel/exporter.h"

#include <spdlog/spdlog.h>

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
}  // namespace

Exporter::Exporter(config::Otel options, Resource resource, const base::Clock& clock)
    : options_(std::move(options)), resource_(std::move(resource)), clock_(clock) {}

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

bool Exporter::submit(std::vector<Span>& spans) {
  bool wake = false, all = true;
  {
    std::lock_guard lock(mutex_);
    for (Span& s : spans) {
      if (queue_.size() >= options_.queue_size || stopping_) {
        ++stats_.dropped_queue;
        all = false;
        continue;
      }
      queue_.push_back(std::move(s));
      ++queued_total_;
    }
    if (queue_.size() >= options_.batch_size && !wake_posted_ && thread_.joinable()) {
      wake = wake_posted_ = true;
    }
  }
  spans.clear();
  if (wake) asio::post(io_, [this] { timer_->cancel(); });
  return all;
}

void Exporter::flush() {
  std::unique_lock lock(mutex_);
  if (!thread_.joinable()) return;
  const std::uint64_t target = queued_total_;
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

std::vector<Span> Exporter::take_batch() {
  std::lock_guard lock(mutex_);
  wake_posted_ = false;
  const std::size_t n = std::min(queue_.size(), options_.batch_size);
  std::vector<Span> batch(std::make_move_iterator(queue_.begin()),
                          std::make_move_iterator(queue_.begin() + static_cast<std::ptrdiff_t>(n)));
  queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(n));
  return batch;
}

bool Exporter::drop_all_if_stopping_and_failing() {
  // At shutdown a collector that is down would hold the gateway `timeout` per batch.
  {
    std::lock_guard lock(mutex_);
    if (!stopping_ || !failing_) return false;
    stats_.dropped_export += queue_.size();
    settled_total_ += queue_.size();
    queue_.clear();
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
    for (;;) {
      std::vector<Span> batch = take_batch();
      if (batch.empty()) break;
      co_await export_batch(batch);
      if (drop_all_if_stopping_and_failing()) break;
    }
    std::lock_guard lock(mutex_);
    if (stopping_) break;
  }
  client_ = nullptr;
  client.close();
}

asio::awaitable<void> Exporter::export_batch(std::vector<Span>& batch) {
  const bool json = options_.protocol == config::Otel::Protocol::kJson;
  transport::HttpRequest request;
  request.verb = transport::http::verb::post;
  std::string error;
  if (auto url = transport::parse_url(options_.endpoint, error)) request.url = std::move(*url);
  request.headers = options_.headers;
  request.headers.emplace_back("Content-Type",
                               json ? "application/json" : "application/x-protobuf");
  request.body = json ? encode_json(resource_, batch) : encode_protobuf(resource_, batch);
  request.write_timeout = request.header_timeout = request.body_timeout = options_.timeout;
  if (error.empty()) {
    const transport::HttpResponse answer = co_await client_->fetch(request, kMaxAnswerBytes);
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
      stats_.exported += batch.size();
      recovered = failing_;
      failing_ = false;
    } else {
      ++stats_.failed_requests;
      stats_.dropped_export += batch.size();
      failing = !failing_;
      failing_ = true;
      last_error_ = error;
    }
    settled_total_ += batch.size();
  }
  drained_.notify_all();
  // Logged when export starts or stops failing, not once per batch.
  if (failing)
    spdlog::warn("otel: span export failed, spans are dropped until it works: {}", error);
  if (recovered) spdlog::info("otel: span export works again");
}

}  // namespace toolbridge::otel
