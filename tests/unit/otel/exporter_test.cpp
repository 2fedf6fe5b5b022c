// The span exporter against a real HTTP collector on loopback: batches go out whole and encoded,
// with the configured headers; a collector that is down, refuses or lags costs only drops.
#include "otel/exporter.h"

#include <gtest/gtest.h>

#include <boost/asio/post.hpp>
#include <mutex>
#include <thread>

#include "proto_reader.h"
#include "unit/scripted_http_peer.h"

namespace toolbridge::otel {
namespace {

namespace tst = toolbridge::testing;

// A collector on its own thread: keeps every request, answers each with `status`.
class Collector {
 public:
  explicit Collector(int status = 200)
      : peer_(io_, [this, status](tst::PlainConn& c, int) -> tst::asio::awaitable<void> {
          for (;;) {
            auto request = co_await c.read_request();
            if (!request) co_return;
            {
              std::lock_guard lock(mutex_);
              requests_.push_back(*request);
            }
            const std::string answer =
                status == 200 ? tst::ok_response("{}")
                              : "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy";
            if (!co_await c.write(answer)) co_return;
          }
        }) {
    thread_ = std::thread([this] { io_.run(); });
  }
  ~Collector() {
    tst::asio::post(io_, [this] { peer_.stop(); });
    io_.stop();
    thread_.join();
  }
  std::string url() const { return peer_.url("http", "127.0.0.1", "/v1/traces"); }
  std::vector<std::string> requests() {
    std::lock_guard lock(mutex_);
    return requests_;
  }

 private:
  tst::asio::io_context io_;
  tst::ScriptedPeer peer_;
  std::mutex mutex_;
  std::vector<std::string> requests_;
  std::thread thread_;
};

config::Otel options(const std::string& endpoint) {
  config::Otel o;
  o.endpoint = endpoint;
  o.batch_size = 2;
  o.queue_size = 100;
  o.timeout = std::chrono::milliseconds(2000);
  o.headers = {{"x-team", "rl"}};
  return o;
}

std::vector<Span> spans(int n) {
  std::vector<Span> out(static_cast<std::size_t>(n));
  for (Span& s : out) {
    s.trace_id[0] = s.span_id[0] = 1;
    s.name = "tools/call x";
  }
  return out;
}

std::size_t spans_in(const std::string& request) {
  const std::string body = request.substr(request.find("\r\n\r\n") + 4);
  const auto request_fields = testing::fields(body);
  const auto resource_spans = testing::fields(testing::one(request_fields, 1).bytes);
  const auto scope_spans = testing::fields(testing::one(resource_spans, 2).bytes);
  return testing::all(scope_spans, 2).size();
}

// A port nothing listens on: bound, then closed.
unsigned short closed_port() {
  tst::asio::io_context io;
  tst::tcp::acceptor a(io, tst::tcp::endpoint(tst::asio::ip::make_address("127.0.0.1"), 0));
  return a.local_endpoint().port();
}

TEST(OtelExporter, BatchesReachTheCollectorEncodedWithTheirHeaders) {
  Collector collector;
  Exporter exporter(options(collector.url()), Resource{});
  exporter.start();
  auto five = spans(5);
  EXPECT_TRUE(exporter.submit(five));
  EXPECT_TRUE(five.empty());
  exporter.flush();
  const auto requests = collector.requests();
  ASSERT_EQ(requests.size(), 3u);  // 2 + 2 + 1
  std::size_t total = 0;
  for (const std::string& r : requests) {
    EXPECT_EQ(r.rfind("POST /v1/traces HTTP/1.1\r\n", 0), 0u) << r.substr(0, 80);
    const std::string lower = tst::PlainConn::lowercase(r.substr(0, r.find("\r\n\r\n")));
    EXPECT_NE(lower.find("content-type: application/x-protobuf"), std::string::npos);
    EXPECT_NE(lower.find("x-team: rl"), std::string::npos);
    total += spans_in(r);
  }
  EXPECT_EQ(total, 5u);
  const auto stats = exporter.stats();
  EXPECT_EQ(stats.exported, 5u);
  EXPECT_EQ(stats.requests, 3u);
  EXPECT_EQ(stats.dropped_queue + stats.dropped_export, 0u);
}

TEST(OtelExporter, FullBatchesWakeTheExportAndEachRequestCarriesAFullBatch) {
  Collector collector;
  // batch_size 2, queue_size 100: kBatchesPerWake (4) full batches, 8 spans, wake the thread.
  Exporter exporter(options(collector.url()), Resource{});
  exporter.start();
  auto nine = spans(9);
  EXPECT_TRUE(exporter.submit(nine));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(800);
  while (collector.requests().size() < 4 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  // Before the schedule delay (1 s): four full requests; the ninth span waits for more.
  const auto early = collector.requests();
  ASSERT_EQ(early.size(), 4u);
  for (const std::string& r : early) EXPECT_EQ(spans_in(r), 2u);
  exporter.flush();  // a flush sends what waits, however few
  const auto all = collector.requests();
  ASSERT_EQ(all.size(), 5u);
  EXPECT_EQ(spans_in(all.back()), 1u);
  EXPECT_EQ(exporter.stats().exported, 9u);
}

TEST(OtelExporter, JsonIsSentAsJson) {
  Collector collector;
  auto o = options(collector.url());
  o.protocol = config::Otel::Protocol::kJson;
  Exporter exporter(o, Resource{});
  exporter.start();
  auto one = spans(1);
  exporter.submit(one);
  exporter.flush();
  const auto requests = collector.requests();
  ASSERT_EQ(requests.size(), 1u);
  const std::string lower = tst::PlainConn::lowercase(requests[0]);
  EXPECT_NE(lower.find("content-type: application/json"), std::string::npos);
  EXPECT_NE(requests[0].find(R"("resourceSpans":[)"), std::string::npos);
}

TEST(OtelExporter, ACollectorThatIsDownCostsOnlyDrops) {
  Exporter exporter(options("http://127.0.0.1:" + std::to_string(closed_port()) + "/v1/traces"),
                    Resource{});
  exporter.start();
  for (int i = 0; i < 10; ++i) {
    auto two = spans(2);
    const auto before = std::chrono::steady_clock::now();
    exporter.submit(two);
    // Queueing never waits for the network.
    EXPECT_LT(std::chrono::steady_clock::now() - before, std::chrono::milliseconds(50));
  }
  exporter.flush();
  const auto stats = exporter.stats();
  EXPECT_EQ(stats.exported, 0u);
  EXPECT_EQ(stats.dropped_export + stats.dropped_queue, 20u);
  EXPECT_GT(stats.failed_requests, 0u);
  EXPECT_NE(exporter.last_error(), "");
}

TEST(OtelExporter, ARefusingCollectorCountsFailures) {
  Collector collector(503);
  Exporter exporter(options(collector.url()), Resource{});
  exporter.start();
  auto three = spans(3);
  exporter.submit(three);
  exporter.flush();
  const auto stats = exporter.stats();
  EXPECT_EQ(stats.exported, 0u);
  EXPECT_EQ(stats.dropped_export, 3u);
  EXPECT_EQ(stats.failed_requests, 2u);
  EXPECT_NE(exporter.last_error().find("503"), std::string::npos) << exporter.last_error();
}

TEST(OtelExporter, AFullQueueDropsAndCounts) {
  auto o = options("http://127.0.0.1:1/v1/traces");
  o.queue_size = 3;
  Exporter exporter(o, Resource{});  // not started: nothing drains the queue
  auto five = spans(5);
  EXPECT_FALSE(exporter.submit(five));
  EXPECT_EQ(exporter.stats().dropped_queue, 2u);
}

TEST(OtelExporter, StoppingExportsWhatIsQueued) {
  Collector collector;
  auto o = options(collector.url());
  o.batch_size = 50;  // no batch is full: only the stop sends them
  {
    Exporter exporter(o, Resource{});
    exporter.start();
    auto three = spans(3);
    exporter.submit(three);
  }
  const auto requests = collector.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(spans_in(requests[0]), 3u);
}

}  // namespace
}  // namespace toolbridge::otel
