#include "upstream/session_dir.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace toolbridge::upstream {

namespace {
void replace_all(std::string& text, std::string_view from, std::string_view to) {
  for (std::size_t at = text.find(from); at != std::string::npos;
       at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
}
}  // namespace

config::Server for_session(const config::Server& server, std::string_view id,
                           std::string_view dir) {
  config::Server out = server;
  auto expand = [&](std::string& text) {
    replace_all(text, "${session.id}", id);
    replace_all(text, "${session.dir}", dir);
  };
  for (auto& a : out.args) expand(a);
  for (auto& [k, v] : out.env) expand(v);
  expand(out.cwd);
  return out;
}

std::string SessionDirs::make(std::uint64_t number, std::string& error) {
  if (root_.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    root_ = fmt::format("{}/toolbridge-{}", tmp && *tmp ? tmp : "/tmp", ::getpid());
  }
  if (::mkdir(root_.c_str(), 0700) != 0 && errno != EEXIST) {
    error = fmt::format("cannot create session_dir_root {}: {}", root_, std::strerror(errno));
    return {};
  }
  std::string dir = fmt::format("{}/{}-{}", root_, server_name_, number);
  if (::mkdir(dir.c_str(), 0700) != 0) {
    error = fmt::format("cannot create session directory {}: {}", dir, std::strerror(errno));
    return {};
  }
  return dir;
}

void SessionDirs::remove(const std::string& dir) const {
  if (dir.empty() || keep_) return;
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  if (ec) {
    spdlog::warn("[{}] could not remove session directory {}: {}", server_name_, dir, ec.message());
  }
}

}  // namespace toolbridge::upstream
