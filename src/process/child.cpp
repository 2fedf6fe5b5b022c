#include "process/child.h"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>

#include "process/cgroup_tree.h"
#include "process/process_tree.h"

extern char** environ;

namespace toolbridge::process {

namespace {

constexpr const char* kAllowlist[] = {"PATH",  "HOME",   "USER",   "LOGNAME",
                                      "SHELL", "LANG",   "LC_ALL", "LC_CTYPE",
                                      "TZ",    "TMPDIR", "TERM",   "SYSTEMROOT"};

bool is_executable(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// Resolves argv[0] in the parent so a missing command is a precise error, not a child that
// exits 127.
base::Expected<std::string> resolve(const std::string& cmd,
                                    const std::map<std::string, std::string>& env,
                                    const std::string& cwd) {
  if (cmd.find('/') != std::string::npos && cmd.front() != '/' && !cwd.empty()) {
    // The child runs it after chdir(cwd): resolve it there, and exec that exact file.
    return resolve(cwd + "/" + cmd, env, {});
  }
  if (cmd.find('/') != std::string::npos) {
    if (is_executable(cmd)) return cmd;
    return base::fail(
        "cannot execute '" + cmd + "': " +
        (::access(cmd.c_str(), F_OK) == 0 ? "not an executable file" : std::strerror(errno)));
  }
  auto it = env.find("PATH");
  const std::string path = it != env.end() ? it->second : "/usr/local/bin:/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string dir = path.substr(start, end - start);
    if (dir.empty()) dir = ".";
    std::string candidate = dir + "/" + cmd;
    if (is_executable(candidate)) return candidate;
    start = end + 1;
  }
  return base::fail("command '" + cmd + "' not found on PATH (" + path + ")");
}

bool make_pipe(int fds[2]) {
  return ::pipe2(fds, O_CLOEXEC) == 0;
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

base::Expected<std::string> find_executable(const Spec& spec) {
  if (spec.argv.empty() || spec.argv[0].empty()) return base::fail("empty command");
  return resolve(spec.argv[0], spec.env, spec.cwd);
}

std::map<std::string, std::string> build_env(const std::map<std::string, std::string>& configured,
                                             const std::vector<std::string>& extra_names) {
  std::map<std::string, std::string> env;
  for (const char* name : kAllowlist) {
    if (const char* v = std::getenv(name)) env[name] = v;
  }
  for (const auto& name : extra_names) {
    if (const char* v = std::getenv(name.c_str())) env[name] = v;
  }
  for (const auto& [k, v] : configured) env[k] = v;
  return env;
}

Child::Child(Child&& other) noexcept {
  *this = std::move(other);
}

Child& Child::operator=(Child&& other) noexcept {
  if (this != &other) {
    reset();
    pid_ = std::exchange(other.pid_, -1);
    pidfd_ = std::exchange(other.pidfd_, -1);
    stdin_ = std::exchange(other.stdin_, -1);
    stdout_ = std::exchange(other.stdout_, -1);
    stderr_ = std::exchange(other.stderr_, -1);
    cgroup_ = std::exchange(other.cgroup_, {});
    reaped_ = std::exchange(other.reaped_, false);
    status_ = other.status_;
  }
  return *this;
}

Child::~Child() {
  reset();
}

void Child::reset() noexcept {
  if (pid_ > 0 && !reaped_) {
    // Last resort: the orderly stop ladder lives in the instance; here nothing may survive.
    kill_descendants(SIGKILL);
    ::kill(-pid_, SIGKILL);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    reaped_ = true;
  }
  if (pid_ > 0) GroupReaper::remove(pid_);
  // Whatever left the group with setsid() and is still in the instance's cgroup dies here.
  cgroups::remove_leaf(std::exchange(cgroup_, {}));
  close_fd(pidfd_);
  close_fd(stdin_);
  close_fd(stdout_);
  close_fd(stderr_);
  pid_ = -1;
  reaped_ = false;
}

void Child::close_stdin() {
  close_fd(stdin_);
}

void Child::signal_group(int sig) const {
  if (pid_ <= 0 || reaped_) return;
  kill_descendants(sig);
  ::kill(-pid_, sig);
}

void Child::kill_descendants(int sig) const {
  if (!cgroup_.empty()) return cgroups::signal_all(cgroup_, sig);
  for (pid_t p : descendants_of(pid_)) ::kill(p, sig);
}

bool Child::try_reap() {
  if (reaped_ || pid_ <= 0) return reaped_;
  int status = 0;
  pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    reaped_ = true;
    status_ = status;
    // The leader is gone; members it left in the group or its cgroup (daemonised helpers) go
    // with it.
    ::kill(-pid_, SIGKILL);
    cgroups::signal_all(cgroup_, SIGKILL);
  }
  return reaped_;
}

namespace {

// What the child needs, prepared by the parent: after clone only async-signal-safe calls.
struct ChildSetup {
  const char* exe;
  char** argv;
  char** envp;
  const char* cwd;   // null: inherit
  int cgroup_procs;  // the instance's cgroup.procs, or -1 without cgroups
  int in, out, err, report;
  pid_t parent;
  sigset_t parent_mask;
};

// Not instrumented: it runs on a stack the sanitizers do not know, sharing our memory.
__attribute__((no_sanitize("address", "undefined"))) int child_main(void* arg) {
  const auto& s = *static_cast<const ChildSetup*>(arg);
  // First, so that everything it ever forks is in the instance's cgroup.
  if (s.cgroup_procs >= 0) (void)!::write(s.cgroup_procs, "0", 1);
  for (int sig = 1; sig < NSIG; ++sig) ::signal(sig, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != s.parent) ::_exit(127);  // the gateway died before prctl
  ::dup2(s.in, 0);
  ::dup2(s.out, 1);
  ::dup2(s.err, 2);
  ::fcntl(s.report, F_SETFD, FD_CLOEXEC);
  // Close every other inherited descriptor (listening sockets, other children's pipes).
  if (s.report > 3 &&
      ::syscall(SYS_close_range, 3U, static_cast<unsigned>(s.report - 1), 0U) != 0) {
    for (int fd = 3; fd < s.report; ++fd) ::close(fd);
  }
  ::syscall(SYS_close_range, static_cast<unsigned>(s.report + 1), ~0U, 0U);
  if (s.cwd && ::chdir(s.cwd) != 0) {
    const int e = errno;
    (void)!::write(s.report, &e, sizeof e);
    ::_exit(127);
  }
  ::execve(s.exe, s.argv, s.envp);
  const int e = errno;
  (void)!::write(s.report, &e, sizeof e);
  ::_exit(127);
}

// The executable to run, or why not (missing command, missing cwd).
base::Expected<std::string> check_spec(const Spec& spec) {
  base::Expected<std::string> exe = find_executable(spec);
  if (!exe) return exe;
  if (!spec.cwd.empty()) {
    struct stat st {};
    if (::stat(spec.cwd.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      return base::fail("working directory '" + spec.cwd + "' does not exist");
  }
  return exe;
}

// The four pipes of a spawn: the child's stdin, stdout, stderr and its exec error report.
struct Pipes {
  int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1}, exec_err[2] = {-1, -1};
  base::Status open() {
    if (make_pipe(in) && make_pipe(out) && make_pipe(err) && make_pipe(exec_err)) return {};
    std::string error = std::string("pipe: ") + std::strerror(errno);
    close_all();
    return base::fail(std::move(error));
  }
  void close_child_ends() {
    close_fd(in[0]);
    close_fd(out[1]);
    close_fd(err[1]);
    close_fd(exec_err[1]);
  }
  void close_all() {
    for (int* p : {in, out, err, exec_err}) {
      close_fd(p[0]);
      close_fd(p[1]);
    }
  }
};

// clone(CLONE_VM | CLONE_VFORK), as posix_spawn does: no page tables are copied (fork of a
// gateway with 1,000 instances costs milliseconds on its only thread), and the parent resumes
// once the child has exec'd or failed to. The child runs on its own stack in our memory, so
// every signal stays blocked until it has reset all handlers to their defaults.
pid_t clone_child(ChildSetup& setup, int& clone_errno) {
  sigset_t all;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &setup.parent_mask);
  constexpr std::size_t kStackBytes = 256 * 1024;
  void* stack = ::mmap(nullptr, kStackBytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  pid_t pid = -1;
  clone_errno = ENOMEM;
  if (stack != MAP_FAILED) {
    pid = ::clone(child_main, static_cast<char*>(stack) + kStackBytes,
                  CLONE_VM | CLONE_VFORK | SIGCHLD, &setup);
    clone_errno = errno;
    ::munmap(stack, kStackBytes);
  }
  ::pthread_sigmask(SIG_SETMASK, &setup.parent_mask, nullptr);
  return pid;
}

// The errno the child reported from chdir or execve; 0 once it has exec'd.
int exec_error(int& report_fd) {
  int child_errno = 0;
  ssize_t n;
  while ((n = ::read(report_fd, &child_errno, sizeof child_errno)) < 0 && errno == EINTR) {
  }
  close_fd(report_fd);
  return n == sizeof child_errno ? child_errno : 0;
}

}  // namespace

namespace {
// The argv and envp arrays execve wants, pointing into strings this object owns.
struct ExecVectors {
  explicit ExecVectors(const Spec& spec) {
    for (const auto& [k, v] : spec.env) env_strings.push_back(k + "=" + v);
    for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    for (auto& e : env_strings) envp.push_back(e.data());
    envp.push_back(nullptr);
  }
  std::vector<std::string> env_strings;
  std::vector<char*> argv, envp;
};
}  // namespace

base::Expected<Child> Child::spawn(const Spec& spec) {
  Child child;
  const base::Expected<std::string> checked = check_spec(spec);
  if (!checked) return base::Unexpected{checked.error()};
  const std::string& exe = *checked;

  // Everything the child touches is prepared before clone.
  ExecVectors vectors(spec);
  Pipes pipes;
  if (base::Status opened = pipes.open(); !opened) return base::Unexpected{opened.error()};
  std::string cgroup = cgroups::make_leaf();
  const std::string procs_path = cgroup + "/cgroup.procs";
  const int cgroup_procs = cgroup.empty() ? -1 : ::open(procs_path.c_str(), O_WRONLY | O_CLOEXEC);
  ChildSetup setup{exe.c_str(),
                   vectors.argv.data(),
                   vectors.envp.data(),
                   spec.cwd.empty() ? nullptr : spec.cwd.c_str(),
                   cgroup_procs,
                   pipes.in[0],
                   pipes.out[1],
                   pipes.err[1],
                   pipes.exec_err[1],
                   ::getpid(),
                   {}};
  int clone_errno = 0;
  const pid_t pid = clone_child(setup, clone_errno);
  if (cgroup_procs >= 0) ::close(cgroup_procs);
  pipes.close_child_ends();
  if (pid < 0) {
    pipes.close_all();
    cgroups::remove_leaf(cgroup);
    return base::fail(std::string("clone: ") + std::strerror(clone_errno));
  }
  // Set the group from this side too, so a signal to -pid cannot race the child's setpgid.
  ::setpgid(pid, pid);
  child.pid_ = pid;
  child.cgroup_ = std::move(cgroup);
  child.stdin_ = std::exchange(pipes.in[1], -1);
  child.stdout_ = std::exchange(pipes.out[0], -1);
  child.stderr_ = std::exchange(pipes.err[0], -1);
  GroupReaper::add(pid);

  if (const int child_errno = exec_error(pipes.exec_err[0])) {
    child.reset();
    return base::fail("cannot execute '" + exe + "': " + std::strerror(child_errno));
  }
  child.pidfd_ = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (child.pidfd_ < 0) {
    std::string error = std::string("pidfd_open: ") + std::strerror(errno);
    child.reset();
    return base::fail(std::move(error));
  }
  ::fcntl(child.pidfd_, F_SETFD, FD_CLOEXEC);
  return child;
}

namespace {

// A signal's abbreviation, as glibc's sigabbrev_np gives it; that function is glibc 2.32's, newer
// than the wheel's manylinux_2_28 floor (docs/install.md).
const char* signal_abbrev(int sig) {
  switch (sig) {
    case SIGHUP: return "HUP";
    case SIGINT: return "INT";
    case SIGQUIT: return "QUIT";
    case SIGILL: return "ILL";
    case SIGTRAP: return "TRAP";
    case SIGABRT: return "ABRT";
    case SIGBUS: return "BUS";
    case SIGFPE: return "FPE";
    case SIGKILL: return "KILL";
    case SIGUSR1: return "USR1";
    case SIGSEGV: return "SEGV";
    case SIGUSR2: return "USR2";
    case SIGPIPE: return "PIPE";
    case SIGALRM: return "ALRM";
    case SIGTERM: return "TERM";
    case SIGCHLD: return "CHLD";
    case SIGCONT: return "CONT";
    case SIGSTOP: return "STOP";
    case SIGTSTP: return "TSTP";
    case SIGTTIN: return "TTIN";
    case SIGTTOU: return "TTOU";
    case SIGURG: return "URG";
    case SIGXCPU: return "XCPU";
    case SIGXFSZ: return "XFSZ";
    case SIGVTALRM: return "VTALRM";
    case SIGPROF: return "PROF";
    case SIGWINCH: return "WINCH";
    case SIGIO: return "IO";
    case SIGSYS: return "SYS";
    default: return nullptr;
  }
}

}  // namespace

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* name = signal_abbrev(sig);
    return "killed by signal " + std::to_string(sig) +
           (name ? std::string(" (SIG") + name + ")" : "");
  }
  return "ended with status " + std::to_string(status);
}

namespace {
int g_reaper_fd = -1;
pid_t g_reaper_pid = -1;

void send_to_reaper(char op, pid_t pgid) {
  if (g_reaper_fd < 0) return;
  char buf[32];
  const int n = std::snprintf(buf, sizeof buf, "%c%d\n", op, static_cast<int>(pgid));
  (void)!::write(g_reaper_fd, buf, static_cast<size_t>(n));
}

[[noreturn]] void reaper_main(int fd) {
  ::prctl(PR_SET_NAME, "toolbridge-reap");
  std::set<pid_t> groups;
  std::string pending;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    pending.append(buf, static_cast<size_t>(n));
    std::size_t nl;
    while ((nl = pending.find('\n')) != std::string::npos) {
      const pid_t pgid = static_cast<pid_t>(std::atoi(pending.c_str() + 1));
      if (pending[0] == '+')
        groups.insert(pgid);
      else
        groups.erase(pgid);
      pending.erase(0, nl + 1);
    }
  }
  for (pid_t g : groups) ::kill(-g, SIGKILL);
  // The cgroups also hold what left those groups with setsid().
  if (!cgroups::root().empty()) cgroups::destroy_tree(cgroups::root(), 2000);
  ::_exit(0);
}
}  // namespace

bool GroupReaper::start() {
  if (g_reaper_fd >= 0) return true;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return false;
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    spdlog::warn("cannot start the process-group watchdog: {}", std::strerror(errno));
    return false;
  }
  if (pid == 0) {
    ::close(fds[1]);
    // Its own group, so a terminal's Ctrl-C reaches the gateway first and the watchdog
    // only acts once the gateway is gone.
    ::setpgid(0, 0);
    for (int fd = 3; fd < 1024; ++fd) {
      if (fd != fds[0]) ::close(fd);
    }
    reaper_main(fds[0]);
  }
  ::close(fds[0]);
  g_reaper_fd = fds[1];
  g_reaper_pid = pid;
  return true;
}

void GroupReaper::stop() {
  if (g_reaper_fd < 0) return;
  ::close(g_reaper_fd);
  g_reaper_fd = -1;
  int status = 0;
  while (::waitpid(g_reaper_pid, &status, 0) < 0 && errno == EINTR) {
  }
}

void GroupReaper::add(pid_t pgid) {
  send_to_reaper('+', pgid);
}
void GroupReaper::remove(pid_t pgid) {
  send_to_reaper('-', pgid);
}

std::size_t resident_bytes(pid_t pid) {
  if (pid <= 0) return 0;
  const std::string path = "/proc/" + std::to_string(pid) + "/statm";
  std::FILE* f = std::fopen(path.c_str(), "r");
  if (!f) return 0;
  unsigned long size = 0, resident = 0;
  const int n = std::fscanf(f, "%lu %lu", &size, &resident);
  std::fclose(f);
  if (n != 2) return 0;
  return static_cast<std::size_t>(resident) * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

}  // namespace toolbridge::process
