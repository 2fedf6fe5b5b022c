#include "upstream/session_dir.h"

#include <fmt/format.h>
#include <openssl/evp.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace toolbridge::upstream {

namespace {

// One pass from left to right: text a substitution inserts is never read again, so a value
// that itself contains "${session.dir}" stays as it is.
std::string substitute(std::string_view text, std::string_view id, std::string_view dir) {
  std::string out;
  while (!text.empty()) {
    const std::size_t at = text.find("${session.");
    out.append(text.substr(0, at));
    if (at == std::string_view::npos) break;
    text.remove_prefix(at);
    if (text.starts_with("${session.id}")) {
      out.append(id);
      text.remove_prefix(13);
    } else if (text.starts_with("${session.dir}")) {
      out.append(dir);
      text.remove_prefix(14);
    } else {
      out.push_back(text.front());
      text.remove_prefix(1);
    }
  }
  return out;
}

}  // namespace

std::string session_identifier(std::string_view key) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(key.data(), key.size(), digest, &length, EVP_sha256(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id = "s";
  for (unsigned int i = 0; i < 16 && i < length; ++i) {
    id += kHex[digest[i] >> 4];
    id += kHex[digest[i] & 15];
  }
  return id;
}

config::Server for_session(const config::Server& server, std::string_view key,
                           std::string_view dir) {
  config::Server out = server;
  const std::string id = session_identifier(key);
  auto expand = [&](std::string& text) { text = substitute(text, id, dir); };
  for (auto& a : out.args) expand(a);
  for (auto& [k, v] : out.env) expand(v);
  expand(out.cwd);
  return out;
}

base::Expected<std::string> SessionDirs::make(std::uint64_t number) {
  if (root_.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    root_ = fmt::format("{}/toolbridge-{}", tmp && *tmp ? tmp : "/tmp", ::getpid());
  }
  if (::mkdir(root_.c_str(), 0700) != 0 && errno != EEXIST)
    return base::fail(
        fmt::format("cannot create session_dir_root {}: {}", root_, std::strerror(errno)));
  std::string dir = fmt::format("{}/{}-{}", root_, server_name_, number);
  // A directory of that name may still be in use: the older version of this server that a
  // reload replaced numbered its instances from 1 too (docs/reload.md). Never share it.
  constexpr int kMaxSuffix = 1000;
  for (int suffix = 2; ::mkdir(dir.c_str(), 0700) != 0; ++suffix) {
    if (errno != EEXIST || suffix > kMaxSuffix) {
      return base::fail(
          fmt::format("cannot create session directory {}: {}", dir, std::strerror(errno)));
    }
    dir = fmt::format("{}/{}-{}.{}", root_, server_name_, number, suffix);
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
