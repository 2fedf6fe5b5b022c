// `gateway.otel` (OpenTelemetry span export) and the standard OTEL_* environment variables under
// it: the variables give defaults, keys in the file override them. Kept apart: they belong to
// src/otel/.
#include <fmt/format.h>

#include <array>
#include <boost/url/parse.hpp>
#include <cctype>
#include <charconv>
#include <functional>

#include "config/duration.h"
#include "config/gateway_section.h"

namespace toolbridge::config {
namespace {

constexpr std::array<std::string_view, 7> kOtelKeys{
    "endpoint", "headers", "protocol", "sample_ratio", "batch_size", "queue_size", "timeout"};
constexpr std::array<std::string_view, 3> kProtocols{"http/protobuf", "http/json", "grpc"};
constexpr std::size_t kMaxBatch = 100'000;
constexpr std::size_t kMaxQueue = 10'000'000;
constexpr std::size_t kMaxHeaders = 64;
constexpr std::string_view kTracesPath = "/v1/traces";

using Fail = std::function<void(const std::string& message)>;

// An http(s) URL; with no path (or "/") the OTLP traces path is appended.
std::string traces_url(const std::string& value, bool base, const Fail& fail) {
  auto parsed = boost::urls::parse_uri(value);
  if (!parsed) fail(fmt::format("'{}' is not a URL: {}", value, parsed.error().message()));
  if (parsed->scheme() != "http" && parsed->scheme() != "https")
    fail(fmt::format("'{}': only http:// and https:// URLs are supported (OTLP/HTTP)", value));
  if (parsed->host().empty()) fail(fmt::format("'{}' has no host", value));
  std::string url = value;
  const std::string_view path = parsed->encoded_path();
  if (base || path.empty() || path == "/") {
    while (!url.empty() && url.back() == '/') url.pop_back();
    url += kTracesPath;
  }
  return url;
}

Otel::Protocol protocol(std::string_view value, const Fail& fail) {
  if (value == "http/protobuf") return Otel::Protocol::kProtobuf;
  if (value == "http/json") return Otel::Protocol::kJson;
  if (value == "grpc") {
    fail("grpc is not supported by this build: use http/protobuf (port 4318) or http/json");
  }
  fail(fmt::format("expected one of http/protobuf, http/json, got '{}'", value));
  return Otel::Protocol::kProtobuf;
}

double ratio(std::string_view text, const Fail& fail) {
  double v = -1;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || ptr != end || !(v >= 0 && v <= 1))
    fail(fmt::format("expected a ratio from 0 to 1, got '{}'", text));
  return v;
}

std::size_t whole(std::string_view text, std::size_t min, std::size_t max, const Fail& fail) {
  std::size_t v = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || ptr != end || v < min || v > max)
    fail(fmt::format("expected a whole number from {} to {}, got '{}'", min, max, text));
  return v;
}

// A header name is a token; a value has no line breaks (either would split the request).
void check_header(const std::string& name, const std::string& value, const Fail& fail) {
  static constexpr std::string_view kTokenPunct = "!#$%&'*+-.^_`|~";
  if (name.empty()) fail("a header name is empty");
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && kTokenPunct.find(c) == std::string::npos)
      fail(fmt::format("'{}' is not a valid header name", name));
  }
  for (char c : value) {
    if (c == '\r' || c == '\n' || c == '\0')
      fail(fmt::format("the value of header '{}' has a line break or NUL", name));
  }
}

int unhex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percent_decoded(std::string_view s, const Fail& fail) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    if (i + 2 >= s.size()) fail("a '%' escape is cut short");
    const int hi = unhex(s[i + 1]), lo = unhex(s[i + 2]);
    if (hi < 0 || lo < 0) fail("a '%' escape is not two hex digits");
    out += static_cast<char>(hi << 4 | lo);
    i += 2;
  }
  return out;
}

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// OTEL_EXPORTER_OTLP_HEADERS: "key1=value1,key2=value2", values percent-encoded (W3C Baggage).
std::vector<std::pair<std::string, std::string>> header_list(std::string_view text,
                                                             const Fail& fail) {
  std::vector<std::pair<std::string, std::string>> out;
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    const std::string_view item = trimmed(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    if (item.empty()) continue;
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos) fail(fmt::format("'{}' is not key=value", item));
    std::string name(trimmed(item.substr(0, eq)));
    std::string value = percent_decoded(trimmed(item.substr(eq + 1)), fail);
    check_header(name, value, fail);
    out.emplace_back(std::move(name), std::move(value));
  }
  if (out.size() > kMaxHeaders) fail(fmt::format("at most {} headers", kMaxHeaders));
  return out;
}

void check_sizes(const Otel& o, const Fail& fail) {
  if (o.queue_size < o.batch_size) {
    fail(fmt::format("queue_size ({}) must be at least batch_size ({})", o.queue_size,
                     o.batch_size));
  }
}

}  // namespace

void read_otel(const NodeReader& r, const Node& node, const std::string& path, Otel& o) {
  NodeReader::Seen seen;
  for (const Entry& e : r.entries(node, path)) {
    r.check_key(e, path, kOtelKeys, /*lenient=*/false, seen);
    const std::string p = join_path(path, e.key);
    const Node& v = e.value;
    const Fail fail = [&](const std::string& m) { r.fail(v.mark, p, m); };
    if (e.key == "endpoint") {
      o.endpoint = traces_url(r.text(v, p), /*base=*/false, fail);
    } else if (e.key == "headers") {
      o.headers.clear();
      for (const Entry& h : r.entries(v, p)) {
        const std::string hp = join_path(p, h.key);
        std::string value = r.text(h.value, hp);
        check_header(h.key, value, [&](const std::string& m) { r.fail(h.key_mark, hp, m); });
        o.headers.emplace_back(h.key, std::move(value));
      }
      if (o.headers.size() > kMaxHeaders) fail(fmt::format("at most {} headers", kMaxHeaders));
    } else if (e.key == "protocol") {
      o.protocol = protocol(r.one_of(v, p, kProtocols), fail);
    } else if (e.key == "sample_ratio") {
      o.sample_ratio = ratio(r.text(v, p), fail);
    } else if (e.key == "batch_size") {
      o.batch_size = r.count(v, p);
      if (o.batch_size > kMaxBatch) fail(fmt::format("at most {} spans", kMaxBatch));
    } else if (e.key == "queue_size") {
      o.queue_size = r.count(v, p);
      if (o.queue_size > kMaxQueue) fail(fmt::format("at most {} spans", kMaxQueue));
    } else {
      o.timeout = r.duration(v, p, /*allow_zero=*/false);
    }
  }
  check_sizes(o, [&](const std::string& m) { r.fail(node.mark, path, m); });
  if (o.endpoint.empty())
    r.fail(node.mark, path,
           "needs `endpoint` (or OTEL_EXPORTER_OTLP_ENDPOINT): the collector's OTLP/HTTP URL, "
           "e.g. http://127.0.0.1:4318");
}

void read_otel_environment(const std::function<const char*(const char*)>& getenv, Otel& o) {
  const auto get = [&](const char* name) -> std::string_view {
    const char* v = getenv(name);
    return v ? std::string_view(v) : std::string_view{};
  };
  const auto fail_for = [](const char* name) {
    return [name](const std::string& m) { throw_config_error("environment", Mark{}, name, m); };
  };
  // The traces-specific variable wins over the general one, as the OTLP exporter spec says.
  const auto pick = [&](const char* traces, const char* general) {
    return !get(traces).empty() ? traces : general;
  };
  if (const char* n = pick("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT");
      !get(n).empty()) {
    // The general one is a base URL (/v1/traces is appended); the traces one is used as is.
    const bool base = std::string_view(n) == "OTEL_EXPORTER_OTLP_ENDPOINT";
    o.endpoint = traces_url(std::string(get(n)), base, fail_for(n));
  }
  if (const char* n = pick("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS");
      !get(n).empty()) {
    o.headers = header_list(get(n), fail_for(n));
  }
  if (const char* n = pick("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL");
      !get(n).empty()) {
    o.protocol = protocol(get(n), fail_for(n));
  }
  if (const char* n = pick("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT");
      !get(n).empty()) {
    // Milliseconds, as the spec writes it.
    o.timeout = Duration(
        whole(get(n), 1, static_cast<std::size_t>(kMaxConfigDuration.count()), fail_for(n)));
  }
  if (const char* n = "OTEL_BSP_MAX_EXPORT_BATCH_SIZE"; !get(n).empty())
    o.batch_size = whole(get(n), 1, kMaxBatch, fail_for(n));
  if (const char* n = "OTEL_BSP_MAX_QUEUE_SIZE"; !get(n).empty())
    o.queue_size = whole(get(n), 1, kMaxQueue, fail_for(n));
  if (const char* n = "OTEL_SERVICE_NAME"; !get(n).empty()) o.service_name = std::string(get(n));
  if (!get("OTEL_BSP_MAX_QUEUE_SIZE").empty() && !get("OTEL_BSP_MAX_EXPORT_BATCH_SIZE").empty())
    check_sizes(o, fail_for("OTEL_BSP_MAX_QUEUE_SIZE"));
}

}  // namespace toolbridge::config
