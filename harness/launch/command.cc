// The process side of the command launcher: start the command in its own process group (and
// cgroup), watch it until its first process exits, then leave nothing of it alive.
#include "harness/launch/command.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "harness/launch/watch.h"
#include "harness/process/child.h"
#include "harness/process/program.h"
#include "loaders/base/file_io.h"
#include "loaders/base/proc_fields.h"

namespace loadbench {
namespace {

using Clock = WatchClock;
constexpr int kReportFd = 3;         // LOADBENCH_FD in the command
constexpr size_t kTailBytes = 4096;  // of stderr, kept
constexpr int kTailLines = 8;        // of those, put in the record

double Since(Clock::time_point t0, Clock::time_point t1) {
  return std::chrono::duration<double>(t1 - t0).count();
}

// The environment with LOADBENCH_FD set, as execve takes it.
std::vector<std::string> CommandEnv() {
  return EnvironmentWith({fmt::format("LOADBENCH_FD={}", kReportFd)});
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

// When the child called execve, by its own clock (ChildSetup::exec_clock_fd): the parent may
// be scheduled long after, and a short command may be over by then. Now, when it said nothing.
Clock::time_point ExecTime(int clock_fd) {
  timespec ts{};
  ssize_t n;
  while ((n = ::read(clock_fd, &ts, sizeof ts)) < 0 && errno == EINTR) {
  }
  if (n != static_cast<ssize_t>(sizeof ts)) return Clock::now();
  return Clock::time_point(std::chrono::duration_cast<Clock::duration>(
      std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec)));
}

// One started command while it runs.
class Running final : public Watched {
 public:
  Running(const ExecRequest& req, ExecOutcome* o) : req_(req), o_(*o) {}

  // Forks and execs; the error when the command could not be started.
  Status Start();
  // After the first process exited (or everything was killed): what it read, what it left,
  // its last output, then the reaping that gives its rusage and status.
  void Finish(bool exited);

  void Fds(std::vector<pollfd>* fds) override {
    *fds = {{pidfd_.get(), POLLIN, 0}, {report_.get(), POLLIN, 0}, {err_.get(), POLLIN, 0}};
  }
  void Ready(size_t i) override {
    if (i == 1) Drain(report_, &o_.report_text, 0);
    if (i == 2) Drain(err_, &o_.stderr_tail, kTailBytes);
    if (i == 0) pid_ready_ = true;
  }
  bool Done(Clock::time_point polled) override;
  void KillAll() override { KillTree(req_, pid_); }
  // Without a pidfd the exit is looked for every millisecond.
  int MaxWaitMs() const override { return pidfd_.valid() ? 100 : 1; }

  pid_t pid() const { return pid_; }
  Clock::time_point exec() const { return exec_; }

 private:
  void DrainUntilClosed();

  const ExecRequest& req_;
  ExecOutcome& o_;
  pid_t pid_ = -1;
  UniqueFd pidfd_, report_, err_;
  Clock::time_point forked_, exec_;
  // The timeline, sampled beside the watch so that the exit is seen at once (Done).
  std::unique_ptr<SamplingThread> sampler_;
  bool pid_ready_ = false;
};

Status Running::Start() {
  int report[2], err[2], status[2];
  if (::pipe2(report, O_CLOEXEC) != 0) return Status::FromErrno("pipe", errno);
  UniqueFd report_wr(report[1]);
  report_.reset(report[0]);
  if (::pipe2(err, O_CLOEXEC) != 0) return Status::FromErrno("pipe", errno);
  UniqueFd err_wr(err[1]);
  err_.reset(err[0]);
  if (::pipe2(status, O_CLOEXEC) != 0) return Status::FromErrno("pipe", errno);
  UniqueFd status_rd(status[0]), status_wr(status[1]);
  int clock[2];
  if (::pipe2(clock, O_CLOEXEC) != 0) return Status::FromErrno("pipe", errno);
  UniqueFd clock_rd(clock[0]), clock_wr(clock[1]);
  std::vector<std::string> argv_s = req_.argv, env_s = CommandEnv();
  std::vector<char*> argv = CStrings(argv_s), envp = CStrings(env_s);
  const int fds[1] = {report_wr.get()};
  ChildSetup setup;
  setup.parent = ::getpid();
  setup.own_group = true;
  setup.oom_victim = true;
  setup.cgroup_procs = req_.cgroup_procs.empty() ? nullptr : req_.cgroup_procs.c_str();
  setup.fds = fds;
  setup.nfds = 1;
  setup.out = -1;
  setup.err = err_wr.get();
  setup.errno_fd = status_wr.get();
  setup.exec_clock_fd = clock_wr.get();
  forked_ = Clock::now();
  const pid_t pid = ::fork();
  if (pid < 0) return Status::FromErrno("fork", errno);
  if (pid == 0) ExecChild(setup, req_.program.c_str(), argv.data(), envp.data());
  pid_ = pid;
  ::setpgid(pid, pid);  // also here, so that a kill of the group cannot come before it exists
  status_wr.reset();
  clock_wr.reset();
  int child_errno = 0;
  ssize_t n;
  while ((n = ::read(status_rd.get(), &child_errno, sizeof child_errno)) < 0 && errno == EINTR) {
  }
  exec_ = ExecTime(clock_rd.get());
  pidfd_.reset(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (n > 0) return Status::FromErrno(fmt::format("starting {}", req_.program), child_errno);
  if (req_.sample_s > 0) {
    sampler_ = std::make_unique<SamplingThread>(pid, req_.file_paths, req_.sample_s);
  }
  return Status::Ok();
}

bool Running::Done(Clock::time_point polled) {
  siginfo_t info{};
  const bool exited = pidfd_.valid() ? pid_ready_
                                     : ::waitid(P_PID, static_cast<id_t>(pid_), &info,
                                                WEXITED | WNOHANG | WNOWAIT) == 0 &&
                                           info.si_pid == pid_;
  if (exited) o_.wall_s = Since(exec_, polled);
  return exited;
}

// Everything is dead: the pipes reach EOF at once, unless a process beyond reach holds them.
void Running::DrainUntilClosed() {
  const auto until = Clock::now() + std::chrono::milliseconds(200);
  while ((report_.valid() || err_.valid()) && Clock::now() < until) {
    pollfd polls[2] = {{report_.get(), POLLIN, 0}, {err_.get(), POLLIN, 0}};
    if (::poll(polls, 2, 20) <= 0) continue;
    if (polls[0].revents != 0) Drain(report_, &o_.report_text, 0);
    if (polls[1].revents != 0) Drain(err_, &o_.stderr_tail, kTailBytes);
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

void Running::Finish(bool exited) {
  if (sampler_) o_.timeline = sampler_->Stop();
  if (exited) {
    siginfo_t info{};
    while (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOWAIT) < 0 &&
           errno == EINTR) {
    }
    // A zombie's io counters hold its own reads and those of every child it reaped.
    o_.read_bytes = ProcField(fmt::format("/proc/{}/io", pid_), "read_bytes");
    o_.left_behind = KillTree(req_, pid_);
  }
  DrainUntilClosed();
  const int wstatus = Reap(pid_, &o_.usage);
  o_.process_s = Since(forked_, Clock::now());
  o_.stderr_tail = TailLines(o_.stderr_tail);
  if (WIFSIGNALED(wstatus)) {
    o_.signal = WTERMSIG(wstatus);
  } else if (WIFEXITED(wstatus)) {
    o_.exit_status = WEXITSTATUS(wstatus);
  }
}

// Why the command's run failed, from how it ended; "" when it ended well.
std::string EndError(const ExecRequest& req, const ExecOutcome& o) {
  if (o.timed_out) {
    return fmt::format("timed out after {:.0f} s; the command's processes were killed",
                       req.timeout_s);
  }
  if (o.signal != 0) {
    return fmt::format("command killed by signal {} ({})", o.signal, ::strsignal(o.signal));
  }
  if (o.exit_status.value_or(0) != 0) {
    return fmt::format("command exited with status {}", *o.exit_status);
  }
  return "";
}

class Command final : public Launcher {
 public:
  std::string NotOffered(int readers, uint64_t) const override {
    return readers > 1 ? "exec runs one command per run; procs > 1 is not offered" : "";
  }
  bool measuring_cgroup() const override { return true; }
  bool checks_warm_reads() const override { return false; }
  bool checks_cold_reads() const override { return true; }
  std::string unprofiled(size_t) const override {
    return "exec commands are not profiled: no timed region the profiler could be turned on "
           "and off at";
  }
  std::vector<ReaderOutcome> Launch(const LaunchRequest& req, const HostSteps& host,
                                    bool* interrupted) override {
    std::vector<ReaderOutcome> out(1);
    HostState h = host.prepare();
    if (h.ok) {
      const ExecRequest er = {req.program,  req.argv,      req.file_paths, h.cgroup_procs,
                              h.cgroup_dir, req.timeout_s, req.sample_s};
      const ExecOutcome o = RunCommand(er, interrupted);
      if (*interrupted) return out;
      host.after(&h);
      FillExecRecord(o, req.worker.expect_checksum, req.timed, {h.cgroup, h.no_cgroup},
                     &out[0].record);
      out[0].signal = o.signal;
      out[0].usage = o.usage;
      out[0].process_s = o.process_s;
      out[0].timeline = o.timeline;
    }
    out[0].host = h;
    return out;
  }
};

}  // namespace

ExecOutcome RunCommand(const ExecRequest& req, bool* interrupted) {
  ExecOutcome o;
  Running c(req, &o);
  const Status started = c.Start();
  o.exec_mono_s = std::chrono::duration<double>(c.exec().time_since_epoch()).count();
  if (!started.ok()) {
    o.error = started.message();
    if (c.pid() > 0) c.Finish(false);
    return o;
  }
  o.started = true;
  const WatchEnd end = Watch(c, /*sample_s=*/0, req.timeout_s, c.exec());
  *interrupted = end == WatchEnd::kInterrupted;
  o.timed_out = end == WatchEnd::kTimedOut;
  c.Finish(end == WatchEnd::kDone);
  o.error = EndError(req, o);
  return o;
}

std::unique_ptr<Launcher> CommandLauncher() { return std::make_unique<Command>(); }

}  // namespace loadbench
