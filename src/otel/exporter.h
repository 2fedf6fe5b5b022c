#pragma once
// The OTLP/HTTP span exporter. The call path writes its finished spans in the exporter's encoding
// (SpanWriter, protobuf or JSON as configured) and hands the bytes to submit(), which appends
// them to a bounded queue under a lock (full: the spans are dropped and counted, never waited
// for). Encoded at once, a span leaves nothing behind to be freed by another thread, and the
// queue is one buffer reused batch after batch. A thread of its own runs the export: every
// second it takes the whole queue; as soon as kBatchesPerWake full batches wait, it takes those
// (so each request carries a full `batch_size`); it wraps them into requests and POSTs them to the
// collector with the project's HTTP client, within `timeout`. A collector that is down or slow
// costs only the drops.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "config/config.h"
#include "otel/span.h"
#include "otel/span_writer.h"

namespace toolbridge::transport {
class HttpClient;
}

namespace toolbridge::otel {

class Exporter {
 public:
  struct Stats {
    std::uint64_t exported = 0;        // spans the collector accepted
    std::uint64_t dropped_queue = 0;   // spans dropped: the queue was full
    std::uint64_t dropped_export = 0;  // spans dropped: their export request failed
    std::uint64_t requests = 0;        // export requests sent
    std::uint64_t failed_requests = 0;
  };
  // The longest wait of a span before its batch goes out.
  static constexpr std::chrono::milliseconds kScheduleDelay{1000};
  // Full batches that wake the export thread before kScheduleDelay (fewer when `queue_size` holds
  // fewer than twice as many): one wake sends several requests.
  static constexpr std::size_t kBatchesPerWake = 4;

  // Starts nothing: start() starts the export thread (after the gateway has forked what it forks).
  Exporter(config::Otel options, Resource resource,
           const base::Clock& clock = base::steady_clock());
  ~Exporter();  // exports what is queued (each request within `timeout`), then stops
  Exporter(const Exporter&) = delete;
  Exporter& operator=(const Exporter&) = delete;

  void start();
  const config::Otel& options() const { return options_; }
  // Whether a trace is exported (sample_ratio, decided by its id).
  bool sampled(const TraceId& id) const;

  Encoding encoding() const;
  // Queues the spans a SpanWriter of encoding() wrote into `encoded` (`ends`: where each ends).
  // Thread-safe. False if some were dropped.
  bool submit(std::string_view encoded, std::span<const std::size_t> ends);
  // Queues span objects (moved from; `spans` is left empty), encoded first.
  bool submit(std::vector<Span>& spans);
  // Blocks until every span queued before the call was exported or dropped (tests, shutdown).
  void flush();

  Stats stats() const;
  std::string last_error() const;  // the last failed export, empty if none yet

 private:
  boost::asio::awaitable<void> run();
  // Sends the spans of taken_ from span `from` to `to` (indexes into taken_ends_).
  boost::asio::awaitable<void> export_batch(std::size_t from, std::size_t to);
  // Moves the queue into taken_ (export thread): all of it, or its full batches only.
  void take_queue(bool whole);
  // At shutdown with export failing: drops `taken_left` spans not yet sent and the queue.
  bool drop_all_if_stopping_and_failing(std::size_t taken_left);

  const config::Otel options_;
  const Resource resource_;
  const base::Clock& clock_;
  const std::size_t wake_at_;  // spans queued that wake the export thread: full batches
  boost::asio::io_context io_;
  mutable std::mutex mutex_;
  std::condition_variable drained_;
  // The queue: encoded spans back to back (a JSON span is followed by ','), and where each ends.
  std::string pending_;
  std::vector<std::size_t> pending_ends_;
  std::uint64_t queued_total_ = 0;   // spans ever queued
  std::uint64_t settled_total_ = 0;  // of those, exported or dropped after queueing
  bool wake_posted_ = false;
  bool take_whole_ = false;  // the next take is of the whole queue (flush, stop)
  bool stopping_ = false;
  Stats stats_;
  std::string last_error_;
  bool failing_ = false;  // the last export failed (for logging the change only)
  std::string taken_;     // export thread only: the queue taken
  std::vector<std::size_t> taken_ends_;
  std::unique_ptr<base::Timer> timer_;       // export thread only
  transport::HttpClient* client_ = nullptr;  // export thread only, while run() runs
  std::thread thread_;
};

}  // namespace toolbridge::otel
