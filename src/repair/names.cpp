#include "repair/names.h"

#include <algorithm>

#include "config/suggestion.h"

namespace toolbridge::repair {

std::string normalize_name(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  for (char c : name) {
    if (c == '-' || c == '.' || c == '/' || c == ' ' || c == '_') {
      if (!out.empty() && out.back() != '_') out += '_';
    } else if (c >= 'A' && c <= 'Z') {
      out += static_cast<char>(c - 'A' + 'a');
    } else {
      out += c;
    }
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out;
}

void append_pointer_token(std::string& out, std::string_view name) {
  for (char c : name) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
}

std::string_view to_string(MatchKind k) {
  switch (k) {
    case MatchKind::kExact:
      return "exact";
    case MatchKind::kNormalised:
      return "normalised";
    case MatchKind::kFuzzy:
      return "fuzzy";
    case MatchKind::kAmbiguous:
      return "ambiguous";
    case MatchKind::kNone:
      return "none";
  }
  return "none";
}

std::size_t fuzzy_bound(std::size_t length, config::RepairMode mode) {
  if (mode == config::RepairMode::kOff || length < 4) return 0;
  if (mode == config::RepairMode::kAggressive) return std::min<std::size_t>(3, length / 3);
  return length <= 7 ? 1 : 2;
}

namespace {

// Candidates whose spellings satisfy `hit`, in order.
template <typename Hit>
std::vector<std::size_t> select(const std::vector<std::vector<std::string>>& spellings, Hit hit) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < spellings.size(); ++i) {
    if (std::any_of(spellings[i].begin(), spellings[i].end(), hit)) out.push_back(i);
  }
  return out;
}

NameMatch decide(MatchKind kind, std::vector<std::size_t> found) {
  if (found.empty()) return {};
  if (found.size() > 1) kind = MatchKind::kAmbiguous;
  return NameMatch{kind, std::move(found)};
}

}  // namespace

NameMatch match_name(std::string_view want, const std::vector<std::vector<std::string>>& spellings,
                     config::RepairMode mode) {
  if (auto exact = select(spellings, [&](const std::string& s) { return s == want; });
      !exact.empty() || mode == config::RepairMode::kOff) {
    return decide(MatchKind::kExact, std::move(exact));
  }
  // Names are short; a long one is no typo, and matching it would cost its length per candidate.
  if (want.size() > kMaxMatchedName) return {};
  const std::string norm = normalize_name(want);
  if (norm.empty()) return {};
  if (auto same =
          select(spellings, [&](const std::string& s) { return normalize_name(s) == norm; });
      !same.empty()) {
    return decide(MatchKind::kNormalised, std::move(same));
  }
  const std::size_t bound = fuzzy_bound(norm.size(), mode);
  if (bound == 0) return {};
  // Every candidate within the bound counts, not only the nearest: "serch" between "search"
  // and "stretch" is a guess either way.
  std::vector<std::pair<std::size_t, std::size_t>> near;  // (distance, index)
  for (std::size_t i = 0; i < spellings.size(); ++i) {
    std::size_t best = bound + 1;
    for (const auto& s : spellings[i]) {
      best = std::min(best, config::edit_distance(norm, normalize_name(s)));
    }
    if (best <= bound) near.emplace_back(best, i);
  }
  std::sort(near.begin(), near.end());
  std::vector<std::size_t> found;
  for (const auto& [d, i] : near) found.push_back(i);
  if (found.empty() && mode == config::RepairMode::kAggressive) {
    // "python" for "run_python_code": the name is whole words of exactly one candidate.
    const std::string word = "_" + norm + "_";
    found = select(spellings, [&](const std::string& s) {
      return ("_" + normalize_name(s) + "_").find(word) != std::string::npos;
    });
  }
  return decide(MatchKind::kFuzzy, std::move(found));
}

}  // namespace toolbridge::repair
