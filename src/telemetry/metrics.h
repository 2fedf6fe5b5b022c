#pragma once
// Prometheus text exposition of the gateway's counters, gauges and histograms. Single-threaded
// like the rest of the gateway: no atomics on the hot path.
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace toolbridge::telemetry {

// Label sets are stored pre-rendered ("server=\"a\",tool=\"b\"") so lookups are one map find.
std::string labels(std::initializer_list<std::pair<const char*, std::string_view>> pairs);

class Histogram {
 public:
  static constexpr std::array<double, 14> kBuckets = {
      0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
  void observe(double seconds);
  std::array<std::uint64_t, kBuckets.size()> counts{};
  std::uint64_t count = 0;
  double sum = 0;
};

class Metrics {
 public:
  void add(const std::string& name, const std::string& labels, std::uint64_t n = 1) {
    counters_[name][labels] += n;
  }
  void observe(const std::string& name, const std::string& labels, double seconds) {
    histograms_[name][labels].observe(seconds);
  }
  // The cell of one labelled series, created at 0 if absent. The reference stays valid for the
  // registry's life, so a hot path can look a series up once and bump it directly.
  std::uint64_t& counter_cell(const std::string& name, const std::string& labels) {
    return counters_[name][labels];
  }
  Histogram& histogram_cell(const std::string& name, const std::string& labels) {
    return histograms_[name][labels];
  }
  // Gauges are read when /metrics is rendered: they always reflect live state.
  using GaugeFn = std::function<void(std::vector<std::pair<std::string, double>>& out)>;
  void gauge(const std::string& name, const std::string& help, GaugeFn fn);
  void describe(const std::string& name, const std::string& type, const std::string& help);

  std::string render() const;
  std::uint64_t counter(const std::string& name, const std::string& labels) const;
  // The sum of a counter over all its label sets (0 if it has none).
  std::uint64_t counter_total(const std::string& name) const;

 private:
  struct Meta {
    std::string type, help;
  };
  std::map<std::string, std::map<std::string, std::uint64_t>> counters_;
  std::map<std::string, std::map<std::string, Histogram>> histograms_;
  std::map<std::string, GaugeFn> gauges_;
  std::map<std::string, Meta> meta_;
};

}  // namespace toolbridge::telemetry
