#include "process/process_tree.h"

#include <dirent.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

namespace toolbridge::process {

namespace {

// The parent pid from /proc/PID/stat; the command name may hold spaces and parentheses, so the
// fields are read after its last ')'.
pid_t parent_of(const char* pid) {
  const std::string path = std::string("/proc/") + pid + "/stat";
  std::FILE* f = std::fopen(path.c_str(), "r");
  if (!f) return 0;
  char buf[512];
  const std::size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  const char* close = std::strrchr(buf, ')');
  if (!close) return 0;
  char state = 0;
  int ppid = 0;
  if (std::sscanf(close + 1, " %c %d", &state, &ppid) != 2 || state == 'Z') return 0;
  return static_cast<pid_t>(ppid);
}

}  // namespace

std::vector<pid_t> descendants_of(pid_t pid) {
  std::multimap<pid_t, pid_t> children;
  if (DIR* d = ::opendir("/proc")) {
    while (const dirent* e = ::readdir(d)) {
      if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
      if (const pid_t parent = parent_of(e->d_name))
        children.emplace(parent, static_cast<pid_t>(std::atoi(e->d_name)));
    }
    ::closedir(d);
  }
  std::vector<pid_t> out;
  std::vector<pid_t> todo{pid};
  while (!todo.empty()) {
    const pid_t p = todo.back();
    todo.pop_back();
    auto [first, last] = children.equal_range(p);
    for (auto it = first; it != last; ++it) {
      out.push_back(it->second);
      todo.push_back(it->second);
    }
  }
  return out;
}

}  // namespace toolbridge::process
