#include <spdlog/spdlog.h>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "json/parse.h"
#include "upstream/instance.h"

// The instance's own requests to its server: the initialize handshake, the catalog (tools,
// resources, templates, prompts, with pagination) and the requests they are made of.
namespace toolbridge::upstream {

namespace asio = boost::asio;
namespace bj = boost::json;

namespace {
// The client capabilities the gateway declares upstream: everything it can route back to an
// agent. Whether the agent itself supports it is checked per request, downstream. `tasks`: it
// understands the tasks of 2025-11-25 (a server's own tasks are passed through,
// docs/tasks.md); it takes no task-augmented requests itself, so it declares no member of it.
constexpr std::string_view kClientCapabilities =
    R"({"roots":{"listChanged":true},"sampling":{},"elicitation":{},"tasks":{}})";

// capabilities.tasks.requests.tools.call and capabilities.tasks.cancel of a 2025-11-25 server.
void read_task_capabilities(const bj::object& caps, mcp::ServerCapabilities& out) {
  const auto* tasks = caps.if_contains("tasks");
  if (!tasks || !tasks->is_object()) return;
  out.tasks_cancel = tasks->as_object().contains("cancel");
  const auto* requests = tasks->as_object().if_contains("requests");
  const auto* tools =
      requests && requests->is_object() ? requests->as_object().if_contains("tools") : nullptr;
  out.tasks_tools_call = tools && tools->is_object() && tools->as_object().contains("call");
}
}  // namespace

void Instance::keep_server_info(const bj::object& result) {
  constexpr std::size_t kMaxInfo = 256;  // a server's name or version longer than this is cut
  const auto* info = result.if_contains("serverInfo");
  if (!info || !info->is_object()) return;
  auto text = [&](const char* key) {
    const auto* v = info->as_object().if_contains(key);
    if (!v || !v->is_string()) return std::string();
    const auto& s = v->as_string();
    return std::string(s.data(), std::min<std::size_t>(s.size(), kMaxInfo));
  };
  info_name_ = text("name");
  info_version_ = text("version");
}

asio::awaitable<std::string> Instance::initialize() {
  auto self = shared_from_this();

  // Everything up to the first catalog is bounded by one startup timeout.
  base::Timer limit(io_, clock_, server_.startup_timeout);
  bool timed_out = false;
  limit.async_wait([this, &timed_out, self](boost::system::error_code ec) {
    if (ec || state_ != State::kStarting) return;
    timed_out = true;
    fail_pending(Failure::kTimeout, "startup timeout");
  });

  if (co_await discover()) {
    std::string failure = co_await fetch_catalog();
    limit.cancel();
    if (failure.empty() && state_ == State::kStarting) {
      state_ = State::kReady;
      co_return std::string();
    }
    if (timed_out) failure = "did not finish listing within startup_timeout";
    if (failure.empty()) failure = exit_reason_;
    co_await stop();
    co_return failure;
  }
  const std::string init_params = std::string(R"({"protocolVersion":")") +
                                  std::string(mcp::to_string(mcp::kLatestVersion)) +
                                  R"(","capabilities":)" + std::string(kClientCapabilities) +
                                  R"(,"clientInfo":{"name":"toolbridge","version":"0.1.0"}})";
  const base::Expected<bj::value> init = co_await request("initialize", init_params);
  std::string failure;
  if (!init) {
    failure = "initialize failed: " + init.error();
  } else if (!init->is_object()) {
    failure = "initialize returned no result object";
  } else {
    const auto& r = init->as_object();
    const auto* pv = r.if_contains("protocolVersion");
    auto v = pv && pv->is_string() ? mcp::parse_version(pv->as_string().c_str()) : std::nullopt;
    if (!v) {
      failure = "server chose protocol version " +
                (pv ? bj::serialize(*pv) : std::string("(none)")) +
                ", which toolbridge does not support";
    } else {
      version_ = *v;
      keep_server_info(r);
      transport_->set_protocol_version(std::string(mcp::to_string(version_)));
      if (const auto* c = r.if_contains("capabilities"); c && c->is_object()) {
        const auto& caps = c->as_object();
        caps_.tools = caps.contains("tools");
        if (caps_.tools && caps.at("tools").is_object()) {
          const auto* lc = caps.at("tools").as_object().if_contains("listChanged");
          caps_.tools_list_changed = lc && lc->is_bool() && lc->as_bool();
        }
        caps_.resources = caps.contains("resources");
        caps_.prompts = caps.contains("prompts");
        caps_.logging = caps.contains("logging");
        caps_.completions = caps.contains("completions");
        if (version_ >= mcp::Version::k2025_11_25) read_task_capabilities(caps, caps_);
      }
      write(json::make_notification("notifications/initialized", {}));
      failure = co_await fetch_catalog();
    }
  }
  limit.cancel();
  if (timed_out) {
    failure = "did not finish initialize and listing within " +
              std::to_string(server_.startup_timeout.count()) + " ms (startup_timeout)";
  }
  if (failure.empty() && state_ != State::kStarting) failure = exit_reason_;
  // An unreachable remote server: its transport's reason alone says it best.
  if (server_.remote() && !exit_reason_.empty() && !timed_out) failure = exit_reason_;
  if (!failure.empty()) {
    if (!exit_reason_.empty() && failure != exit_reason_) failure += "; " + exit_reason_;
    co_await stop();
    co_return failure;
  }
  state_ = State::kReady;
  co_return std::string();
}

asio::awaitable<std::string> Instance::fetch_catalog(std::chrono::milliseconds timeout) {
  Catalog fresh;
  std::string err;
  if (caps_.tools) {
    err = co_await list_all("tools/list", "tools", fresh.tools, timeout);
    if (!err.empty()) co_return err;
  }
  if (caps_.resources) {
    err = co_await list_all("resources/list", "resources", fresh.resources, timeout);
    if (!err.empty()) co_return err;
    err = co_await list_all("resources/templates/list", "resourceTemplates",
                            fresh.resource_templates, timeout);
    // Some servers have resources but no templates method; that is not fatal.
    if (!err.empty()) spdlog::debug("[{}] resources/templates/list: {}", server_.name, err);
  }
  if (caps_.prompts) {
    err = co_await list_all("prompts/list", "prompts", fresh.prompts, timeout);
    if (!err.empty()) co_return err;
  }
  catalog_ = std::move(fresh);
  co_return std::string();
}

asio::awaitable<std::string> Instance::list_all(std::string_view method, std::string_view key,
                                                bj::array& into,
                                                std::chrono::milliseconds timeout) {
  std::string cursor;
  for (int page = 0; page < 10'000; ++page) {
    std::string params = cursor.empty() ? std::string("{}") : R"({"cursor":)" + cursor + "}";
    const base::Expected<bj::value> answer = co_await request(method, params, timeout);
    if (!answer) co_return std::string(method) + " failed: " + answer.error();
    const bj::value& r = *answer;
    if (!r.is_object()) co_return std::string(method) + " returned no object";
    if (const auto* items = r.as_object().if_contains(key); items && items->is_array()) {
      for (const auto& item : items->as_array()) into.push_back(item);
    }
    const auto* next = r.as_object().if_contains("nextCursor");
    if (!next || next->is_null()) co_return std::string();
    const std::string next_text = bj::serialize(*next);
    if (next_text == cursor) co_return std::string(method) + " repeated its cursor " + next_text;
    cursor = next_text;
  }
  co_return std::string(method) + " did not end after 10000 pages";
}

asio::awaitable<base::Expected<bj::value>> Instance::request(std::string_view method,
                                                             std::string params,
                                                             std::chrono::milliseconds timeout,
                                                             bj::value* error_object) {
  std::string error;
  if (state_ == State::kExited || state_ == State::kStopping) {
    error = exit_reason_.empty() ? "the server is not running" : exit_reason_;
    co_return base::Unexpected{std::move(error)};
  }
  const std::uint64_t id = next_id_++;
  base::Timer done(io_, clock_);
  bj::value result;
  bool answered = false;
  Pending p;
  p.internal = [&](std::string_view line, const json::Envelope& env) {
    answered = true;
    --own_in_flight_;
    if (env.kind != json::Kind::kResponse) {
      error = std::string(line);  // a failure message from fail_pending
    } else if (!env.error.empty()) {
      boost::system::error_code ec;
      bj::value e = json::parse(env.error.in(line), ec);
      const auto* m = e.is_object() ? e.as_object().if_contains("message") : nullptr;
      if (ec) {
        error = "unreadable error (" + ec.message() + ")";
      } else {
        error = m && m->is_string() ? std::string(m->as_string()) : bj::serialize(e);
        if (error_object) *error_object = std::move(e);
      }
    } else {
      boost::system::error_code ec;
      result = json::parse(env.result.in(line), ec);
      if (ec) error = "malformed result (" + ec.message() + ")";
    }
    done.cancel();
  };
  pending_.emplace(id, std::move(p));
  ++own_in_flight_;
  const std::string request_text = json::make_request(std::to_string(id), method, params);
  write(request_text);
  base::Timer limit(io_, clock_);
  if (timeout.count() > 0) {
    limit.expires_after(timeout);
    limit.async_wait([this, id, &answered, &error, &done, method = std::string(method),
                      timeout](boost::system::error_code ec) {
      if (ec || answered || !pending_.erase(id)) return;
      answered = true;
      --own_in_flight_;
      error = fmt::format("no answer to {} within {} ms", method, timeout.count());
      done.cancel();
    });
  }
  boost::system::error_code ec;
  if (!answered) co_await done.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  limit.cancel();
  // A JSON-RPC error whose message is empty reads as an answer, as it always has.
  if (!error.empty()) co_return base::Unexpected{std::move(error)};
  co_return result;
}

}  // namespace toolbridge::upstream
