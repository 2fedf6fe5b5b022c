#include "report.h"

#include <fmt/format.h>

#include <boost/json/serialize.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace toolbridge::bench {

namespace bj = boost::json;

namespace {
// Display width of UTF-8 text (column headers have µ): code points, not bytes.
std::size_t width_of(const std::string& s) {
  return static_cast<std::size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}
std::string pad(const std::string& s, std::size_t width, bool left) {
  const std::string fill(width > width_of(s) ? width - width_of(s) : 0, ' ');
  return left ? s + fill : fill + s;
}
}  // namespace

double Latencies::percentile(double p) const {
  if (us_.empty()) return 0;
  std::vector<double> sorted = us_;
  const auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  const std::size_t index = std::min(sorted.size() - 1, rank == 0 ? 0 : rank - 1);
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(index), sorted.end());
  return sorted[index];
}

double Latencies::max() const { return us_.empty() ? 0 : *std::max_element(us_.begin(), us_.end()); }

double Latencies::mean() const {
  return us_.empty() ? 0 : std::accumulate(us_.begin(), us_.end(), 0.0) / static_cast<double>(us_.size());
}

Table::Table(std::string scenario, std::string title, std::vector<Column> columns)
    : scenario_(std::move(scenario)), title_(std::move(title)), columns_(std::move(columns)) {}

void Table::add_row(std::vector<bj::value> cells) {
  cells.resize(columns_.size());
  rows_.push_back(std::move(cells));
}

std::string Table::format(const bj::value& v, int decimals) const {
  if (v.is_string()) return std::string(v.as_string());
  if (v.is_int64()) return std::to_string(v.as_int64());
  if (v.is_uint64()) return std::to_string(v.as_uint64());
  if (v.is_double()) {
    const double d = v.as_double();
    if (!std::isfinite(d)) return "-";
    return fmt::format("{:.{}f}", d, decimals);
  }
  if (v.is_null()) return "-";
  return bj::serialize(v);
}

void Table::print(std::ostream& out) const {
  std::vector<std::vector<std::string>> text;
  std::vector<std::size_t> width(columns_.size());
  for (std::size_t c = 0; c < columns_.size(); ++c) width[c] = width_of(columns_[c].name);
  for (const auto& row : rows_) {
    auto& line = text.emplace_back();
    for (std::size_t c = 0; c < columns_.size(); ++c) {
      line.push_back(format(row[c], columns_[c].decimals));
      width[c] = std::max(width[c], width_of(line.back()));
    }
  }
  out << "\n## " << title_ << "\n\n";
  auto emit = [&](const std::vector<std::string>& cells, bool header) {
    out << "|";
    for (std::size_t c = 0; c < cells.size(); ++c) {
      // Text left-aligned, numbers right-aligned, like a spreadsheet.
      const bool left = header || (!rows_.empty() && rows_[0][c].is_string());
      out << " " << pad(cells[c], width[c], left) << " |";
    }
    out << "\n";
  };
  std::vector<std::string> names;
  for (const auto& col : columns_) names.push_back(col.name);
  emit(names, true);
  out << "|";
  for (std::size_t c = 0; c < columns_.size(); ++c) out << std::string(width[c] + 2, '-') << "|";
  out << "\n";
  for (const auto& line : text) emit(line, false);
  for (const auto& n : notes_) out << "\n" << n;
  if (!notes_.empty()) out << "\n";
  out.flush();
}

bj::object Table::to_json() const {
  bj::array rows;
  for (const auto& row : rows_) {
    bj::object o;
    for (std::size_t c = 0; c < columns_.size(); ++c) o[columns_[c].name] = row[c];
    rows.push_back(std::move(o));
  }
  bj::array notes;
  for (const auto& n : notes_) notes.push_back(bj::string(n));
  return bj::object{{"scenario", scenario_}, {"title", title_}, {"rows", std::move(rows)}, {"notes", std::move(notes)}};
}

}  // namespace toolbridge::bench
