// The process side of the exec strategy: start the command in its own process group (and
// cgroup), watch it until its first process exits, then leave nothing of it alive.
#include "harness/run/exec.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <memory>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "harness/system/cgroup.h"
#include "harness/system/interrupt.h"
#include "loaders/base/file_io.h"
#include "loaders/base/proc_fields.h"

extern char** environ;

namespace loadbench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kReportFd = 3;          // LOADBENCH_FD in the command
constexpr size_t kTailBytes = 4096;   // of stderr, kept
constexpr int kTailLines = 8;         // of those, put in the record

double Since(Clock::time_point t0, Clock::time_point t1) {
  return std::chrono::duration<double>(t1 - t0).count();
}

// The environment with LOADBENCH_FD set, as execve takes it.
std::vector<std::string> CommandEnv() {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (!std::string_view(*e).starts_with("LOADBENCH_FD=")) env.emplace_back(*e);
  }
  env.push_back(fmt::format("LOADBENCH_FD={}", kReportFd));
  return env;
}

std::vector<char*> CStrings(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (std::string& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// In the child, after fork: only async-signal-safe calls until exec. On failure the errno goes
// to `status_wr` (close-on-exec: the parent reads EOF once exec succeeded).
[[noreturn]] void ExecChild(const ExecRequest& req, char* const* argv, char* const* envp,
                            int report_wr, int err_wr, int status_wr, pid_t parent) {
  auto fail = [&](int code) {
    const int err = errno;
    (void)!::write(status_wr, &err, sizeof err);
    ::_exit(code);
  };
  ::signal(SIGINT, SIG_DFL);
  ::signal(SIGTERM, SIG_DFL);
  ::signal(SIGPIPE, SIG_DFL);
  // Killed with the harness, SIGKILL included; a harness that died before this line is seen.
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent) ::_exit(125);
  if (::setpgid(0, 0) != 0) fail(124);
  SetOomScoreAdjFromChild(1000);
  if (!req.cgroup_procs.empty() && !JoinCgroupFromChild(req.cgroup_procs.c_str())) fail(126);
  // Out of the way of the numbers they go to, then into place (dup2 clears close-on-exec):
  // /dev/null first, so that whatever number it got is free to be overwritten.
  const int devnull = ::open("/dev/null", O_RDWR);
  const int r = ::fcntl(report_wr, F_DUPFD, 10), e = ::fcntl(err_wr, F_DUPFD, 10);
  const int s = ::fcntl(status_wr, F_DUPFD_CLOEXEC, 10);
  if (r < 0 || e < 0 || s < 0 || devnull < 0) fail(127);
  status_wr = s;
  if (::dup2(devnull, 0) < 0 || ::dup2(devnull, 1) < 0) fail(127);
  if (devnull > kReportFd) ::close(devnull);
  if (::dup2(r, kReportFd) < 0 || ::dup2(e, 2) < 0) fail(127);
  ::close(r);
  ::close(e);
  ::execve(req.program.c_str(), argv, envp);
  fail(127);
  ::_exit(127);
}

// The pids of `cgroup_dir` (none without one) or, without a cgroup, of process group `pgid`,
// but `leader`.
std::set<pid_t> Members(const std::string& cgroup_dir, pid_t pgid, pid_t leader) {
  std::set<pid_t> pids;
  if (!cgroup_dir.empty()) {
    std::ifstream in(cgroup_dir + "/cgroup.procs");
    for (pid_t p; in >> p;) pids.insert(p);
  } else if (DIR* d = ::opendir("/proc")) {
    while (const dirent* ent = ::readdir(d)) {
      const pid_t p = static_cast<pid_t>(std::atoi(ent->d_name));
      if (p > 0 && ::getpgid(p) == pgid) pids.insert(p);
    }
    ::closedir(d);
  }
  pids.erase(leader);
  return pids;
}

// Kills the command's process group and everything in its cgroup until none is left (at most
// a second: a process that left both is beyond reach). The number found alive at first.
int KillTree(const ExecRequest& req, pid_t leader) {
  std::set<pid_t> left = Members(req.cgroup_dir, leader, leader);
  const int found = static_cast<int>(left.size());
  const auto until = Clock::now() + std::chrono::seconds(1);
  for (;;) {
    ::kill(-leader, SIGKILL);
    for (pid_t p : left) ::kill(p, SIGKILL);
    left = Members(req.cgroup_dir, leader, leader);
    if (left.empty() || Clock::now() > until) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return found;
}

// One started command while it runs.
struct Running {
  pid_t pid = -1;
  UniqueFd pidfd, report, err;
  Clock::time_point forked, exec;
  std::unique_ptr<TimelineSampler> sampler;
};

// Forks and execs; the error when the command could not be started.
Status Start(const ExecRequest& req, Running* c) {
  int report[2], err[2], status[2];
  if (::pipe2(report, O_CLOEXEC) != 0) return Status::FromErrno("pipe", errno);
  UniqueFd report_wr(report[1]);
  c->report.reset(report[0]);
  if (::pipe2(err, O_CLOEXEC) != 0) return Status::FromErrno("pipe", errno);
  UniqueFd err_wr(err[1]);
  c->err.reset(err[0]);
  if (::pipe2(status, O_CLOEXEC) != 0) return Status::FromErrno("pipe", errno);
  UniqueFd status_rd(status[0]), status_wr(status[1]);
  std::vector<std::string> argv_s = req.argv, env_s = CommandEnv();
  std::vector<char*> argv = CStrings(argv_s), envp = CStrings(env_s);
  const pid_t parent = ::getpid();
  c->forked = Clock::now();
  const pid_t pid = ::fork();
  if (pid < 0) return Status::FromErrno("fork", errno);
  if (pid == 0) {
    ExecChild(req, argv.data(), envp.data(), report_wr.get(), err_wr.get(), status_wr.get(),
              parent);
  }
  c->pid = pid;
  ::setpgid(pid, pid);  // also here, so that a kill of the group cannot come before it exists
  status_wr.reset();
  int child_errno = 0;
  ssize_t n;
  while ((n = ::read(status_rd.get(), &child_errno, sizeof child_errno)) < 0 && errno == EINTR) {
  }
  c->exec = Clock::now();
  c->pidfd.reset(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (n > 0) return Status::FromErrno(fmt::format("starting {}", req.program), child_errno);
  if (req.sample_s > 0) c->sampler = std::make_unique<TimelineSampler>(pid, req.file_paths);
  return Status::Ok();
}

// Appends what `fd` has; false at EOF or error.
bool Drain(UniqueFd& fd, std::string* to, size_t keep) {
  char buf[4096];
  const ssize_t n = ::read(fd.get(), buf, sizeof buf);
  if (n < 0 && errno == EINTR) return true;
  if (n <= 0) {
    fd.reset();
    return false;
  }
  to->append(buf, static_cast<size_t>(n));
  if (keep > 0 && to->size() > 2 * keep) to->erase(0, to->size() - keep);
  return true;
}

// Waits for the first process to exit, reading its pipes and sampling its timeline; kills
// everything on timeout or interruption. True when it exited by itself.
bool Watch(const ExecRequest& req, Running& c, ExecOutcome* o, bool* interrupted) {
  SamplePacer pacer(c.sampler ? req.sample_s : 0);
  for (;;) {
    if (pacer.Due()) c.sampler->Sample();
    int wait_ms = pacer.WaitMs(100);
    if (!c.pidfd.valid()) wait_ms = std::min(wait_ms, 1);  // no pidfd: look every millisecond
    pollfd polls[3] = {{c.pidfd.get(), POLLIN, 0}, {c.report.get(), POLLIN, 0},
                       {c.err.get(), POLLIN, 0}};
    const int pr = ::poll(polls, 3, wait_ms);
    const auto now = Clock::now();
    if (Interrupted() || (req.timeout_s > 0 && Since(c.exec, now) > req.timeout_s)) {
      *interrupted = Interrupted();
      o->timed_out = !*interrupted;
      KillTree(req, c.pid);
      return false;
    }
    if (pr > 0 && polls[1].revents != 0) Drain(c.report, &o->report_text, 0);
    if (pr > 0 && polls[2].revents != 0) Drain(c.err, &o->stderr_tail, kTailBytes);
    siginfo_t info{};
    const bool exited =
        c.pidfd.valid() ? (pr > 0 && polls[0].revents != 0)
                        : ::waitid(P_PID, static_cast<id_t>(c.pid), &info,
                                   WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == c.pid;
    if (exited) {
      o->wall_s = Since(c.exec, now);
      return true;
    }
  }
}

// The last lines of stderr, for the record.
std::string TailLines(const std::string& text) {
  std::string t = text;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  size_t at = t.size();
  for (int i = 0; i < kTailLines && at != std::string::npos && at > 0; ++i) {
    at = t.rfind('\n', at - 1);
  }
  return at == std::string::npos || at == 0 ? t : t.substr(at + 1);
}

// After the first process exited (a zombie until reaped): what it read, what it left, its
// last output, then the reaping that gives its rusage and status.
void Finish(const ExecRequest& req, Running& c, bool exited, ExecOutcome* o) {
  if (exited) {
    siginfo_t info{};
    while (::waitid(P_PID, static_cast<id_t>(c.pid), &info, WEXITED | WNOWAIT) < 0 &&
           errno == EINTR) {
    }
    // A zombie's io counters hold its own reads and those of every child it reaped.
    o->read_bytes = ProcField(fmt::format("/proc/{}/io", c.pid), "read_bytes");
    o->left_behind = KillTree(req, c.pid);
  }
  // Everything is dead: the pipes reach EOF at once, unless a process beyond reach holds them.
  const auto until = Clock::now() + std::chrono::milliseconds(200);
  while ((c.report.valid() || c.err.valid()) && Clock::now() < until) {
    pollfd polls[2] = {{c.report.get(), POLLIN, 0}, {c.err.get(), POLLIN, 0}};
    if (::poll(polls, 2, 20) <= 0) continue;
    if (polls[0].revents != 0) Drain(c.report, &o->report_text, 0);
    if (polls[1].revents != 0) Drain(c.err, &o->stderr_tail, kTailBytes);
  }
  if (c.sampler) o->timeline = c.sampler->samples();
  int wstatus = 0;
  while (::wait4(c.pid, &wstatus, 0, &o->usage) < 0 && errno == EINTR) {
  }
  o->process_s = Since(c.forked, Clock::now());
  o->stderr_tail = TailLines(o->stderr_tail);
  if (WIFSIGNALED(wstatus)) {
    o->signal = WTERMSIG(wstatus);
  } else if (WIFEXITED(wstatus)) {
    o->exit_status = WEXITSTATUS(wstatus);
  }
}

}  // namespace

ExecOutcome RunCommand(const ExecRequest& req, bool* interrupted) {
  ExecOutcome o;
  Running c;
  const Status started = Start(req, &c);
  o.exec_mono_s = std::chrono::duration<double>(c.exec.time_since_epoch()).count();
  if (!started.ok()) {
    o.error = started.message();
    if (c.pid > 0) Finish(req, c, false, &o);
    return o;
  }
  o.started = true;
  const bool exited = Watch(req, c, &o, interrupted);
  Finish(req, c, exited, &o);
  if (o.timed_out) {
    o.error = fmt::format("timed out after {:.0f} s; the command's processes were killed",
                          req.timeout_s);
  } else if (o.signal != 0) {
    o.error = fmt::format("command killed by signal {} ({})", o.signal, ::strsignal(o.signal));
  } else if (o.exit_status.value_or(0) != 0) {
    o.error = fmt::format("command exited with status {}", *o.exit_status);
  }
  return o;
}

}  // namespace loadbench
