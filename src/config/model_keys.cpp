// The keys of the `models` section: workers, routing, limits, retries and the routing policies'
// thresholds (docs/llm-routing.md).
#include "config/model_keys.h"

#include <fmt/format.h>

#include <array>
#include <boost/url/parse.hpp>
#include <charconv>
#include <set>

namespace toolbridge::config {
namespace {

constexpr std::array<std::string_view, 23> kModelKeys{
    "workers",
    "routing",
    "headers",
    "request_timeout",
    "connect_timeout",
    "stream_idle_timeout",
    "max_connections",
    "max_response_bytes",
    "concurrency_limit",
    "max_retries",
    "retry_backoff",
    "max_retry_after",
    "breaker_threshold",
    "breaker_cooldown",
    "health_interval",
    "load_factor",
    "prefix_min_match",
    "prefix_balance",
    "prefix_balance_slack",
    "prefix_tree_max_bytes",
    "record_tokens",
    "enabled",
    "description",
};
constexpr std::array<std::string_view, 2> kWorkerKeys{"url", "name"};
constexpr std::array<std::string_view, 4> kRoutings{"round_robin", "least_outstanding", "affinity",
                                                    "prefix_aware"};
constexpr std::size_t kMaxModelName = 256;
constexpr std::size_t kMaxWorkers = 64;  // the prefix tree keeps worker sets as 64-bit masks
constexpr std::size_t kMaxRetries = 16;

double number(const NodeReader& r, const Node& n, const std::string& path, double min, double max) {
  if (n.kind == Node::Kind::kScalar) {
    double value = 0;
    const char* end = n.scalar.data() + n.scalar.size();
    auto [ptr, ec] = std::from_chars(n.scalar.data(), end, value);
    if (ec == std::errc() && ptr == end && value >= min && value <= max) return value;
  }
  r.fail(n.mark, path,
         fmt::format("expected a number from {:g} to {:g}, got {}", min, max, r.describe(n)));
}

std::string worker_url(const NodeReader& r, const Node& n, const std::string& path) {
  const std::string& value = r.text(n, path);
  auto parsed = boost::urls::parse_uri(value);
  if (!parsed)
    r.fail(n.mark, path, fmt::format("'{}' is not a URL: {}", value, parsed.error().message()));
  if (parsed->scheme() != "http" && parsed->scheme() != "https")
    r.fail(n.mark, path, fmt::format("'{}': only http:// and https:// URLs are supported", value));
  if (parsed->host().empty()) r.fail(n.mark, path, fmt::format("'{}' has no host", value));
  if (parsed->has_query() || parsed->has_fragment())
    r.fail(n.mark, path, fmt::format("'{}': a worker URL has no query or fragment", value));
  std::string url = value;
  while (!url.empty() && url.back() == '/') url.pop_back();  // paths are appended
  return url;
}

std::string default_worker_name(const std::string& url) {
  auto parsed = boost::urls::parse_uri(url);
  return parsed ? std::string(parsed->encoded_host_and_port()) : url;
}

void check_worker_name(const NodeReader& r, Mark mark, const std::string& path,
                       const std::string& name) {
  if (name.empty() || name.size() > 128) r.fail(mark, path, "a worker name is 1 to 128 characters");
  for (char c : name) {
    if (!is_name_char(c) && c != '.' && c != ':')
      r.fail(
          mark, path,
          fmt::format("'{}': a worker name is made of letters, digits, '_', '-', '.', ':'", name));
  }
}

std::vector<ModelWorker> read_workers(const NodeReader& r, const Node& n, const std::string& path) {
  std::vector<ModelWorker> out;
  std::set<std::string> names;
  std::size_t i = 0;
  for (const Node& item : r.items(n, path)) {
    const std::string p = fmt::format("{}[{}]", path, i++);
    ModelWorker w;
    if (item.kind == Node::Kind::kMap) {
      NodeReader::Seen seen;
      for (const Entry& e : r.entries(item, p)) {
        r.check_key(e, p, kWorkerKeys, /*lenient=*/false, seen);
        const std::string kp = join_path(p, e.key);
        if (e.key == "url") {
          w.url = worker_url(r, e.value, kp);
        } else {
          w.name = r.text(e.value, kp);
          check_worker_name(r, e.value.mark, kp, w.name);
        }
      }
      if (w.url.empty()) r.fail(item.mark, p, "a worker needs a url");
    } else {
      w.url = worker_url(r, item, p);
    }
    if (w.name.empty()) w.name = default_worker_name(w.url);
    if (!names.insert(w.name).second)
      r.fail(item.mark, p, fmt::format("a second worker named '{}' (give it a name)", w.name));
    out.push_back(std::move(w));
  }
  if (out.empty()) r.fail(n.mark, path, "a model needs at least one worker");
  if (out.size() > kMaxWorkers)
    r.fail(n.mark, path, fmt::format("at most {} workers per model", kMaxWorkers));
  return out;
}

Routing routing(const NodeReader& r, const Node& n, const std::string& path) {
  const std::string_view v = r.one_of(n, path, kRoutings);
  return v == "round_robin"         ? Routing::kRoundRobin
         : v == "least_outstanding" ? Routing::kLeastOutstanding
         : v == "affinity"          ? Routing::kAffinity
                                    : Routing::kPrefixAware;
}

void check_model_name(const NodeReader& r, Mark mark, const std::string& path,
                      const std::string& name) {
  if (name.empty() || name.size() > kMaxModelName)
    r.fail(mark, path, fmt::format("a model name is 1 to {} bytes", kMaxModelName));
  for (unsigned char c : name) {
    if (c < 0x21 || c == 0x7f || c == '"' || c == '\\')
      r.fail(mark, path, "a model name has no spaces, control characters, quotes or backslashes");
  }
}

Model read_model(const NodeReader& r, const Entry& m, const std::string& path, bool& enabled) {
  Model model;
  model.name = m.key;
  bool has_workers = false;
  NodeReader::Seen seen;
  for (const Entry& e : r.entries(m.value, path)) {
    r.check_key(e, path, kModelKeys, /*lenient=*/false, seen);
    const std::string p = join_path(path, e.key);
    const std::string_view k = e.key;
    if (k == "workers") {
      model.workers = read_workers(r, e.value, p);
      has_workers = true;
    } else if (k == "routing") {
      model.routing = routing(r, e.value, p);
    } else if (k == "headers") {
      for (const Entry& h : r.entries(e.value, p)) {
        const std::string& v = r.text(h.value, join_path(p, h.key));
        if (v.find_first_of("\r\n") != std::string::npos || h.key.empty() ||
            h.key.find_first_of(":\r\n ") != std::string::npos)
          r.fail(h.key_mark, join_path(p, h.key), "not a valid HTTP header");
        model.headers[h.key] = v;
      }
    } else if (k == "request_timeout") {
      model.request_timeout = r.duration(e.value, p, false);
    } else if (k == "connect_timeout") {
      model.connect_timeout = r.duration(e.value, p, false);
    } else if (k == "stream_idle_timeout") {
      model.stream_idle_timeout = r.duration(e.value, p, false);
    } else if (k == "max_connections") {
      model.max_connections = r.count(e.value, p);
    } else if (k == "max_response_bytes") {
      model.max_response_bytes = r.size(e.value, p);
    } else if (k == "concurrency_limit") {
      model.concurrency_limit = r.zero_or_count(e.value, p, 1'000'000);
    } else if (k == "max_retries") {
      model.max_retries = r.zero_or_count(e.value, p, kMaxRetries);
    } else if (k == "retry_backoff") {
      model.retry_backoff = r.duration(e.value, p, true);
    } else if (k == "max_retry_after") {
      model.max_retry_after = r.duration(e.value, p, true);
    } else if (k == "breaker_threshold") {
      model.breaker_threshold = r.zero_or_count(e.value, p, 1'000);
    } else if (k == "breaker_cooldown") {
      model.breaker_cooldown = r.duration(e.value, p, false);
    } else if (k == "health_interval") {
      model.health_interval = r.duration(e.value, p, false);
    } else if (k == "load_factor") {
      model.load_factor = number(r, e.value, p, 1.0, 100.0);
    } else if (k == "prefix_min_match") {
      model.prefix_min_match = number(r, e.value, p, 0.0, 1.0);
    } else if (k == "prefix_balance") {
      model.prefix_balance = number(r, e.value, p, 1.0, 100.0);
    } else if (k == "prefix_balance_slack") {
      model.prefix_balance_slack = r.zero_or_count(e.value, p, 1'000'000);
    } else if (k == "prefix_tree_max_bytes") {
      model.prefix_tree_max_bytes = r.size(e.value, p);
    } else if (k == "record_tokens") {
      model.record_tokens = r.boolean(e.value, p);
    } else if (k == "enabled") {
      enabled = r.boolean(e.value, p);
    } else {
      r.text(e.value, p);  // description: free text
    }
  }
  if (!has_workers) r.fail(m.key_mark, path, "a model needs `workers`: a list of URLs");
  return model;
}

}  // namespace

std::string_view to_string(Routing r) {
  switch (r) {
    case Routing::kRoundRobin:
      return "round_robin";
    case Routing::kLeastOutstanding:
      return "least_outstanding";
    case Routing::kAffinity:
      return "affinity";
    case Routing::kPrefixAware:
      return "prefix_aware";
  }
  return "prefix_aware";
}

std::span<const std::string_view> model_keys() { return kModelKeys; }

void read_models(const NodeReader& r, const Node& n, const std::string& path, Config& config) {
  std::set<std::string, std::less<>> seen;
  for (const Entry& m : r.entries(n, path)) {
    const std::string p = join_path(path, m.key);
    check_model_name(r, m.key_mark, p, m.key);
    if (!seen.insert(m.key).second) r.fail(m.key_mark, p, "a second model of this name");
    for (const Server& s : config.servers) {
      if (s.name == m.key)
        r.fail(m.key_mark, p, fmt::format("'{}' is also a server's name; rename one", m.key));
    }
    bool enabled = true;
    Model model = read_model(r, m, p, enabled);
    if (enabled) config.models.push_back(std::move(model));
  }
}

}  // namespace toolbridge::config
