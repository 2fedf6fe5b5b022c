#include "gateway/session_table.h"

#include "transport/session_id.h"

namespace toolbridge::gateway {

std::shared_ptr<Session> SessionTable::add(boost::asio::io_context& io, const std::string& client) {
  auto s = std::make_shared<Session>(io, prefix_ + transport::random_session_id(), client);
  sessions_.emplace(s->id(), s);
  ++per_client_[client];
  return s;
}

std::shared_ptr<Session> SessionTable::find(std::string_view id) const {
  auto it = sessions_.find(id);
  return it == sessions_.end() ? nullptr : it->second;
}

void SessionTable::erase(const std::shared_ptr<Session>& session) {
  if (auto it = sessions_.find(session->id()); it != sessions_.end() && it->second == session)
    erase(it);
}

SessionTable::Map::iterator SessionTable::erase(Map::iterator it) {
  uncount(*it->second);
  return sessions_.erase(it);
}

void SessionTable::clear() {
  sessions_.clear();
  per_client_.clear();
}

std::size_t SessionTable::count_of(const std::string& client) const {
  auto it = per_client_.find(client);
  return it == per_client_.end() ? 0 : it->second;
}

std::shared_ptr<Session> SessionTable::idle_longest(const std::string* client,
                                                    Session::Clock::time_point seen_before) const {
  std::shared_ptr<Session> oldest;
  for (const auto& [id, s] : sessions_) {
    if (client && s->client() != *client) continue;
    if (!s->idle() || s->last_seen >= seen_before) continue;
    if (!oldest || s->last_seen < oldest->last_seen) oldest = s;
  }
  return oldest;
}

void SessionTable::uncount(const Session& s) {
  auto it = per_client_.find(s.client());
  if (it != per_client_.end() && --it->second == 0) per_client_.erase(it);
}

}  // namespace toolbridge::gateway
