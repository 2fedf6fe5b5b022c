#pragma once
// Live reload of the configuration file (docs/reload.md): SIGHUP, POST /admin/reload and
// gateway.watch_config re-read the file, check it as start-up does, and apply only what changed.
// An invalid file, or one that changes a key only a restart applies, leaves the running
// configuration as it is and says why.
#include <boost/asio/awaitable.hpp>
#include <boost/json/array.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "base/expected.h"
#include "base/in_flight.h"
#include "config/config.h"

namespace toolbridge::upstream {
class Upstream;
}

namespace toolbridge::gateway {

class Gateway;

// What one reload did.
struct ReloadReport {
  enum class Outcome { kApplied, kInvalid, kRestartNeeded, kBusy, kNoFile };
  Outcome outcome = Outcome::kApplied;
  std::string error;             // why nothing changed (the config error as FILE:LINE:COL: ...)
  std::uint64_t generation = 0;  // of the configuration serving after the attempt
  std::string hash;              // its file's SHA-256 (hex)
  std::string summary;           // what changed, one line
  bool ok() const { return outcome == Outcome::kApplied; }
  // {"reloaded":true,"generation":N,"hash":"…","summary":"…"} or {"reloaded":false,"error":…}.
  std::string to_json() const;
};

class Reloader {
 public:
  // Reads a config document's text into a Config as start-up did (the reader's checks and the
  // command line's overrides); throws config::ConfigError.
  using Loader = std::function<config::Config(const std::string& text)>;
  // Whether the gateway may run `config` (a front end's own check), else why not.
  using Check = std::function<base::Status(const config::Config&)>;

  explicit Reloader(Gateway& gateway);
  ~Reloader();

  // The file the gateway was started from and its text then; without it reload() says so.
  void set_source(std::string path, std::string text, Loader load);
  void add_check(Check check) { checks_.push_back(std::move(check)); }
  // Told after every applied reload (front ends take their new settings, e.g. API keys).
  void on_applied(std::function<void()> fn) { applied_.push_back(std::move(fn)); }

  // Re-reads the file and applies it; `trigger` ("SIGHUP", "admin", "watch") goes to the log.
  // Returns once the changed servers' new instances have started (or ready_timeout passed).
  boost::asio::awaitable<ReloadReport> reload(std::string trigger);

  std::uint64_t generation() const { return generation_; }
  const std::string& hash() const { return hash_; }
  const std::string& path() const { return path_; }

  // gateway.watch_config: polls the file once a second while it is set.
  void update_watch();
  // The servers a reload removed or replaced that calls or sessions still hold (shutdown drains
  // them too; releasing a session reaches them).
  std::vector<std::shared_ptr<upstream::Upstream>> draining() const;
  // /healthz's `draining`: each of those with the last generation it served, why it drains
  // (removed, replaced), its calls still in flight and the sessions still bound to it.
  boost::json::array draining_health() const;
  // Shutdown, after the drain: stops the watch, and stops at once the servers still draining
  // after a reload.
  boost::asio::awaitable<void> stop();

 private:
  struct Plan;
  using Upstreams = std::unordered_map<std::string, std::shared_ptr<upstream::Upstream>>;
  base::Status check(const config::Config& next) const;
  boost::asio::awaitable<void> apply(Plan& plan);
  // Starts the servers the plan adds or changes (their new versions), by name.
  Upstreams start_servers(const Plan& plan);
  // The gateway's servers become the plan's (`fresh` where started); returns the ones left out:
  // removed servers and the old versions of changed ones.
  std::vector<std::shared_ptr<upstream::Upstream>> swap_servers(const Plan& plan, Upstreams fresh);
  // The surfaces of the new config; a fingerprint that moved is logged.
  void swap_surfaces();
  // Waits until no session is bound to `up` (per_session, replaced: sessions keep their
  // instance until released) and no call holds it (or its longest deadline passed, or the
  // gateway stops), then stops it with its stop ladder.
  boost::asio::awaitable<void> retire(std::shared_ptr<upstream::Upstream> up, bool keep_sessions,
                                      base::InFlight::Token retiring);
  void watch_tick();

  Gateway& gateway_;
  std::string path_;
  std::string text_;
  Loader load_;
  std::vector<Check> checks_;
  std::vector<std::function<void()>> applied_;
  std::uint64_t generation_ = 1;
  std::string hash_;
  bool applying_ = false;
  // A reload being applied, and the removed or replaced servers not yet stopped.
  base::InFlight work_;
  struct Draining {
    std::weak_ptr<upstream::Upstream> up;
    std::uint64_t generation = 0;  // the last configuration it served
    bool removed = false;          // else replaced by a new version
  };
  std::vector<Draining> draining_;                           // those not yet stopping
  bool stop_now_ = false;                                    // shutdown: stop them without waiting
  // Configurations replaced by a reload: stages and front ends may still point into them
  // (server settings, API keys), so they are kept for the life of the process (a few KiB each).
  std::vector<std::unique_ptr<config::Config>> replaced_;
  // gateway.watch_config
  base::Timer watch_;
  bool watch_config_ = false;  // gateway.watch_config of the file serving
  bool watching_ = false;
  std::string seen_stamp_;     // the file's mtime and size at the last tick
  std::string pending_stamp_;  // a change seen, waiting one tick for the writer to finish
};

// The SHA-256 of `text` in hex.
std::string sha256_hex(std::string_view text);

}  // namespace toolbridge::gateway
