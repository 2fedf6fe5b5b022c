#include "upstream/recycle.h"

#include <algorithm>

namespace toolbridge::upstream {

bool Recycling::calls_exhausted(std::uint64_t calls) const {
  return limits_.max_calls > 0 && calls >= limits_.max_calls;
}

bool Recycling::too_old(const MemberUse& m, time_point now) const {
  return m.ready && limits_.max_age.count() > 0 && now - m.ready_at >= limits_.max_age;
}

bool Recycling::idle_too_long(const MemberUse& m, time_point now) const {
  return m.ready && m.in_flight == 0 && limits_.idle_ttl.count() > 0 &&
         now - m.last_used >= limits_.idle_ttl;
}

std::vector<std::size_t> Recycling::idle_pool_members(std::span<const MemberUse> members,
                                                      std::size_t live, time_point now) const {
  std::vector<std::size_t> out;
  if (limits_.idle_ttl.count() == 0) return out;
  auto idle = static_cast<std::size_t>(
      std::count_if(members.begin(), members.end(),
                    [](const MemberUse& m) { return m.ready && m.in_flight == 0; }));
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (live <= limits_.min_members || idle <= limits_.spares) break;
    if (idle_too_long(members[i], now)) {
      out.push_back(i);
      --idle;
      --live;
    }
  }
  return out;
}

std::vector<std::string> expired_bindings(std::span<const BindingUse> bindings,
                                          base::Clock::time_point cutoff) {
  std::vector<std::string> out;
  for (const BindingUse& b : bindings) {
    if (!b.busy && b.last_used < cutoff) out.push_back(b.key);
  }
  return out;
}

}  // namespace toolbridge::upstream
