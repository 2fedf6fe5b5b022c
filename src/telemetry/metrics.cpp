#include "telemetry/metrics.h"

#include <fmt/format.h>

namespace toolbridge::telemetry {

namespace {
std::string escape(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string series(const std::string& name, const std::string& labels) {
  return labels.empty() ? name : name + "{" + labels + "}";
}
}  // namespace

std::string labels(std::initializer_list<std::pair<const char*, std::string_view>> pairs) {
  std::string out;
  for (const auto& [k, v] : pairs) {
    if (!out.empty()) out += ',';
    out += k;
    out += "=\"";
    out += escape(v);
    out += '"';
  }
  return out;
}

void Histogram::observe(double seconds) {
  for (std::size_t i = 0; i < kBuckets.size(); ++i) {
    if (seconds <= kBuckets[i]) ++counts[i];
  }
  ++count;
  sum += seconds;
}

void Metrics::gauge(const std::string& name, const std::string& help, GaugeFn fn) {
  gauges_[name] = std::move(fn);
  meta_[name] = {"gauge", help};
}

void Metrics::describe(const std::string& name, const std::string& type, const std::string& help) {
  meta_[name] = {type, help};
}

std::uint64_t Metrics::counter(const std::string& name, const std::string& labels) const {
  auto it = counters_.find(name);
  if (it == counters_.end()) return 0;
  auto jt = it->second.find(labels);
  return jt == it->second.end() ? 0 : jt->second;
}

std::uint64_t Metrics::counter_total(const std::string& name) const {
  auto it = counters_.find(name);
  if (it == counters_.end()) return 0;
  std::uint64_t sum = 0;
  for (const auto& [labels, n] : it->second) sum += n;
  return sum;
}

std::string Metrics::render() const {
  std::string out;
  auto header = [&](const std::string& name, const char* fallback_type) {
    auto it = meta_.find(name);
    if (it != meta_.end() && !it->second.help.empty()) {
      out += fmt::format("# HELP {} {}\n", name, it->second.help);
    }
    out += fmt::format("# TYPE {} {}\n", name, it != meta_.end() ? it->second.type : fallback_type);
  };
  for (const auto& [name, meta] : meta_) {
    // Declared counters with no samples yet still appear, so dashboards see them from start.
    if (meta.type == "counter" && !counters_.contains(name)) header(name, "counter");
  }
  for (const auto& [name, by_label] : counters_) {
    header(name, "counter");
    for (const auto& [l, v] : by_label) out += fmt::format("{} {}\n", series(name, l), v);
  }
  for (const auto& [name, by_label] : histograms_) {
    header(name, "histogram");
    for (const auto& [l, h] : by_label) {
      const std::string sep = l.empty() ? "" : ",";
      for (std::size_t i = 0; i < Histogram::kBuckets.size(); ++i) {
        out += fmt::format("{}_bucket{{{}{}le=\"{}\"}} {}\n", name, l, sep, Histogram::kBuckets[i],
                           h.counts[i]);
      }
      out += fmt::format("{}_bucket{{{}{}le=\"+Inf\"}} {}\n", name, l, sep, h.count);
      out += fmt::format("{} {}\n", series(name + "_sum", l), h.sum);
      out += fmt::format("{} {}\n", series(name + "_count", l), h.count);
    }
  }
  for (const auto& [name, fn] : gauges_) {
    header(name, "gauge");
    std::vector<std::pair<std::string, double>> samples;
    fn(samples);
    for (const auto& [l, v] : samples) out += fmt::format("{} {}\n", series(name, l), v);
  }
  return out;
}

}  // namespace toolbridge::telemetry
