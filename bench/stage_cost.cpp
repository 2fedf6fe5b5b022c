#include "stage_cost.h"

#include <fmt/format.h>
#include <time.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <filesystem>
#include <functional>
#include <memory>
#include <stdexcept>
#include <vector>

#include "cache/cache_stage.h"
#include "call/stage.h"
#include "catalog/catalog.h"
#include "config/config.h"
#include "idempotency/idempotency_stage.h"
#include "json/envelope.h"
#include "replay/cassette.h"
#include "replay/recorder.h"
#include "replay/replay_stage.h"
#include "telemetry/metrics.h"
#include "upstream/start_gate.h"
#include "upstream/upstream.h"

namespace toolbridge::bench {

namespace asio = boost::asio;

namespace {

using Chain = std::vector<std::unique_ptr<call::Stage>>;

// What the fixture's echo answers, as its pipe delivers it.
constexpr std::string_view kAnswer =
    R"({"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hello"}]}})";

// The server's place at the end of every chain: answers in place.
class AnswerStage final : public call::Stage {
 public:
  std::string_view name() const override { return "answer"; }
  asio::awaitable<call::Result> handle(call::Call&, call::Next) override {
    call::Result r;
    r.response.assign(kAnswer);
    r.result_at = json::parse_envelope(r.response).result;
    return call::ready(std::move(r));
  }
};

double process_cpu_us() {
  timespec t{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_nsec) / 1e3;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

double quartile(std::vector<double> v, int q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, v.size() * static_cast<std::size_t>(q) / 4)];
}

std::string config_text(const std::string& replay_dir) {
  std::string y = "gateway:\n  listen: 127.0.0.1:0\n  cache: {memory_bytes: 8GiB}\n";
  if (!replay_dir.empty()) y += "  replay: {path: \"" + replay_dir + "\", mode: strict}\n";
  // Never started: the chains end in AnswerStage.
  y += "servers:\n  fixture:\n    command: /bin/true\n    cache: {tools: [echo], ttl: 1h}\n";
  return y;
}

struct Run {
  asio::io_context& io;
  std::shared_ptr<upstream::Upstream> upstream;
  std::size_t workers;
  std::size_t calls;
  bool distinct;           // each call's arguments its own, else all {"text":"hello"}
  std::size_t failed = 0;  // calls not answered as the chain should
  std::size_t cached = 0;  // answered from the cache
  // Run after every `batch_calls` calls (the recorder's flush: it then writes as many lines at
  // a time as its 100-ms interval takes at 2,000 calls/s, a write(2) each).
  std::function<void()> every_batch;
  std::size_t batch_calls = 200;
  std::size_t made = 0;

  // One round of `chain`: every worker's calls in trajectory "r{round}-w{worker}".
  void round(const Chain& chain, std::size_t round_no) {
    for (std::size_t w = 0; w < workers; ++w) {
      asio::co_spawn(io, worker(chain, fmt::format("r{}-w{}", round_no, w)), asio::detached);
    }
    io.run();
    io.restart();
  }

  asio::awaitable<void> worker(const Chain& chain, std::string trajectory) {
    for (std::size_t k = 0; k < calls; ++k) {
      call::Call c;
      c.method = "tools/call";
      c.id = "7";
      c.params =
          distinct
              ? fmt::format(R"({{"name":"fixture__echo","arguments":{{"text":"hello {} {}"}}}})",
                            trajectory, k)
              : std::string(R"({"name":"fixture__echo","arguments":{"text":"hello"}})");
      c.members = json::object_members(c.params).value();
      c.trajectory = trajectory;
      c.started = base::steady_clock().now();  // before the route: its deadline counts from it
      c.set_route(call::Route{upstream, "fixture", "echo", "fixture__echo", "fixture__echo"});
      const call::Next next(chain, 0);
      const call::Result r = co_await next(c);
      if (r.fault != call::Fault::kNone || r.response.find("hello") == std::string::npos) ++failed;
      if (c.cached) ++cached;
      if (every_batch && ++made % batch_calls == 0) every_batch();
    }
  }
};

}  // namespace

StageCosts measure_stage_costs(std::size_t workers, std::size_t calls_per_worker,
                               std::size_t rounds, bool distinct, const std::string& dir) {
  StageCosts out;
  out.rounds = rounds;
  out.calls_per_round = workers * calls_per_worker;
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  try {
    asio::io_context io(1);
    telemetry::Metrics metrics;
    const config::Config plain = config::load_text(config_text(""), "stage-cost", false);
    upstream::StartGate gate(1);
    Run run{io, std::make_shared<upstream::Upstream>(io, plain.servers.front(), gate, metrics),
            workers, calls_per_worker, distinct};
    const catalog::Catalog catalog;
    const base::Clock& clock = base::steady_clock();
    const auto calls = static_cast<double>(out.calls_per_round);
    // Each chain's CPU per call, round by round; `after` runs inside the measured time.
    auto measure = [&](const Chain& chain, std::size_t round_no, std::vector<double>& into,
                       const std::function<void()>& after = {}) {
      const double before = process_cpu_us();
      run.round(chain, round_no);
      if (after) after();
      into.push_back((process_cpu_us() - before) / calls);
    };

    Chain answer;
    answer.push_back(std::make_unique<AnswerStage>());

    // Recording, against the last stage alone. The recorder writes where the gateway's writes,
    // on the calling thread: every 200 calls (run.every_batch), and a round's last lines before
    // its time is read. Its executor is never run, so no timer of its own fires.
    asio::io_context recorder_io;
    replay::Recorder recorder(config::Record{dir, 1ull << 40}, metrics, clock);
    if (!recorder.error().empty()) throw std::runtime_error(recorder.error());
    recorder.start(recorder_io.get_executor());
    Chain record;
    record.push_back(
        std::make_unique<replay::ReplayStage>(plain, nullptr, &recorder, metrics, clock));
    record.push_back(std::make_unique<AnswerStage>());
    std::vector<double> answer_us, record_us, record_extra;
    auto measure_record = [&](std::size_t k) {
      run.every_batch = [&] { recorder.flush(); };
      measure(record, k, record_us, [&] { recorder.flush(); });
      run.every_batch = nullptr;
    };
    for (std::size_t k = 0; k < rounds; ++k) {
      if (k % 2 == 0) {
        measure(answer, k, answer_us);
        measure_record(k);
      } else {
        measure_record(k);
        measure(answer, k, answer_us);
      }
      record_extra.push_back(record_us.back() - answer_us.back());
    }
    recorder.flush();

    // Replaying what was just recorded (the same trajectories, in the same order), against a
    // cache hit of the same call.
    const std::string run_dir = recorder.run_dir();
    auto cassette = replay::Cassette::load(run_dir);
    if (!cassette)
      throw std::runtime_error("the recorded cassette could not be read: " + cassette.error());
    out.records = (*cassette)->calls().size();
    const config::Config replaying = config::load_text(config_text(run_dir), "stage-cost", false);
    Chain replay;
    replay.push_back(
        std::make_unique<replay::ReplayStage>(replaying, cassette->get(), nullptr, metrics, clock));
    replay.push_back(std::make_unique<AnswerStage>());
    Chain hit;
    hit.push_back(
        std::make_unique<idempotency::IdempotencyStage>(io, plain.gateway, metrics, clock));
    hit.push_back(std::make_unique<cache::CacheStage>(io, plain, catalog, metrics, clock));
    hit.push_back(std::make_unique<AnswerStage>());
    // Fills the cache with every call the rounds make: every later call of `hit` is a hit.
    for (std::size_t k = 0; k < (distinct ? rounds : 1); ++k) run.round(hit, k);
    run.cached = 0;
    std::vector<double> replay_us, hit_us, answer2_us, replay_extra, hit_extra, replay_minus_hit;
    for (std::size_t k = 0; k < rounds; ++k) {
      // The three in turn, each first as often as the others.
      const std::size_t order = k % 3;
      for (std::size_t i = 0; i < 3; ++i) {
        switch ((order + i) % 3) {
          case 0:
            measure(answer, k, answer2_us);
            break;
          case 1:
            measure(replay, k, replay_us);
            break;
          default:
            measure(hit, k, hit_us);
            break;
        }
      }
      replay_extra.push_back(replay_us.back() - answer2_us.back());
      hit_extra.push_back(hit_us.back() - answer2_us.back());
      replay_minus_hit.push_back(replay_us.back() - hit_us.back());
    }
    if (run.failed > 0) {
      out.error = fmt::format("{} calls were not answered as their chain should", run.failed);
    } else if (run.cached != rounds * out.calls_per_round) {
      out.error =
          fmt::format("{} of {} cache calls were hits", run.cached, rounds * out.calls_per_round);
      // The cache's counters say why (not stored: which reason).
      const std::string m = metrics.render();
      for (std::size_t at = 0; (at = m.find("\ntoolbridge_cache", at)) != std::string::npos; ++at)
        out.error += m.substr(at, m.find('\n', at + 1) - at);
    }
    answer_us.insert(answer_us.end(), answer2_us.begin(), answer2_us.end());
    out.answer_us = median(answer_us);
    out.record_us = median(record_us);
    out.replay_us = median(replay_us);
    out.cache_hit_us = median(hit_us);
    out.record_extra_us = median(record_extra);
    out.record_extra_lo = quartile(record_extra, 1);
    out.record_extra_hi = quartile(record_extra, 3);
    out.replay_extra_us = median(replay_extra);
    out.cache_hit_extra_us = median(hit_extra);
    out.replay_minus_hit_us = median(replay_minus_hit);
    out.replay_minus_hit_lo = quartile(replay_minus_hit, 1);
    out.replay_minus_hit_hi = quartile(replay_minus_hit, 3);
  } catch (const std::exception& e) {
    out.error = e.what();
  }
  std::filesystem::remove_all(dir, ec);
  return out;
}

}  // namespace toolbridge::bench
