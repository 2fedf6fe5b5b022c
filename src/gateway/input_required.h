#pragma once
// Translation of server→client requests for stateless (2026-07-28) clients. A handshake-era
// server asks for sampling, elicitation or roots in the middle of a call; a stateless client
// cannot be sent a request, so the gateway answers its POST with an `input_required` result
// (the server's requests as `inputRequests`, plus a signed `requestState`) while the call stays
// parked on its instance. The client's retry carries `inputResponses` and the state back: the
// parked server requests get their answers and the same call goes on.
#include <boost/asio/io_context.hpp>
#include <boost/json/object.hpp>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/expected.h"
#include "gateway/session.h"
#include "mcp/revision.h"

namespace toolbridge::gateway {

// params._meta key by which a server names the key of its request in `inputRequests` (removed
// before the client sees it); without it keys are "input-1", "input-2", … in the order asked.
inline constexpr std::string_view kInputKeyMeta = mcp::kInputKeyMeta;

// One stateless request's call across its rounds: the events of the call (a PostStream, so the
// pipeline sees nothing new) plus the server requests waiting for the client's input.
class Conversation : public PostStream {
 public:
  Conversation(boost::asio::io_context& io, std::weak_ptr<Session> session, bool can_stream,
               mcp::StatelessEnvelope envelope, boost::json::object provided, bool has_progress);

  void on_notification(std::string message) override;
  void on_server_request(const std::string& method, std::string params, Reply reply) override;

  // Server requests not yet sent to the client.
  struct Ask {
    std::string key;
    std::string method;
    std::string params;
    Reply reply;
  };
  bool has_asks() const { return !asks_.empty(); }
  // The input_required result for the asks so far (they then wait for inputResponses).
  std::string input_required_result(const std::string& request_state);
  // Answers the waiting requests whose keys `responses` holds; the others are asked again.
  void provide(const boost::json::object& responses);
  // Tasks: every server request not yet answered, as an `inputRequests` map ("{}" if none); they
  // then wait for inputResponses.
  std::string pending_requests();
  // Every waiting request is refused (the conversation was dropped).
  void refuse_all(const std::string& why);

  std::uint64_t id = 0;  // set when first parked
  int round = 0;         // the exchange answering it now (a new one per retry)
  bool parked = false;   // answered with input_required; waiting for the retry
  std::string method;    // what the retry must repeat
  std::string name;
  std::shared_ptr<Session> session;  // keeps the stateless session while the call runs
  // Tasks extension: the call may become a task (its client negotiated it and the tool supports
  // it); once it is one, `task_id` names it and no HTTP exchange owns the call any more.
  bool may_become_task = false;
  std::string task_id;

 private:
  mcp::StatelessEnvelope envelope_;
  boost::json::object provided_;  // inputResponses of a request that came without a state
  bool has_progress_;
  int next_key_ = 1;
  std::vector<Ask> asks_;
  std::map<std::string, Ask, std::less<>> waiting_;  // sent; awaiting inputResponses
};

// Signs request states with a key made at start (HMAC-SHA256), and holds the parked
// conversations, bounded in count and lifetime.
class InputRequired {
 public:
  InputRequired(std::size_t max_parked, std::chrono::milliseconds ttl, const base::Clock& clock);

  // Parks `conv` (again, for a later round) and returns the state the client must echo.
  std::string park(const std::shared_ptr<Conversation>& conv);
  // The conversation a retry's state names. A failure: the state is forged, altered or belongs
  // to another method or name (never trusted); nullptr: an authentic state whose conversation
  // ended or expired (the call is run again).
  base::Expected<std::shared_ptr<Conversation>> claim(std::string_view state,
                                                      std::string_view method,
                                                      std::string_view name);
  void forget(const Conversation& conv) { parked_.erase(conv.id); }
  std::size_t size() const { return parked_.size(); }

  // HMAC-SHA256 of `payload` under this gateway's key, as hex.
  std::string mac(std::string_view payload) const;

 private:
  using Clock = base::Clock;
  struct Entry {
    std::shared_ptr<Conversation> conv;
    Clock::time_point expires;
  };
  void drop(std::map<std::uint64_t, Entry>::iterator it, const std::string& why);
  void purge();

  const base::Clock& clock_;
  std::size_t max_parked_;
  std::chrono::milliseconds ttl_;
  unsigned char key_[32];
  std::uint64_t next_id_ = 1;
  std::map<std::uint64_t, Entry> parked_;  // by id: the oldest first
};

}  // namespace toolbridge::gateway
