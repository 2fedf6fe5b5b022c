#include "gateway/input_required.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <boost/beast/core/detail/base64.hpp>
#include <boost/json.hpp>
#include <random>

#include "json/envelope.h"
#include "json/parse.h"
#include "mcp/protocol.h"

namespace toolbridge::gateway {

namespace bj = boost::json;
namespace b64 = boost::beast::detail::base64;

namespace {

std::string error_object(int code, const std::string& message) {
  return R"({"code":)" + std::to_string(code) + R"(,"message":)" + json::quote(message) + "}";
}

std::string base64(std::string_view text) {
  std::string out(b64::encoded_size(text.size()), '\0');
  out.resize(b64::encode(out.data(), text.data(), text.size()));
  return out;
}

std::optional<std::string> unbase64(std::string_view text) {
  std::string out(b64::decoded_size(text.size()), '\0');
  const auto [written, read] = b64::decode(out.data(), text.data(), text.size());
  // `read` leaves out the padding.
  const std::size_t padding = text.ends_with("==") ? 2 : text.ends_with("=") ? 1 : 0;
  if (read != text.size() - padding) return std::nullopt;
  out.resize(written);
  return out;
}

// Splits "a:b:rest" at its first two colons.
bool split3(std::string_view s, std::string_view& a, std::string_view& b, std::string_view& c) {
  const auto one = s.find(':');
  if (one == std::string_view::npos) return false;
  const auto two = s.find(':', one + 1);
  if (two == std::string_view::npos) return false;
  a = s.substr(0, one);
  b = s.substr(one + 1, two - one - 1);
  c = s.substr(two + 1);
  return true;
}

}  // namespace

Conversation::Conversation(boost::asio::io_context& io, std::weak_ptr<Session> session,
                           bool can_stream, mcp::StatelessEnvelope envelope, bj::object provided,
                           bool has_progress)
    : PostStream(io, std::move(session), can_stream),
      envelope_(std::move(envelope)),
      provided_(std::move(provided)),
      has_progress_(has_progress) {}

void Conversation::on_notification(std::string message) {
  // Stateless clients get what they asked for on this request: progress when they sent a token,
  // log messages only when their _meta names a level, at or above it.
  const json::Envelope env = json::parse_envelope(message);
  bool wanted = env.method == "notifications/progress" && has_progress_;
  if (env.method == "notifications/message" && !envelope_.log_level.empty()) {
    boost::system::error_code ec;
    const bj::value p = json::parse(env.params.in(message), ec);
    const bj::value* level = !ec && p.is_object() ? p.as_object().if_contains("level") : nullptr;
    wanted = level && level->is_string() &&
             mcp::log_level_rank(level->as_string()) >= mcp::log_level_rank(envelope_.log_level);
  }
  // A task's follower reads them whatever the client accepts (its progress is the task's
  // statusMessage).
  if (wanted && (can_stream() || !task_id.empty()) && !detached) channel.push(std::move(message));
}

void Conversation::on_server_request(const std::string& method, std::string params, Reply reply) {
  std::string missing;
  if (method == "sampling/createMessage" && !envelope_.sampling) missing = "sampling";
  if (method == "elicitation/create" && !envelope_.elicitation) missing = "elicitation";
  if (method == "roots/list" && !envelope_.roots) missing = "roots";
  if (!missing.empty()) {
    // The revision's own error, so the server can pass it on to the client as it stands.
    const std::string message = "the agent's MCP client did not declare the " + missing +
                                " capability in _meta[\"" + std::string(mcp::kCapabilitiesMeta) +
                                "\"]";
    reply(true, R"({"code":)" + std::to_string(mcp::kMissingClientCapability) + R"(,"message":)" +
                    json::quote(message) + R"(,"data":{"requiredCapabilities":{")" + missing +
                    R"(":{}}}})");
    return;
  }
  std::string key;
  boost::system::error_code ec;
  bj::value p = json::parse(params.empty() ? std::string_view("{}") : params, ec);
  if (!ec && p.is_object()) {
    if (auto* meta = p.as_object().if_contains("_meta"); meta && meta->is_object()) {
      if (auto* k = meta->as_object().if_contains(kInputKeyMeta); k && k->is_string()) {
        key = std::string(k->as_string());
        meta->as_object().erase(kInputKeyMeta);
        if (meta->as_object().empty()) p.as_object().erase("_meta");
        params = bj::serialize(p);
      }
    }
  }
  if (key.empty()) key = "input-" + std::to_string(next_key_++);
  // Answered by inputResponses the request already carried (a retry that came without a state:
  // the call runs again and its questions are answered from what the client sent).
  if (auto* given = provided_.if_contains(key)) {
    std::string answer = bj::serialize(*given);
    provided_.erase(key);
    reply(false, std::move(answer));
    return;
  }
  while (waiting_.contains(key)) key += "'";
  asks_.push_back(Ask{key, method, params.empty() ? std::string("{}") : params, std::move(reply)});
  channel.notify();
}

std::string Conversation::input_required_result(const std::string& request_state) {
  std::string requests = "{";
  for (auto& ask : asks_) {
    if (requests.size() > 1) requests += ',';
    requests += json::quote(ask.key) + R"(:{"method":)" + json::quote(ask.method) +
                R"(,"params":)" + ask.params + "}";
    std::string key = ask.key;
    waiting_[key] = std::move(ask);
  }
  asks_.clear();
  requests += '}';
  return R"({"resultType":"input_required","inputRequests":)" + requests + R"(,"requestState":)" +
         json::quote(request_state) + "}";
}

std::string Conversation::pending_requests() {
  for (auto& ask : asks_) {
    std::string key = ask.key;
    waiting_[key] = std::move(ask);
  }
  asks_.clear();
  std::string requests = "{";
  for (const auto& [key, ask] : waiting_) {
    if (requests.size() > 1) requests += ',';
    requests += json::quote(key) + R"(:{"method":)" + json::quote(ask.method) + R"(,"params":)" +
                ask.params + "}";
  }
  return requests + '}';
}

void Conversation::provide(const bj::object& responses) {
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    const bj::value* answer = responses.if_contains(it->first);
    if (!answer) {
      ++it;
      continue;
    }
    auto reply = std::move(it->second.reply);
    it = waiting_.erase(it);
    reply(false, bj::serialize(*answer));
  }
  // What the client left out is asked again (the spec: re-request, not an error).
  for (auto& [key, ask] : waiting_) asks_.push_back(std::move(ask));
  waiting_.clear();
}

void Conversation::refuse_all(const std::string& why) {
  for (auto& [key, ask] : waiting_) ask.reply(true, error_object(json::kInternalError, why));
  waiting_.clear();
  for (auto& ask : asks_) ask.reply(true, error_object(json::kInternalError, why));
  asks_.clear();
}

InputRequired::InputRequired(std::size_t max_parked, std::chrono::milliseconds ttl,
                             const base::Clock& clock)
    : clock_(clock), max_parked_(max_parked), ttl_(ttl) {
  if (RAND_bytes(key_, sizeof key_) != 1) {
    std::random_device rd;  // OpenSSL's generator failing is near impossible; still a fresh key
    for (auto& b : key_) b = static_cast<unsigned char>(rd());
  }
}

std::string InputRequired::mac(std::string_view payload) const {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key_, sizeof key_, reinterpret_cast<const unsigned char*>(payload.data()),
       payload.size(), out, &len);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(len * 2);
  for (unsigned int i = 0; i < len; ++i) {
    hex += kHex[out[i] >> 4];
    hex += kHex[out[i] & 15];
  }
  return hex;
}

void InputRequired::drop(std::map<std::uint64_t, Entry>::iterator it, const std::string& why) {
  auto conv = std::move(it->second.conv);
  parked_.erase(it);
  conv->parked = false;
  conv->refuse_all(why);
}

void InputRequired::purge() {
  const auto now = clock_.now();
  for (auto it = parked_.begin(); it != parked_.end();) {
    auto next = std::next(it);
    if (it->second.expires <= now) {
      drop(it, "the agent did not answer the input request within " +
                   std::to_string(ttl_.count() / 1000) + " s (gateway.input_required_ttl)");
    }
    it = next;
  }
}

std::string InputRequired::park(const std::shared_ptr<Conversation>& conv) {
  purge();
  if (conv->id == 0) conv->id = next_id_++;
  while (!parked_.empty() && parked_.size() >= max_parked_) {
    drop(parked_.begin(),
         "too many calls wait for their agents' input (gateway.max_input_required)");
  }
  conv->parked = true;
  parked_[conv->id] = Entry{conv, clock_.now() + ttl_};
  const std::string payload = std::to_string(conv->id) + ":" + std::to_string(conv->round) + ":" +
                              conv->method + "\n" + conv->name;
  return base64(payload) + "." + mac(payload);
}

base::Expected<std::shared_ptr<Conversation>> InputRequired::claim(std::string_view state,
                                                                   std::string_view method,
                                                                   std::string_view name) {
  purge();
  const auto dot = state.rfind('.');
  const auto payload =
      dot == std::string_view::npos ? std::nullopt : unbase64(state.substr(0, dot));
  const std::string expected = payload ? mac(*payload) : std::string();
  const std::string_view given = dot == std::string_view::npos ? "" : state.substr(dot + 1);
  if (!payload || given.size() != expected.size() ||
      CRYPTO_memcmp(given.data(), expected.data(), expected.size()) != 0) {
    return base::fail(
        "requestState failed its integrity check: it was not issued by this gateway or was "
        "altered");
  }
  std::string_view id_text, round_text, rest;
  split3(*payload, id_text, round_text, rest);
  const auto nl = rest.find('\n');
  if (rest.substr(0, nl) != method ||
      (nl != std::string_view::npos && rest.substr(nl + 1) != name)) {
    return base::fail("requestState belongs to another request (" +
                      std::string(rest.substr(0, nl)) + "): retry the request it came with");
  }
  auto it = parked_.find(std::stoull(std::string(id_text)));
  if (it == parked_.end()) return std::shared_ptr<Conversation>();
  if (std::to_string(it->second.conv->round) != round_text)
    return base::fail("requestState is from an earlier round of this request; send the latest one");
  auto conv = std::move(it->second.conv);
  parked_.erase(it);
  conv->parked = false;
  return conv;
}

}  // namespace toolbridge::gateway
