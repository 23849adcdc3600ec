#include "harness/process/child.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "harness/process/cgroup.h"
#include "harness/process/interrupt.h"
#include "harness/process/journal.h"
#include "loaders/base/file_io.h"

extern char** environ;

namespace loadbench {
namespace {

// Writes errno to `fd` (when there is one) and exits with `code`: the parent learns why.
[[noreturn]] void FailFromChild(int fd, int code) {
  const int err = errno;
  if (fd >= 0) (void)!::write(fd, &err, sizeof err);
  ::_exit(code);
}

// stdin from /dev/null unless kept; stdout and stderr as `s` says (-1: /dev/null, -2: left as
// they are).
bool PlaceStdioFromChild(const ChildSetup& s) {
  const int devnull = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (devnull < 0) return false;
  const int out = s.out == -1 ? devnull : s.out, err = s.err == -1 ? devnull : s.err;
  if (!s.keep_stdin && ::dup2(devnull, 0) < 0) return false;
  if (out >= 0 && out != 1 && ::dup2(out, 1) < 0) return false;
  if (err >= 0 && err != 2 && ::dup2(err, 2) < 0) return false;
  return true;
}

}  // namespace

void ExecChild(const ChildSetup& s, const char* path, char* const* argv, char* const* envp) {
  ::signal(SIGINT, SIG_DFL);
  ::signal(SIGTERM, SIG_DFL);
  ::signal(SIGPIPE, SIG_DFL);
  // Out of the way of the numbers the placed descriptors take, and closed by a good exec.
  const int errno_fd = s.errno_fd >= 0 ? ::fcntl(s.errno_fd, F_DUPFD_CLOEXEC, 16) : -1;
  const int clock_fd = s.exec_clock_fd >= 0 ? ::fcntl(s.exec_clock_fd, F_DUPFD_CLOEXEC, 16) : -1;
  // Nothing outlives the harness: killed by any signal, SIGKILL included, it takes the child
  // with it (the setting survives exec). A harness that died before this line is seen here.
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != s.parent) {
    ::_exit(kChildParentGone);
  }
  if (s.own_group && ::setpgid(0, 0) != 0) FailFromChild(errno_fd, kChildNoGroup);
  if (s.netns_fd >= 0 && ::setns(s.netns_fd, CLONE_NEWNET) != 0) {
    FailFromChild(errno_fd, kChildNoExec);
  }
  // The OOM killer must pick the child, never the harness that records its death.
  if (s.oom_victim) SetOomScoreAdjFromChild(1000);
  if (s.cgroup_procs != nullptr && !JoinCgroupFromChild(s.cgroup_procs)) {
    FailFromChild(errno_fd, kChildNoCgroup);
  }
  // Out and err first, while the descriptors they name are still where the parent left them.
  if (!PlaceStdioFromChild(s)) FailFromChild(errno_fd, kChildNoExec);
  int placed[8];
  for (int i = 0; i < s.nfds && i < 8; ++i) placed[i] = s.fds[i];
  if (s.nfds > 8 || !PlaceFdsFromChild(placed, s.nfds)) FailFromChild(errno_fd, kChildNoExec);
  if (clock_fd >= 0) {
    timespec now{};
    ::clock_gettime(CLOCK_MONOTONIC, &now);
    if (::write(clock_fd, &now, sizeof now) != static_cast<ssize_t>(sizeof now)) {
      FailFromChild(errno_fd, kChildNoExec);
    }
  }
  ::execve(path, argv, envp != nullptr ? envp : environ);
  FailFromChild(errno_fd, kChildNoExec);
}

bool PlaceFdsFromChild(int* fds, int n) {
  for (int i = 0; i < n; ++i) {
    if (fds[i] >= 0 && (fds[i] = ::fcntl(fds[i], F_DUPFD_CLOEXEC, 16)) < 0) return false;
  }
  for (int i = 0; i < n; ++i) {
    if (fds[i] >= 0 && ::dup2(fds[i], 3 + i) < 0) return false;  // dup2 clears O_CLOEXEC
  }
  return true;
}

int Reap(pid_t pid, rusage* usage) {
  int wstatus = 0;
  while (::wait4(pid, &wstatus, 0, usage) < 0 && errno == EINTR) {
  }
  return wstatus;
}

Status StartCommandGroup(std::vector<std::string> command, pid_t* pid) {
  std::string path;
  LB_RETURN_IF_ERROR(FindProgram(command[0], "", &path));
  int status[2];
  if (::pipe2(status, O_CLOEXEC) != 0) return Status::FromErrno("pipe", errno);
  UniqueFd status_rd(status[0]), status_wr(status[1]);
  std::vector<char*> argv;
  for (std::string& a : command) argv.push_back(a.data());
  argv.push_back(nullptr);
  ChildSetup setup;
  setup.parent = ::getpid();
  setup.own_group = true;
  setup.keep_stdin = true;
  setup.errno_fd = status_wr.get();
  *pid = ::fork();
  if (*pid < 0) return Status::FromErrno("fork", errno);
  if (*pid == 0) ExecChild(setup, path.c_str(), argv.data());
  ::setpgid(*pid, *pid);  // also here, so that no signal finds the group not made yet
  status_wr.reset();
  int child_errno = 0;
  ssize_t n;
  while ((n = ::read(status_rd.get(), &child_errno, sizeof child_errno)) < 0 && errno == EINTR) {
  }
  if (n <= 0) return Status::Ok();
  Reap(*pid);
  return Status::FromErrno(fmt::format("cannot execute {}", path), child_errno);
}

int WaitForCommandGroup(pid_t pid) {
  bool passed = false;
  int status = 0;
  for (;;) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid || (r < 0 && errno != EINTR)) break;
    if (Interrupted() && !passed) {
      ::kill(pid, InterruptSignal());
      passed = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(-pid, SIGKILL);  // whatever the command left running in its group
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

namespace {

// The temporary folder the loadbench command above this one made for namespace `name` and
// journaled beside it: /tmp/NAME-XXXXXX, a folder of this user's that no one else may enter.
Status NodeTempDir(const std::string& name, std::string* dir) {
  for (const auto& [kind, what] : AncestorJournalListing(Leftover::kNetns, name)) {
    const std::string prefix = "/tmp/" + name + "-";
    struct stat st {};
    if (kind != Leftover::kFolder || !what.starts_with(prefix) ||
        what.size() != prefix.size() + 6 || ::lstat(what.c_str(), &st) != 0) {
      continue;
    }
    if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
      return Status::BadInput(fmt::format("{}: not a folder of this user's alone", what));
    }
    *dir = what;
    return Status::Ok();
  }
  return Status::BadInput(fmt::format(
      "{}: not a node of a cluster that a loadbench command above this one made (none lists it "
      "with its folder in its journal)",
      name));
}

}  // namespace

Status ExecShellInNetns(const std::string& name, const std::string& command) {
  // A temporary folder of the node's own, as a host has: MPI's daemons of several nodes on one
  // machine would otherwise race for one session folder.
  std::string tmp;
  LB_RETURN_IF_ERROR(NodeTempDir(name, &tmp));
  const std::string path = "/run/netns/" + name;
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return Status::FromErrno(path, errno);
  if (::setns(fd.get(), CLONE_NEWNET) != 0) return Status::FromErrno("setns " + path, errno);
  ::setenv("TMPDIR", tmp.c_str(), 1);
  const char* argv[] = {"sh", "-c", command.c_str(), nullptr};
  ::execv("/bin/sh", const_cast<char* const*>(argv));
  return Status::FromErrno("/bin/sh", errno);
}

bool InNetns(const std::string& name) {
  struct stat mine {
  }, theirs{};
  return name.find('/') == std::string::npos && ::stat("/proc/self/ns/net", &mine) == 0 &&
         ::stat(("/run/netns/" + name).c_str(), &theirs) == 0 && mine.st_dev == theirs.st_dev &&
         mine.st_ino == theirs.st_ino;
}

Status FindProgram(const std::string& name, const std::string& package, std::string* path) {
  const std::string install = package.empty() ? "" : fmt::format("; install Debian's {}", package);
  if (name.find('/') != std::string::npos) {
    if (::access(name.c_str(), F_OK) != 0) {
      return Status::Unsupported(fmt::format("command not found: {}{}", name, install));
    }
    *path = name;
    return Status::Ok();
  }
  const char* env = std::getenv("PATH");
  std::istringstream dirs(env != nullptr ? env : "/usr/local/bin:/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) {
      *path = candidate;
      return Status::Ok();
    }
  }
  return Status::Unsupported(fmt::format("command not found: {} (not on PATH){}", name, install));
}

}  // namespace loadbench
