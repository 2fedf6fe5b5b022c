#include "redis/redis_client.h"

#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <spdlog/spdlog.h>

#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <memory>

namespace toolbridge::redis {

namespace asio = boost::asio;

namespace {
// Commands waiting for Redis at once; beyond this a slow Redis gets no more (a miss at once).
constexpr std::size_t kMaxOutstanding = 10'000;
// After a failure, the next connection attempt waits this long (or the timeout, if longer).
constexpr std::chrono::milliseconds kRetryInterval{1'000};
}  // namespace

// Watches the hiredis socket for hiredis (ev.addRead & co). Deleted by hiredis's cleanup hook,
// which may run inside redisAsyncHandleRead: handlers hold `alive`, never `this` alone.
class RedisClient::Adapter {
 public:
  Adapter(asio::io_context& io, redisAsyncContext* ac)
      : ac_(ac), socket_(io, ac->c.fd), alive_(std::make_shared<bool>(true)) {
    ac->ev.data = this;
    ac->ev.addRead = [](void* p) { static_cast<Adapter*>(p)->want(true); };
    ac->ev.delRead = [](void* p) { static_cast<Adapter*>(p)->reading_ = false; };
    ac->ev.addWrite = [](void* p) { static_cast<Adapter*>(p)->want(false); };
    ac->ev.delWrite = [](void* p) { static_cast<Adapter*>(p)->writing_ = false; };
    ac->ev.cleanup = [](void* p) { delete static_cast<Adapter*>(p); };
  }
  ~Adapter() {
    *alive_ = false;
    boost::system::error_code ec;
    socket_.cancel(ec);
    socket_.release();  // hiredis closes its own descriptor
  }

 private:
  void want(bool read) {
    if (read) {
      reading_ = true;
      if (!read_armed_) arm(true);
    } else {
      writing_ = true;
      if (!write_armed_) arm(false);
    }
  }

  void arm(bool read) {
    (read ? read_armed_ : write_armed_) = true;
    const auto kind = read ? asio::posix::stream_descriptor::wait_read
                           : asio::posix::stream_descriptor::wait_write;
    socket_.async_wait(kind, [this, alive = alive_, read](boost::system::error_code ec) {
      if (!*alive) return;
      (read ? read_armed_ : write_armed_) = false;
      if (ec) return;
      bool& wanted = read ? reading_ : writing_;
      if (!wanted) return;
      if (read) {
        redisAsyncHandleRead(ac_);
      } else {
        redisAsyncHandleWrite(ac_);
      }
      // The context may be gone now (a disconnect inside the handler deletes this adapter).
      if (!*alive) return;
      if ((read ? reading_ : writing_) && !(read ? read_armed_ : write_armed_)) arm(read);
    });
  }

  redisAsyncContext* ac_;
  asio::posix::stream_descriptor socket_;
  std::shared_ptr<bool> alive_;
  bool reading_ = false;
  bool writing_ = false;
  bool read_armed_ = false;
  bool write_armed_ = false;
};

// One command waiting for its reply. Owned by the coroutine that waits (shared) and by hiredis
// until the reply callback (which always runs: with a null reply when the connection goes).
struct RedisClient::Pending {
  Pending(asio::io_context& io, const base::Clock& clock) : timer(io, clock) {}
  base::Timer timer;
  bool done = false;
  std::optional<RedisReply> reply;
  RedisClient* client = nullptr;  // null once the client is gone
};

RedisClient::RedisClient(asio::io_context& io, const base::Clock& clock, std::string host,
                         unsigned short port, std::chrono::milliseconds timeout)
    : io_(io), clock_(clock), host_(std::move(host)), port_(port), timeout_(timeout) {}

std::shared_ptr<RedisClient> RedisClient::at(asio::io_context& io, const base::Clock& clock,
                                             std::string_view address,
                                             std::chrono::milliseconds timeout) {
  const std::size_t colon = address.rfind(':');
  const auto port = static_cast<unsigned short>(std::stoi(std::string(address.substr(colon + 1))));
  return std::make_shared<RedisClient>(io, clock, std::string(address.substr(0, colon)), port,
                                       timeout);
}

RedisClient::~RedisClient() {
  if (ac_) {
    redisAsyncContext* ac = ac_;
    ac_ = nullptr;
    ac->data = nullptr;
    redisAsyncFree(ac);  // runs every pending callback with a null reply
  }
}

bool RedisClient::ensure_connection() {
  if (ac_) return true;
  const auto now = clock_.now();
  if (now < next_attempt_) return false;
  next_attempt_ = now + std::max(kRetryInterval, timeout_);
  redisAsyncContext* ac = redisAsyncConnect(host_.c_str(), port_);
  if (!ac) return false;
  if (ac->err) {
    spdlog::debug("cache: redis {}:{}: {}", host_, port_, ac->errstr);
    ++failures_;
    redisAsyncFree(ac);
    return false;
  }
  ac->data = this;
  new Adapter(io_, ac);  // owned by the context (its cleanup hook)
  redisAsyncSetConnectCallback(ac, &RedisClient::on_connect);
  redisAsyncSetDisconnectCallback(ac, &RedisClient::on_disconnect);
  ac_ = ac;
  return true;
}

void RedisClient::on_connect(const redisAsyncContext* ac, int status) {
  auto* self = static_cast<RedisClient*>(ac->data);
  if (!self) return;
  if (status == REDIS_OK) {
    self->connected_ = true;
    spdlog::info("cache: connected to redis {}:{}", self->host_, self->port_);
  } else {
    // hiredis frees the context after this callback.
    ++self->failures_;
    self->connected_ = false;
    self->ac_ = nullptr;
    spdlog::debug("cache: redis {}:{}: cannot connect: {}", self->host_, self->port_,
                  ac->errstr ? ac->errstr : "?");
  }
}

void RedisClient::on_disconnect(const redisAsyncContext* ac, int status) {
  auto* self = static_cast<RedisClient*>(ac->data);
  if (!self) return;
  if (self->connected_) {
    spdlog::warn("cache: redis {}:{} disconnected{}; its calls are misses until it is back",
                 self->host_, self->port_,
                 status == REDIS_OK ? "" : std::string(": ") + (ac->errstr ? ac->errstr : "?"));
  }
  if (status != REDIS_OK) ++self->failures_;
  self->connected_ = false;
  self->ac_ = nullptr;
  self->next_attempt_ = self->clock_.now() + std::max(kRetryInterval, self->timeout_);
}

void RedisClient::on_reply(redisAsyncContext* ac, void* r, void* privdata) {
  auto* holder = static_cast<std::shared_ptr<Pending>*>(privdata);
  std::shared_ptr<Pending> p = std::move(*holder);
  delete holder;
  if (!ac->data) p->client = nullptr;  // the client is being destroyed
  if (p->client && p->client->outstanding_ > 0) --p->client->outstanding_;
  if (p->done) return;  // a write, or an answer after its timeout
  p->done = true;
  if (const auto* reply = static_cast<const redisReply*>(r)) {
    RedisReply out;
    switch (reply->type) {
      case REDIS_REPLY_STRING:
        out.type = RedisReply::Type::kString;
        out.text.assign(reply->str, reply->len);
        break;
      case REDIS_REPLY_NIL:
        out.type = RedisReply::Type::kNil;
        break;
      case REDIS_REPLY_INTEGER:
        out.type = RedisReply::Type::kInteger;
        out.integer = reply->integer;
        break;
      case REDIS_REPLY_STATUS:
        out.type = RedisReply::Type::kStatus;
        out.text.assign(reply->str, reply->len);
        break;
      case REDIS_REPLY_ERROR:
        out.type = RedisReply::Type::kError;
        out.text.assign(reply->str, reply->len);
        break;
      default:
        break;
    }
    p->reply = std::move(out);
  }
  p->timer.cancel();
}

bool RedisClient::issue(const std::vector<std::string>& argv,
                        const std::shared_ptr<Pending>& pending) {
  if (outstanding_ >= kMaxOutstanding || !ensure_connection()) return false;
  std::vector<const char*> args;
  std::vector<std::size_t> lengths;
  for (const auto& a : argv) {
    args.push_back(a.data());
    lengths.push_back(a.size());
  }
  auto* holder = new std::shared_ptr<Pending>(pending);  // deleted by on_reply
  if (redisAsyncCommandArgv(ac_, &RedisClient::on_reply, holder, static_cast<int>(args.size()),
                            args.data(), lengths.data()) != REDIS_OK) {
    delete holder;
    return false;
  }
  ++outstanding_;
  return true;
}

void RedisClient::drop(const char* why) {
  if (!ac_) return;
  spdlog::warn("cache: redis {}:{} {}; its calls are misses until it answers again", host_, port_,
               why);
  ++failures_;
  redisAsyncContext* ac = ac_;
  ac_ = nullptr;
  connected_ = false;
  next_attempt_ = clock_.now() + std::max(kRetryInterval, timeout_);
  redisAsyncFree(ac);  // every command still waiting gets a null reply
}

bool RedisClient::send(const std::vector<std::string>& argv) {
  auto p = std::make_shared<Pending>(io_, clock_);
  p->client = this;
  p->done = true;  // nobody waits for the answer
  return issue(argv, p);
}

asio::awaitable<std::optional<RedisReply>> RedisClient::command(std::vector<std::string> argv) {
  auto p = std::make_shared<Pending>(io_, clock_);
  p->client = this;
  if (!issue(argv, p)) co_return std::nullopt;
  p->timer.expires_after(timeout_);
  boost::system::error_code ec;
  co_await p->timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  if (p->done) co_return std::move(p->reply);
  p->done = true;  // an answer after this is dropped
  if (p->client) drop("did not answer in time");
  co_return std::nullopt;
}

}  // namespace toolbridge::redis
