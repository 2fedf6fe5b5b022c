#include "process/cgroup_tree.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "process/child.h"
#include "process/process_tree.h"

namespace toolbridge::process {
namespace {

// Alive and not a zombie (a killed orphan may wait a moment for init to reap it).
bool running(pid_t pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/stat";
  std::FILE* f = std::fopen(path.c_str(), "r");
  if (!f) return false;
  char buf[512] = {};
  (void)!std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  const char* close = std::strrchr(buf, ')');
  return close && close[1] && close[2] != 'Z';
}

// A shell whose background sleep leaves the process group with setsid().
int leftovers_after_destroying_a_child() {
  Spec spec{{"/bin/sh", "-c", "setsid sleep 300 </dev/null >/dev/null 2>&1 & sleep 300"},
            build_env({}, {}),
            ""};
  base::Expected<Child> spawned = Child::spawn(spec);
  EXPECT_EQ(spawned.error(), "");
  if (!spawned) return 0;
  Child child = std::move(*spawned);
  std::vector<pid_t> below;
  for (int i = 0; i < 200 && below.size() < 2; ++i) {
    ::usleep(10'000);
    below = descendants_of(child.pid());
  }
  EXPECT_EQ(below.size(), 2u);
  child = Child();
  int left = 0;
  for (pid_t p : below) {
    for (int i = 0; i < 100 && running(p); ++i) ::usleep(10'000);
    if (running(p)) {
      ++left;
      ::kill(p, SIGKILL);
    }
  }
  return left;
}

TEST(Containment, ProcessWalkKillsASetsidGrandchildWithoutCgroups) {
  ASSERT_EQ(cgroups::root(), "");
  EXPECT_EQ(leftovers_after_destroying_a_child(), 0);
}

TEST(Containment, CgroupKillsASetsidGrandchildAndIsRemoved) {
  if (base::Status enabled = cgroups::enable(); !enabled)
    GTEST_SKIP() << "no writable cgroup v2: " << enabled.error();
  const std::string root = cgroups::root();
  EXPECT_EQ(leftovers_after_destroying_a_child(), 0);
  cgroups::disable();
  EXPECT_NE(::access(root.c_str(), F_OK), 0) << root << " left behind";
}

}  // namespace
}  // namespace toolbridge::process
