#include "process/cgroup_tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string_view>

namespace toolbridge::process::cgroups {

namespace {

std::string g_root;
unsigned long g_next_leaf = 0;
std::vector<std::string> g_busy;  // leaves whose processes were still exiting at removal

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

bool write_file(const std::string& path, std::string_view text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

// Mount point of the cgroup2 file system, from /proc/self/mountinfo (" - cgroup2 " marks it).
std::string cgroup2_mount() {
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    const std::size_t dash = line.find(" - cgroup2 ");
    if (dash == std::string::npos) continue;
    std::istringstream fields(line.substr(0, dash));
    std::string id, parent, dev, root, mount_point;
    fields >> id >> parent >> dev >> root >> mount_point;
    if (root == "/") return mount_point;
  }
  return {};
}

// The gateway's own cgroup v2 directory: the "0::PATH" line of /proc/self/cgroup.
base::Expected<std::string> own_directory() {
  const std::string mount = cgroup2_mount();
  if (mount.empty()) return base::fail("no cgroup2 file system is mounted");
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("0::", 0) != 0) continue;
    std::string path = line.substr(3);
    if (path == "/") path.clear();
    return mount + path;
  }
  return base::fail("the gateway is in no cgroup v2 group");
}

std::vector<std::string> subdirectories(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (const dirent* e = ::readdir(d)) {
    const std::string_view name = e->d_name;
    if (e->d_type == DT_DIR && name != "." && name != "..") out.push_back(dir + "/" + e->d_name);
  }
  ::closedir(d);
  return out;
}

bool populated(const std::string& dir) {
  const std::string events = read_file(dir + "/cgroup.events");
  return events.find("populated 1") != std::string::npos;
}

// Leaves first: a cgroup with children cannot be removed.
void remove_tree(const std::string& dir) {
  for (const auto& sub : subdirectories(dir)) remove_tree(sub);
  ::rmdir(dir.c_str());
}

void retry_busy() {
  std::erase_if(
      g_busy, [](const std::string& dir) { return ::rmdir(dir.c_str()) == 0 || errno == ENOENT; });
}

// toolbridge-PID directories whose gateway is gone (killed by SIGKILL with its watchdog, say),
// or that carry our own PID (a container restarted with the same PID numbering).
void remove_stale(const std::string& parent) {
  for (const auto& dir : subdirectories(parent)) {
    const std::string name = dir.substr(parent.size() + 1);
    if (name.rfind("toolbridge-", 0) != 0) continue;
    const long pid = std::strtol(name.c_str() + 11, nullptr, 10);
    if (pid <= 0) continue;
    const bool gone = ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
    if (gone || pid == ::getpid()) destroy_tree(dir, 1000);
  }
}

}  // namespace

base::Status enable() {
  if (!g_root.empty()) return {};
  const base::Expected<std::string> own = own_directory();
  if (!own) return base::Unexpected{own.error()};
  remove_stale(*own);
  const std::string root = *own + "/toolbridge-" + std::to_string(::getpid());
  if (::mkdir(root.c_str(), 0755) != 0)
    return base::fail("cannot create " + root + ": " + std::strerror(errno));
  g_root = root;
  return {};
}

const std::string& root() {
  return g_root;
}

std::string make_leaf() {
  if (g_root.empty()) return {};
  retry_busy();
  const std::string dir = g_root + "/i" + std::to_string(++g_next_leaf);
  if (::mkdir(dir.c_str(), 0755) != 0) return {};
  return dir;
}

std::vector<pid_t> members(const std::string& dir) {
  std::vector<pid_t> out;
  std::istringstream procs(read_file(dir + "/cgroup.procs"));
  for (long pid = 0; procs >> pid;) out.push_back(static_cast<pid_t>(pid));
  for (const auto& sub : subdirectories(dir)) {
    const auto more = members(sub);
    out.insert(out.end(), more.begin(), more.end());
  }
  return out;
}

void signal_all(const std::string& dir, int sig) {
  if (dir.empty()) return;
  if (sig == SIGKILL && write_file(dir + "/cgroup.kill", "1")) return;
  for (pid_t pid : members(dir)) ::kill(pid, sig);
}

void remove_leaf(const std::string& dir) {
  if (dir.empty()) return;
  signal_all(dir, SIGKILL);
  if (::rmdir(dir.c_str()) != 0 && errno == EBUSY) g_busy.push_back(dir);
  retry_busy();
}

void destroy_tree(const std::string& dir, int wait_ms) {
  signal_all(dir, SIGKILL);
  for (int waited = 0; populated(dir) && waited < wait_ms; waited += 10) {
    ::usleep(10'000);
    signal_all(dir, SIGKILL);  // without cgroup.kill, a fork may have raced the first round
  }
  remove_tree(dir);
}

void disable() {
  if (g_root.empty()) return;
  destroy_tree(g_root, 2000);
  g_root.clear();
  g_busy.clear();
}

}  // namespace toolbridge::process::cgroups
