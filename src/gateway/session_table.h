#pragma once
// The open downstream sessions, counted per client address so that one client cannot take the
// whole table: at a cap, the session idle longest (nothing in flight, no open stream) is the
// one to close if it has been idle long enough (gateway.session_reclaim_after); else a new one
// is refused.
#include <boost/asio/io_context.hpp>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "gateway/session.h"

namespace toolbridge::gateway {

class SessionTable {
 public:
  // Looked up by the header's string_view without making a std::string per request.
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using Map = std::unordered_map<std::string, std::shared_ptr<Session>, Hash, std::equal_to<>>;

  std::shared_ptr<Session> add(boost::asio::io_context& io, const std::string& client);
  // Session ids start with `gateway_id` + '.' (gateway.gateway_id): a load balancer rule, or
  // another gateway, can tell which gateway holds a session from its Mcp-Session-Id alone.
  void set_owner(std::string gateway_id) {
    prefix_ = gateway_id.empty() ? std::string() : gateway_id + ".";
  }
  std::shared_ptr<Session> find(std::string_view id) const;
  // Forgets `session` if it is the one registered under its id.
  void erase(const std::shared_ptr<Session>& session);
  Map::iterator erase(Map::iterator it);
  void clear();

  std::size_t size() const { return sessions_.size(); }
  std::size_t count_of(const std::string& client) const;
  bool contains(const std::string& id) const { return sessions_.contains(id); }
  // The idle session (of `client`, or of anyone if null) seen longest ago, if it was last seen
  // before `seen_before`; null if there is none.
  std::shared_ptr<Session> idle_longest(const std::string* client,
                                        Session::Clock::time_point seen_before) const;

  Map::iterator begin() { return sessions_.begin(); }
  Map::iterator end() { return sessions_.end(); }

 private:
  std::string prefix_;
  void uncount(const Session& s);

  Map sessions_;
  std::unordered_map<std::string, std::size_t> per_client_;
};

}  // namespace toolbridge::gateway
