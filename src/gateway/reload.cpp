#include "gateway/reload.h"

#include <fmt/ranges.h>
#include <openssl/sha.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "base/spawn.h"
#include "config/diff.h"
#include "config/file.h"
#include "gateway/gateway.h"
#include "json/envelope.h"
#include "surfaces/registry.h"
#include "surfaces/view.h"
#include "upstream/upstream.h"

namespace toolbridge::gateway {

namespace asio = boost::asio;
namespace bj = boost::json;
using namespace std::chrono_literals;

namespace {

constexpr auto kWatchInterval = 1s;

std::string_view outcome_name(ReloadReport::Outcome o) {
  switch (o) {
    case ReloadReport::Outcome::kApplied:
      return "applied";
    case ReloadReport::Outcome::kInvalid:
      return "invalid";
    case ReloadReport::Outcome::kRestartNeeded:
      return "restart_needed";
    case ReloadReport::Outcome::kBusy:
      return "busy";
    case ReloadReport::Outcome::kNoFile:
      return "no_file";
  }
  return "invalid";
}

// The file's modification time and size, or "missing": what the watch compares.
std::string stamp_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "missing";
  return fmt::format("{}.{}:{}", st.st_mtim.tv_sec, st.st_mtim.tv_nsec, st.st_size);
}

// The longest a call to `s` may take: its drain waits no longer.
base::Clock::duration longest_call(const config::Server& s) {
  config::Duration longest = s.call_timeout;
  for (const auto& [tool, t] : s.tool_timeouts) longest = std::max(longest, t);
  return std::chrono::duration_cast<base::Clock::duration>(longest);
}

std::map<std::string, std::string> fingerprints(const surfaces::Registry& r) {
  std::map<std::string, std::string> out;
  for (const auto& view : r.views()) out.emplace(view->name(), view->fingerprint());
  return out;
}

}  // namespace

std::string sha256_hex(std::string_view text) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  std::string hex;
  for (unsigned char c : digest) hex += fmt::format("{:02x}", c);
  return hex;
}

std::string ReloadReport::to_json() const {
  bj::object out{{"reloaded", ok()},
                 {"outcome", outcome_name(outcome)},
                 {"generation", generation},
                 {"hash", hash}};
  if (ok()) out["summary"] = summary;
  if (!error.empty()) out["error"] = error;
  return bj::serialize(out);
}

struct Reloader::Plan {
  std::string trigger;
  std::string text;
  config::Config next;
  config::Diff diff;
  bool watch_config = false;
};

Reloader::Reloader(Gateway& gateway)
    : gateway_(gateway), work_(gateway.clock()), watch_(gateway.io(), gateway.clock()) {}

Reloader::~Reloader() = default;

void Reloader::set_source(std::string path, std::string text, Loader load) {
  path_ = std::move(path);
  hash_ = sha256_hex(text);
  text_ = std::move(text);
  load_ = std::move(load);
  try {
    watch_config_ = config::watch_config_of(text_, path_, config::looks_like_json(path_, text_));
  } catch (const config::ConfigError&) {
    watch_config_ = false;  // start-up read it, so this does not happen
  }
}

base::Status Reloader::check(const config::Config& next) const {
  for (const auto& c : checks_) {
    if (base::Status may = c(next); !may) return may;
  }
  return {};
}

asio::awaitable<ReloadReport> Reloader::reload(std::string trigger) {
  ReloadReport report;
  auto refuse = [&](ReloadReport::Outcome outcome, std::string why) {
    report.outcome = outcome;
    report.error = std::move(why);
    report.generation = generation_;
    report.hash = hash_;
    spdlog::error("reload ({}): {}; the running configuration (generation {}) stays", trigger,
                  report.error, generation_);
    return report;
  };
  if (path_.empty()) {
    co_return refuse(ReloadReport::Outcome::kNoFile,
                     "the gateway was started without a config file (serve --config FILE): there "
                     "is nothing to read again");
  }
  if (gateway_.stopping())
    co_return refuse(ReloadReport::Outcome::kBusy, "the gateway is shutting down");
  if (applying_) {
    co_return refuse(ReloadReport::Outcome::kBusy,
                     "another reload is being applied; retry when it has finished");
  }
  Plan plan;
  plan.trigger = trigger;
  try {
    plan.text = config::read_file_text(path_);
    if (trigger == "watch" && sha256_hex(plan.text) == hash_) co_return report;  // touched only
    plan.next = load_(plan.text);
    const bool json = config::looks_like_json(path_, plan.text);
    plan.diff = config::diff_texts(text_, plan.text, path_, json);
    plan.watch_config = config::watch_config_of(plan.text, path_, json);
  } catch (const config::ConfigError& e) {
    co_return refuse(ReloadReport::Outcome::kInvalid, e.what());
  } catch (const std::exception& e) {
    // Start-up would have stopped on it; a running gateway keeps what it has.
    co_return refuse(ReloadReport::Outcome::kInvalid, path_ + ": " + e.what());
  }
  if (base::Status may = check(plan.next); !may)
    co_return refuse(ReloadReport::Outcome::kInvalid, path_ + ": " + may.error());
  if (const auto fixed = config::restart_only_keys(plan.diff); !fixed.empty()) {
    co_return refuse(ReloadReport::Outcome::kRestartNeeded,
                     fmt::format("{}: {} cannot change without a restart (docs/reload.md)", path_,
                                 fmt::join(fixed, ", ")));
  }
  applying_ = true;
  {
    const base::InFlight::Token working(work_);  // stop() waits for it
    co_await apply(plan);
  }
  applying_ = false;
  ++generation_;
  hash_ = sha256_hex(plan.text);
  text_ = std::move(plan.text);
  watch_config_ = plan.watch_config;
  report.generation = generation_;
  report.hash = hash_;
  report.summary = plan.diff.summary();
  spdlog::info("reload ({}): generation {} ({}): {}", trigger, generation_, hash_.substr(0, 12),
               report.summary);
  for (const auto& fn : applied_) fn();
  update_watch();
  co_return report;
}

asio::awaitable<void> Reloader::apply(Plan& plan) {
  Gateway& g = gateway_;
  // New and changed servers start beside the running ones; the old keep serving meanwhile.
  auto fresh = start_servers(plan);
  const auto ready_by = g.clock_.now() + plan.next.gateway.ready_timeout;
  for (const auto& [name, up] : fresh) co_await up->until_started(ready_by);

  const bool surfaces_changed =
      std::find(plan.diff.keys_changed.begin(), plan.diff.keys_changed.end(), "surfaces") !=
      plan.diff.keys_changed.end();
  const std::string old_level = g.config_.gateway.log_level;
  auto retired = swap_servers(plan, std::move(fresh));
  // From here the gateway's config is the new one (the old is kept: see replaced_).
  replaced_.push_back(std::make_unique<config::Config>(std::move(g.config_)));
  g.config_ = std::move(plan.next);
  const std::unordered_set<std::string> removed_now(plan.diff.servers_removed.begin(),
                                                    plan.diff.servers_removed.end());
  g.pipeline_->servers_changed(g.upstreams_, removed_now, g.config_);
  if (g.config_.gateway.log_level != old_level)
    spdlog::set_level(spdlog::level::from_str(g.config_.gateway.log_level));
  if (surfaces_changed) swap_surfaces();
  const std::uint64_t version = g.catalog_.version();
  g.rebuild_catalog();  // tells the sessions when the tools changed
  if (surfaces_changed && g.catalog_.version() == version)
    g.broadcast(json::make_notification("notifications/tools/list_changed", {}));
  std::erase_if(draining_, [](const Draining& d) { return d.up.expired(); });
  for (auto& up : retired) {
    up->on_catalog_changed = nullptr;
    const bool was_removed = removed_now.contains(up->name());
    // A replaced per_session version keeps serving the sessions bound to it until released.
    const bool keep_sessions = !was_removed && up->config().policy == config::Policy::kPerSession;
    if (keep_sessions) {
      up->keep_bound_only();
      g.pipeline_->keep_sessions_on(up);
    }
    draining_.push_back({up, generation_, was_removed});
    // Counted now, so that stop() waits for it even before it runs.
    asio::co_spawn(g.io_, retire(std::move(up), keep_sessions, base::InFlight::Token(work_)),
                   base::log_failure("retire a server"));
  }
}

Reloader::Upstreams Reloader::start_servers(const Plan& plan) {
  Gateway& g = gateway_;
  std::unordered_set<std::string> names(plan.diff.servers_added.begin(),
                                        plan.diff.servers_added.end());
  for (const auto& c : plan.diff.servers_changed) names.insert(c.name);
  Upstreams fresh;
  for (const auto& configured : plan.next.servers) {
    if (!names.contains(configured.name)) continue;
    config::Server s = configured;
    if (g.replay_only()) s.enabled = false;  // strict replay: answered from the cassette
    auto up = std::make_shared<upstream::Upstream>(g.io_, s, g.gate_, g.metrics_,
                                                   g.session_dir_root_, g.clock_);
    up->on_catalog_changed = [&g]() { g.rebuild_catalog(); };
    asio::co_spawn(g.io_, up->start(), base::log_failure("server start"));
    fresh.emplace(s.name, std::move(up));
  }
  return fresh;
}

std::vector<std::shared_ptr<upstream::Upstream>> Reloader::swap_servers(const Plan& plan,
                                                                        Upstreams fresh) {
  Gateway& g = gateway_;
  Upstreams running;
  for (auto& up : g.upstreams_) running.emplace(up->name(), std::move(up));
  std::vector<std::shared_ptr<upstream::Upstream>> next;
  for (const auto& s : plan.next.servers) {
    auto it = fresh.find(s.name);
    auto kept = running.find(s.name);
    if (it != fresh.end()) {
      next.push_back(std::move(it->second));
    } else if (kept != running.end()) {
      next.push_back(std::move(kept->second));
      running.erase(kept);
    }
  }
  g.upstreams_ = std::move(next);
  // What is left: removed servers and the old versions of changed ones.
  std::vector<std::shared_ptr<upstream::Upstream>> retired;
  for (auto& [name, up] : running) retired.push_back(std::move(up));
  return retired;
}

void Reloader::swap_surfaces() {
  Gateway& g = gateway_;
  const auto before = fingerprints(*g.surfaces_);
  g.surfaces_ = std::make_shared<const surfaces::Registry>(g.config_.surfaces, g.catalog_);
  for (const auto& [name, fp] : fingerprints(*g.surfaces_)) {
    auto it = before.find(name);
    if (it == before.end()) {
      spdlog::info("reload: surface {} added (fingerprint {})", name, fp);
    } else if (it->second != fp) {
      spdlog::info("reload: surface {} fingerprint {} -> {}", name, it->second, fp);
    }
  }
}

asio::awaitable<void> Reloader::retire(std::shared_ptr<upstream::Upstream> up, bool keep_sessions,
                                       [[maybe_unused]] base::InFlight::Token retiring) {
  const std::string name = up->name();
  // Sessions bound to an instance of this version keep it until they are released (or expire
  // after session_idle_ttl): the last release wakes this, as does stop().
  if (keep_sessions && !stop_now_ && up->sessions().count() > 0) {
    spdlog::info("reload: server {} (old version) keeps serving {} bound sessions until released",
                 name, up->sessions().count());
    co_await up->sessions().until_zero(base::Clock::time_point::max());
  }
  // A call holds its server from resolve to its answer (Upstream::holders): the last one's
  // answer wakes this, as does stop().
  const auto limit = gateway_.clock().now() + longest_call(up->config()) + 1s;
  if (!stop_now_) co_await up->holders().until_zero(limit);
  std::erase_if(draining_,
                [&up](const Draining& d) { return d.up.expired() || d.up.lock() == up; });
  if (up->holding_calls() > 0) {
    spdlog::warn("reload: server {} (old version) still has {} calls in flight; stopping it", name,
                 up->holding_calls());
  } else {
    spdlog::info("reload: server {} (old version) drained; stopping it", name);
  }
  co_await up->stop();
}

void Reloader::update_watch() {
  const bool want = watch_config_ && !path_.empty() && !gateway_.stopping();
  if (want == watching_) return;
  watching_ = want;
  if (!want) {
    watch_.cancel();
    return;
  }
  seen_stamp_ = stamp_of(path_);
  pending_stamp_.clear();
  watch_tick();
}

void Reloader::watch_tick() {
  watch_.expires_after(kWatchInterval);
  watch_.async_wait([this](boost::system::error_code ec) {
    if (ec || !watching_ || gateway_.stopping()) return;
    const std::string now = stamp_of(path_);
    if (now != seen_stamp_) {
      // Changed: read it at the next tick if it stays as it is (an editor may still write).
      seen_stamp_ = now;
      pending_stamp_ = now;
    } else if (!pending_stamp_.empty() && !applying_) {
      pending_stamp_.clear();
      asio::co_spawn(gateway_.io(), reload("watch"), [](std::exception_ptr e, ReloadReport) {
        base::log_failure("reload (watch)")(e);
      });
    }
    watch_tick();
  });
}

std::vector<std::shared_ptr<upstream::Upstream>> Reloader::draining() const {
  std::vector<std::shared_ptr<upstream::Upstream>> out;
  for (const auto& d : draining_) {
    if (auto up = d.up.lock()) out.push_back(std::move(up));
  }
  return out;
}

bj::array Reloader::draining_health() const {
  bj::array out;
  for (const auto& d : draining_) {
    auto up = d.up.lock();
    if (!up) continue;
    out.push_back(bj::object{{"server", up->name()},
                             {"generation", d.generation},
                             {"reason", d.removed ? "removed" : "replaced"},
                             {"in_flight", up->holding_calls()},
                             {"sessions_bound", up->sessions().count()}});
  }
  return out;
}

asio::awaitable<void> Reloader::stop() {
  stop_now_ = true;
  watching_ = false;
  watch_.cancel();
  for (const auto& up : draining()) {
    up->sessions().wake_all();
    up->holders().wake_all();
  }
  co_await work_.until_zero(base::Clock::time_point::max());
}

}  // namespace toolbridge::gateway
