#include "process/child.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

namespace toolbridge::process {
namespace {

// Reads `fd` to EOF and closes it.
std::string read_all(int fd) {
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

// Waits for `fd` (a pidfd) to become readable. The limit is a watchdog so that a bug fails the
// test instead of hanging it; nothing here measures time.
bool wait_readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  int r;
  while ((r = ::poll(&p, 1, 20'000)) < 0 && errno == EINTR) {
  }
  return r == 1;
}

// Waits until the child has exited and reaps it.
void reap(Child& c) {
  ASSERT_TRUE(wait_readable(c.pidfd())) << "child " << c.pid() << " did not exit";
  ASSERT_TRUE(c.try_reap());
}

Spec spec_of(std::vector<std::string> argv) {
  Spec s;
  s.argv = std::move(argv);
  s.env = build_env({}, {});
  return s;
}

Child spawn_ok(const Spec& spec) {
  base::Expected<Child> c = Child::spawn(spec);
  EXPECT_TRUE(c.ok()) << c.error();
  if (!c) return Child();
  EXPECT_GT(c->pid(), 0);
  return std::move(*c);
}

bool process_gone(pid_t pid) { return ::kill(pid, 0) == -1 && errno == ESRCH; }

// A file in the test's temporary directory, removed at the end of the test.
class TempFile {
 public:
  TempFile(const std::string& name, const std::string& contents, mode_t mode)
      : path_(::testing::TempDir() + "tb_process_" + std::to_string(::getpid()) + "_" + name) {
    std::ofstream(path_) << contents;
    ::chmod(path_.c_str(), mode);
  }
  ~TempFile() { ::unlink(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// ---------------------------------------------------------------------------------------------
// Spawning

TEST(Process, SpawnEchoAndReadStdout) {
  Child c = spawn_ok(spec_of({"/bin/echo", "hello", "world"}));
  EXPECT_EQ(read_all(c.release_stdout()), "hello world\n");
  reap(c);
  EXPECT_TRUE(c.reaped());
  EXPECT_EQ(describe_status(c.wait_status()), "exited with code 0");
}

TEST(Process, BareCommandIsFoundOnThePath) {
  Child c = spawn_ok(spec_of({"echo", "from", "PATH"}));
  EXPECT_EQ(read_all(c.release_stdout()), "from PATH\n");
  reap(c);
}

TEST(Process, StdinStdoutAndStderrAreConnected) {
  Child c = spawn_ok(spec_of({"/bin/sh", "-c", "cat; echo oops >&2"}));
  const int in = c.release_stdin();
  ASSERT_EQ(::write(in, "line 1\nline 2\n", 14), 14);
  ::close(in);
  EXPECT_EQ(read_all(c.release_stdout()), "line 1\nline 2\n");
  EXPECT_EQ(read_all(c.release_stderr()), "oops\n");
  reap(c);
}

TEST(Process, CloseStdinEndsACat) {
  Child c = spawn_ok(spec_of({"/bin/cat"}));
  c.close_stdin();
  EXPECT_EQ(read_all(c.release_stdout()), "");
  reap(c);
  EXPECT_EQ(describe_status(c.wait_status()), "exited with code 0");
}

TEST(Process, ExitCodeIsReported) {
  Child c = spawn_ok(spec_of({"/bin/sh", "-c", "exit 3"}));
  reap(c);
  EXPECT_EQ(describe_status(c.wait_status()), "exited with code 3");
}

TEST(Process, ArgumentsAreNotInterpretedByAShell) {
  Child c = spawn_ok(spec_of({"/bin/echo", "$HOME", "a;b", "*", "'q'"}));
  EXPECT_EQ(read_all(c.release_stdout()), "$HOME a;b * 'q'\n");
  reap(c);
}

TEST(Process, EnvironmentIsExactlyTheSpec) {
  Spec s;
  s.argv = {"/usr/bin/env"};
  s.env = {{"ONLY", "this"}, {"AND", "that=1"}};
  Child c = spawn_ok(s);
  EXPECT_EQ(read_all(c.release_stdout()), "AND=that=1\nONLY=this\n");
  reap(c);
}

TEST(Process, WorkingDirectory) {
  Spec s = spec_of({"/bin/pwd"});
  s.cwd = "/";
  Child c = spawn_ok(s);
  EXPECT_EQ(read_all(c.release_stdout()), "/\n");
  reap(c);
}

TEST(Process, InheritsNoDescriptorsBeyondStdio) {
  // A descriptor the parent leaks on purpose (no O_CLOEXEC) must not reach the child.
  const int leaked = ::open("/dev/null", O_RDONLY);
  ASSERT_GE(leaked, 0);
  Child c = spawn_ok(spec_of({"/bin/sh", "-c", "ls /proc/$$/fd"}));
  const std::string fds = read_all(c.release_stdout());
  reap(c);
  ::close(leaked);
  EXPECT_EQ(fds, "0\n1\n2\n");
}

// ---------------------------------------------------------------------------------------------
// Spawn errors are values naming the cause

TEST(Process, CommandNotFoundNamesTheCommandAndThePath) {
  Spec s;
  s.argv = {"toolbridge-no-such-command"};
  s.env = {{"PATH", "/nonexistent/bin:/also/missing"}};
  const base::Expected<Child> c = Child::spawn(s);
  EXPECT_FALSE(c.ok());
  const std::string& error = c.error();
  EXPECT_NE(error.find("'toolbridge-no-such-command'"), std::string::npos) << error;
  EXPECT_NE(error.find("not found"), std::string::npos) << error;
  EXPECT_NE(error.find("/nonexistent/bin:/also/missing"), std::string::npos) << error;
}

TEST(Process, MissingAbsolutePath) {
  const base::Expected<Child> c = Child::spawn(spec_of({"/nonexistent/toolbridge-server"}));
  EXPECT_FALSE(c.ok());
  const std::string& error = c.error();
  EXPECT_NE(error.find("/nonexistent/toolbridge-server"), std::string::npos) << error;
  EXPECT_NE(error.find("No such file"), std::string::npos) << error;
}

TEST(Process, NonExecutableFile) {
  TempFile f("plain.txt", "not a program\n", 0644);
  const base::Expected<Child> c = Child::spawn(spec_of({f.path()}));
  EXPECT_FALSE(c.ok());
  const std::string& error = c.error();
  EXPECT_NE(error.find(f.path()), std::string::npos) << error;
  EXPECT_NE(error.find("not an executable file"), std::string::npos) << error;
}

TEST(Process, DirectoryIsNotExecutable) {
  const base::Expected<Child> c = Child::spawn(spec_of({"/tmp/"}));
  EXPECT_FALSE(c.ok());
  const std::string& error = c.error();
  EXPECT_NE(error.find("not an executable file"), std::string::npos) << error;
}

TEST(Process, ExecFailureInTheChildIsReported) {
  // Executable bit, but neither ELF nor a '#!' script: execve fails with ENOEXEC in the child.
  TempFile f("garbage.bin", "\x01\x02\x03 not a program", 0755);
  const base::Expected<Child> c = Child::spawn(spec_of({f.path()}));
  EXPECT_FALSE(c.ok());
  const std::string& error = c.error();
  EXPECT_NE(error.find(f.path()), std::string::npos) << error;
  EXPECT_NE(error.find("Exec format error"), std::string::npos) << error;
}

TEST(Process, BadWorkingDirectory) {
  Spec s = spec_of({"/bin/echo"});
  s.cwd = "/nonexistent/toolbridge-cwd";
  const base::Expected<Child> c = Child::spawn(s);
  EXPECT_FALSE(c.ok());
  const std::string& error = c.error();
  EXPECT_NE(error.find("/nonexistent/toolbridge-cwd"), std::string::npos) << error;
}

TEST(Process, WorkingDirectoryThatIsAFile) {
  TempFile f("not_a_dir", "x", 0644);
  Spec s = spec_of({"/bin/echo"});
  s.cwd = f.path();
  const base::Expected<Child> c = Child::spawn(s);
  EXPECT_FALSE(c.ok());
  const std::string& error = c.error();
  EXPECT_NE(error.find(f.path()), std::string::npos) << error;
}

// BUG (src/process/child.cpp, resolve + spawn): a relative command with a slash
// ("./server.sh", "bin/server") is checked against the gateway's working directory, but
// execve runs after chdir(spec.cwd) and resolves it against the server's. With `cwd` set, a
// server that exists there is refused ("cannot execute './tb_rel.sh': No such file or
// directory"), and if both directories hold such a file the parent vets one and the child
// runs the other. (Python's subprocess and posix_spawn resolve relative to the new cwd.)
TEST(Process, RelativeCommandIsResolvedInTheChildsWorkingDirectory) {
  std::string dir = ::testing::TempDir() + "tb_cwd_XXXXXX";
  ASSERT_NE(::mkdtemp(dir.data()), nullptr);
  const std::string script = dir + "/tb_rel.sh";
  std::ofstream(script) << "#!/bin/sh\necho from-cwd\n";
  ::chmod(script.c_str(), 0755);
  Spec s = spec_of({"./tb_rel.sh"});
  s.cwd = dir;
  Child c = spawn_ok(s);
  if (c.pid() > 0) {
    EXPECT_EQ(read_all(c.release_stdout()), "from-cwd\n");
    reap(c);
  }
  ::unlink(script.c_str());
  ::rmdir(dir.c_str());
}

TEST(Process, EmptyCommand) {
  for (Spec s : {Spec{}, spec_of({""})}) {
    const base::Expected<Child> c = Child::spawn(s);
    EXPECT_FALSE(c.ok());
    const std::string& error = c.error();
    EXPECT_NE(error.find("empty command"), std::string::npos) << error;
  }
}

// ---------------------------------------------------------------------------------------------
// Environment

class BuildEnv : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("TOOLBRIDGE_TEST_SECRET", "hunter2", 1);
    ::unsetenv("TOOLBRIDGE_TEST_UNSET");
    if (!std::getenv("HOME")) ::setenv("HOME", "/root", 1);
    ASSERT_NE(std::getenv("PATH"), nullptr);
  }
  void TearDown() override { ::unsetenv("TOOLBRIDGE_TEST_SECRET"); }
};

TEST_F(BuildEnv, KeepsTheAllowlistAndDropsEverythingElse) {
  const auto env = build_env({}, {});
  EXPECT_EQ(env.at("PATH"), std::getenv("PATH"));
  EXPECT_EQ(env.at("HOME"), std::getenv("HOME"));
  EXPECT_FALSE(env.contains("TOOLBRIDGE_TEST_SECRET"));
  for (const auto& [k, v] : env) {
    EXPECT_NE(k, "TOOLBRIDGE_TEST_SECRET");
    EXPECT_EQ(v.find("hunter2"), std::string::npos) << k;
  }
}

TEST_F(BuildEnv, ExtraNamesArePassedThrough) {
  const auto env = build_env({}, {"TOOLBRIDGE_TEST_SECRET", "TOOLBRIDGE_TEST_UNSET"});
  EXPECT_EQ(env.at("TOOLBRIDGE_TEST_SECRET"), "hunter2");
  EXPECT_FALSE(env.contains("TOOLBRIDGE_TEST_UNSET")) << "an unset name is not invented";
  EXPECT_TRUE(env.contains("PATH"));
}

TEST_F(BuildEnv, ConfiguredValuesWin) {
  const auto env = build_env({{"PATH", "/opt/x/bin"}, {"TOOLBRIDGE_TEST_SECRET", "configured"},
                              {"NEW_VAR", ""}},
                             {"TOOLBRIDGE_TEST_SECRET"});
  EXPECT_EQ(env.at("PATH"), "/opt/x/bin");
  EXPECT_EQ(env.at("TOOLBRIDGE_TEST_SECRET"), "configured");
  EXPECT_EQ(env.at("NEW_VAR"), "");
  EXPECT_EQ(env.at("HOME"), std::getenv("HOME"));
}

TEST_F(BuildEnv, SecretDoesNotReachTheChild) {
  Spec s;
  s.argv = {"/usr/bin/env"};
  s.env = build_env({{"GIVEN", "yes"}}, {});
  Child c = spawn_ok(s);
  const std::string out = read_all(c.release_stdout());
  reap(c);
  EXPECT_EQ(out.find("TOOLBRIDGE_TEST_SECRET"), std::string::npos) << out;
  EXPECT_NE(out.find("GIVEN=yes\n"), std::string::npos) << out;
  EXPECT_NE(out.find("PATH="), std::string::npos) << out;
}

// ---------------------------------------------------------------------------------------------
// Lifetime: process groups, kill and reap

TEST(Process, ChildLeadsItsOwnProcessGroup) {
  Child c = spawn_ok(spec_of({"/bin/sleep", "100"}));
  EXPECT_EQ(::getpgid(c.pid()), c.pid());
  EXPECT_NE(::getpgid(c.pid()), ::getpgrp());
}

TEST(Process, DestructorKillsAndReaps) {
  pid_t pid;
  {
    Child c = spawn_ok(spec_of({"/bin/sleep", "100"}));
    pid = c.pid();
    ASSERT_EQ(::kill(pid, 0), 0);
    EXPECT_FALSE(c.try_reap());
  }
  EXPECT_TRUE(process_gone(pid)) << "pid " << pid << " still exists (not killed, or a zombie)";
}

TEST(Process, DestructorKillsTheWholeGroup) {
  // The shell starts a grandchild in the same group and reports its pid.
  Child c = spawn_ok(spec_of({"/bin/sh", "-c", "sleep 100 & echo $!; wait"}));
  const int out = c.release_stdout();
  std::string line;
  char ch;
  while (::read(out, &ch, 1) == 1 && ch != '\n') line += ch;
  ::close(out);
  const pid_t grandchild = std::stoi(line);
  const int grandchild_fd = static_cast<int>(::syscall(SYS_pidfd_open, grandchild, 0));
  ASSERT_GE(grandchild_fd, 0) << std::strerror(errno);
  c = Child();  // destroys the old child
  EXPECT_TRUE(wait_readable(grandchild_fd)) << "grandchild " << grandchild << " survived";
  ::close(grandchild_fd);
}

TEST(Process, SignalGroupAndDescribeTheSignal) {
  Child c = spawn_ok(spec_of({"/bin/sleep", "100"}));
  c.signal_group(SIGTERM);
  reap(c);
  EXPECT_EQ(describe_status(c.wait_status()), "killed by signal 15 (SIGTERM)");
  const pid_t pid = c.pid();
  c = Child();
  EXPECT_TRUE(process_gone(pid));
}

TEST(Process, MoveTransfersOwnership) {
  Child a = spawn_ok(spec_of({"/bin/sleep", "100"}));
  const pid_t pid = a.pid();
  Child b(std::move(a));
  EXPECT_EQ(a.pid(), -1);  // NOLINT(bugprone-use-after-move): moved-from state is specified
  EXPECT_EQ(a.pidfd(), -1);
  EXPECT_EQ(b.pid(), pid);
  Child c;
  c = std::move(b);
  EXPECT_EQ(b.pid(), -1);  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(c.pid(), pid);
  EXPECT_EQ(::kill(pid, 0), 0) << "a move must not kill the child";
  c = Child();
  EXPECT_TRUE(process_gone(pid));
}

TEST(Process, DefaultChildIsInert) {
  Child c;
  EXPECT_EQ(c.pid(), -1);
  EXPECT_FALSE(c.try_reap());
  c.signal_group(SIGKILL);  // must not signal group -1 (every process we may signal)
  c.close_stdin();
  EXPECT_EQ(c.release_stdout(), -1);
}

TEST(Process, DescribeStatus) {
  EXPECT_EQ(describe_status(0), "exited with code 0");
  EXPECT_EQ(describe_status(3 << 8), "exited with code 3");
  EXPECT_EQ(describe_status(255 << 8), "exited with code 255");
  EXPECT_EQ(describe_status(SIGKILL), "killed by signal 9 (SIGKILL)");
  EXPECT_EQ(describe_status(SIGSEGV | 0x80), "killed by signal 11 (SIGSEGV)");  // core dumped
  EXPECT_EQ(describe_status(SIGTERM), "killed by signal 15 (SIGTERM)");
  const std::string stopped = describe_status((SIGSTOP << 8) | 0x7f);
  EXPECT_EQ(stopped.rfind("ended with status", 0), 0u) << stopped;
}

}  // namespace
}  // namespace toolbridge::process
