#pragma once
// What a scenario produces: latency samples summarised into percentiles, and one table per
// scenario that is printed for people and written as JSON rows for machines.
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace toolbridge::bench {

// Latency samples in microseconds.
class Latencies {
 public:
  void reserve(std::size_t n) { us_.reserve(n); }
  void add(double us) { us_.push_back(us); }
  std::size_t count() const { return us_.size(); }
  // p in [0, 100]; nearest-rank on a sorted copy. 0 when empty.
  double percentile(double p) const;
  double max() const;
  double mean() const;

 private:
  std::vector<double> us_;
};

// One table: named columns, each with how many decimals to print; cells are JSON values so the
// same rows are printed and written to --json.
class Table {
 public:
  struct Column {
    std::string name;
    int decimals = 0;  // for numbers; strings and integers print as they are
  };
  Table(std::string scenario, std::string title, std::vector<Column> columns);

  // Cells in column order.
  void add_row(std::vector<boost::json::value> cells);
  void print(std::ostream& out) const;
  boost::json::object to_json() const;
  const std::string& scenario() const { return scenario_; }
  // Notes printed under the table (what a ratio is relative to, who failed and why).
  void add_note(std::string note) { notes_.push_back(std::move(note)); }

 private:
  std::string format(const boost::json::value& v, int decimals) const;
  std::string scenario_;
  std::string title_;
  std::vector<Column> columns_;
  std::vector<std::vector<boost::json::value>> rows_;
  std::vector<std::string> notes_;
};

}  // namespace toolbridge::bench
