#pragma once
// per_session servers: ${session.id} and ${session.dir} in a server's args, env values and cwd,
// and the directories made for ${session.dir}.
#include <cstdint>
#include <string>
#include <string_view>

#include "base/expected.h"
#include "config/config.h"

namespace toolbridge::upstream {

// What ${session.id} becomes for the session or trajectory `key`: "s" and 32 hex digits of its
// SHA-256, so caller text never reaches argv, env or paths, and the same name gets the same id.
std::string session_identifier(std::string_view key);

// `server` with ${session.id} (session_identifier(key)) and ${session.dir} substituted in args,
// env values and cwd, in a single pass.
config::Server for_session(const config::Server& server, std::string_view key,
                           std::string_view dir);

// One directory per instance, SERVER-NUMBER, under a root made on first use (empty root:
// $TMPDIR/toolbridge-PID, or /tmp/toolbridge-PID).
class SessionDirs {
 public:
  SessionDirs(std::string root, std::string server_name, bool keep)
      : root_(std::move(root)), server_name_(std::move(server_name)), keep_(keep) {}
  // The new directory's path, or why it cannot be made.
  base::Expected<std::string> make(std::uint64_t number);
  // Removes `dir` and what is in it, unless the config keeps session directories.
  void remove(const std::string& dir) const;
  const std::string& root() const { return root_; }

 private:
  std::string root_;
  std::string server_name_;
  bool keep_;
};

}  // namespace toolbridge::upstream
