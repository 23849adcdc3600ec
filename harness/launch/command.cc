// The process side of the command launcher: start a run's commands together, each in its own
// process group (and the run's cgroup), watch each until its first process exits, then leave
// nothing of them alive.
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
#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "harness/launch/watch.h"
#include "harness/process/child.h"
#include "harness/process/program.h"
#include "loaders/base/file_io.h"
#include "loaders/base/proc_fields.h"
#include "loaders/blocks/peers.h"

namespace loadbench {
namespace {

using Clock = WatchClock;
constexpr int kReportFd = 3;         // LOADBENCH_FD in the command
constexpr size_t kTailBytes = 4096;  // of stderr, kept
constexpr int kTailLines = 8;        // of those, put in the record

double Since(Clock::time_point t0, Clock::time_point t1) {
  return std::chrono::duration<double>(t1 - t0).count();
}

// CLOCK_REALTIME now, in seconds: what records compare across readers and hosts.
double WallSecondsNow() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// A command's environment: the harness's, its request's variables, LOADBENCH_FD and, with a
// timeout, LOADBENCH_DEADLINE as a worker gets it (launch/workers.cc): a little before the
// watch kills the commands at `killed_at`, so that one that waits on another (a peer's
// rendezvous) fails first, naming it.
std::vector<std::string> CommandEnv(const ExecRequest& req, Clock::time_point killed_at) {
  std::vector<std::string> vars = req.env;
  vars.push_back(fmt::format("LOADBENCH_FD={}", kReportFd));
  if (req.timeout_s > 0) vars.push_back(DeadlineVariable(killed_at, req.timeout_s));
  return EnvironmentWith(vars);
}

// Whether `pid` still runs: a zombie has ended, and may wait long for its reaper (an init that
// reaps orphans once a second), so it is not waited for to go.
bool StillRuns(pid_t pid) {
  const std::vector<std::string> stat = ProcStatFields(pid);  // field 3: the state
  return stat.size() > 3 && stat[3] != "Z" && stat[3] != "X";
}

// The members of process group `pgid`, found in `cgroup_dir`'s list, or without a cgroup ("")
// among every process; none of `spared` (the commands' first processes, reaped later).
std::set<pid_t> GroupMembers(const std::string& cgroup_dir, pid_t pgid,
                             const std::set<pid_t>& spared) {
  std::set<pid_t> pids;
  if (!cgroup_dir.empty()) {
    std::ifstream in(cgroup_dir + "/cgroup.procs");
    for (pid_t p; in >> p;) {
      if (::getpgid(p) == pgid && spared.count(p) == 0 && StillRuns(p)) pids.insert(p);
    }
  } else if (DIR* d = ::opendir("/proc")) {
    while (const dirent* ent = ::readdir(d)) {
      const pid_t p = static_cast<pid_t>(std::atoi(ent->d_name));
      if (p > 0 && ::getpgid(p) == pgid && spared.count(p) == 0 && StillRuns(p)) pids.insert(p);
    }
    ::closedir(d);
  }
  return pids;
}

// Every member of `cgroup_dir` (none without one) but `spared`.
std::set<pid_t> CgroupMembers(const std::string& cgroup_dir, const std::set<pid_t>& spared) {
  std::set<pid_t> pids;
  if (cgroup_dir.empty()) return pids;
  std::ifstream in(cgroup_dir + "/cgroup.procs");
  for (pid_t p; in >> p;) {
    if (spared.count(p) == 0 && StillRuns(p)) pids.insert(p);
  }
  return pids;
}

// Kills process group `pgid` (0: none) and whatever `members` lists until it lists nothing (at
// most a second: a process that left both is beyond reach). The number it listed at first.
int KillUntilGone(pid_t pgid, const std::function<std::set<pid_t>()>& members) {
  std::set<pid_t> left = members();
  const int found = static_cast<int>(left.size());
  const auto until = Clock::now() + std::chrono::seconds(1);
  for (;;) {
    if (pgid > 0) ::kill(-pgid, SIGKILL);
    for (pid_t p : left) ::kill(p, SIGKILL);
    left = members();
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

// One command of a run: forked and held before its exec, released, watched until its first
// process exits, then reaped.
class Running {
 public:
  Running(const ExecRequest& req, ExecOutcome* o) : req_(req), o_(*o) {}

  // Forks it in a process group of its own; the child waits for EOF on `gate_rd` (its copy of
  // `gate_wr` closed at once) before it is set up and execs with `env`.
  Status Spawn(int gate_rd, int gate_wr, std::vector<std::string> env);
  // Once released: whether it exec'd (the error when not), its exec time, its timeline.
  Status Confirm();
  // Its three descriptors of a turn: its pidfd while it runs, its report and stderr pipes
  // until EOF (-1 for none).
  void AddFds(std::vector<pollfd>* fds) const;
  void Ready(size_t which);
  // Whether its first process has exited and that is not handled yet.
  bool ExitSeen();
  // Its first process exited (seen at `polled`): its wall time, what it read, its process
  // group killed and counted (`leaders` spared, to be reaped).
  void Exited(Clock::time_point polled, const std::set<pid_t>& leaders);
  // After the watch: its last output, then the reaping that gives its rusage and status.
  void Finish();

  bool running() const { return running_; }
  pid_t pid() const { return pid_; }
  // Without a pidfd the exit is looked for every millisecond.
  int MaxWaitMs() const { return running_ && !pidfd_.valid() ? 1 : 100; }

 private:
  void NoteDone();
  void DrainUntilClosed();

  const ExecRequest& req_;
  ExecOutcome& o_;
  pid_t pid_ = -1;
  UniqueFd pidfd_, report_, err_, status_rd_, clock_rd_;
  Clock::time_point forked_, exec_;
  // The timeline, sampled beside the watch so that the exit is seen at once.
  std::unique_ptr<SamplingThread> sampler_;
  bool pid_ready_ = false, running_ = false;
  size_t scanned_ = 0;  // of the report text, looked through for its `done` line
};

Status Running::Spawn(int gate_rd, int gate_wr, std::vector<std::string> env) {
  int report[2], err[2], status[2];
  if (::pipe2(report, O_CLOEXEC) != 0) return Status::FromErrno("pipe", errno);
  UniqueFd report_wr(report[1]);
  report_.reset(report[0]);
  if (::pipe2(err, O_CLOEXEC) != 0) return Status::FromErrno("pipe", errno);
  UniqueFd err_wr(err[1]);
  err_.reset(err[0]);
  if (::pipe2(status, O_CLOEXEC) != 0) return Status::FromErrno("pipe", errno);
  UniqueFd status_wr(status[1]);
  status_rd_.reset(status[0]);
  int clock[2];
  if (::pipe2(clock, O_CLOEXEC) != 0) return Status::FromErrno("pipe", errno);
  UniqueFd clock_wr(clock[1]);
  clock_rd_.reset(clock[0]);
  std::vector<std::string> argv_s = req_.argv;
  std::vector<char*> argv = CStrings(argv_s), envp = CStrings(env);
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
  if (pid == 0) {
    // Held until every command of the run is forked (async-signal-safe calls only); EOF also
    // when the harness died, which ExecChild then sees.
    ::close(gate_wr);
    char go = 0;
    while (::read(gate_rd, &go, 1) < 0 && errno == EINTR) {
    }
    ExecChild(setup, req_.program.c_str(), argv.data(), envp.data());
  }
  pid_ = pid;
  ::setpgid(pid, pid);  // also here, so that a kill of the group cannot come before it exists
  pidfd_.reset(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  return Status::Ok();
}

Status Running::Confirm() {
  int child_errno = 0;
  ssize_t n;
  while ((n = ::read(status_rd_.get(), &child_errno, sizeof child_errno)) < 0 && errno == EINTR) {
  }
  status_rd_.reset();
  exec_ = ExecTime(clock_rd_.get());
  clock_rd_.reset();
  o_.exec_mono_s = std::chrono::duration<double>(exec_.time_since_epoch()).count();
  o_.exec_unix_s = WallSecondsNow() - Since(exec_, Clock::now());
  if (n > 0) return Status::FromErrno(fmt::format("starting {}", req_.program), child_errno);
  if (req_.sample_s > 0) {
    sampler_ = std::make_unique<SamplingThread>(pid_, req_.file_paths, req_.sample_s);
  }
  running_ = true;
  o_.started = true;
  return Status::Ok();
}

void Running::AddFds(std::vector<pollfd>* fds) const {
  fds->push_back({running_ ? pidfd_.get() : -1, POLLIN, 0});
  fds->push_back({report_.get(), POLLIN, 0});
  fds->push_back({err_.get(), POLLIN, 0});
}

void Running::Ready(size_t which) {
  if (which == 0) pid_ready_ = true;
  if (which == 1 && Drain(report_, &o_.report_text, 0)) NoteDone();
  if (which == 2) Drain(err_, &o_.stderr_tail, kTailBytes);
}

// When its `done` line arrived, by the wall clock: a command timed "region" started its
// region that many seconds before (FillExecRecord).
void Running::NoteDone() {
  const std::string& text = o_.report_text;
  for (size_t nl; !o_.done_unix_s && (nl = text.find('\n', scanned_)) != std::string::npos;) {
    if (text.compare(scanned_, 5, "done ") == 0) o_.done_unix_s = WallSecondsNow();
    scanned_ = nl + 1;
  }
}

bool Running::ExitSeen() {
  if (!running_) return false;
  if (pidfd_.valid()) return pid_ready_;
  siginfo_t info{};
  return ::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
         info.si_pid == pid_;
}

void Running::Exited(Clock::time_point polled, const std::set<pid_t>& leaders) {
  running_ = false;
  o_.wall_s = Since(exec_, polled);
  if (sampler_) o_.timeline = sampler_->Stop();
  sampler_.reset();
  siginfo_t info{};
  while (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR) {
  }
  // A zombie's io counters hold its own reads and those of every child it reaped.
  o_.read_bytes = ProcField(fmt::format("/proc/{}/io", pid_), "read_bytes");
  o_.left_behind +=
      KillUntilGone(pid_, [&] { return GroupMembers(req_.cgroup_dir, pid_, leaders); });
}

// Everything is dead: the pipes reach EOF at once, unless a process beyond reach holds them.
void Running::DrainUntilClosed() {
  const auto until = Clock::now() + std::chrono::milliseconds(200);
  while ((report_.valid() || err_.valid()) && Clock::now() < until) {
    pollfd polls[2] = {{report_.get(), POLLIN, 0}, {err_.get(), POLLIN, 0}};
    if (::poll(polls, 2, 20) <= 0) continue;
    if (polls[0].revents != 0 && Drain(report_, &o_.report_text, 0)) NoteDone();
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

void Running::Finish() {
  if (sampler_) o_.timeline = sampler_->Stop();  // killed before its exit was seen
  sampler_.reset();
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

// The commands of one run while they run.
class CommandRun final : public Watched {
 public:
  CommandRun(const std::vector<ExecRequest>& reqs, std::vector<ExecOutcome>* out)
      : reqs_(reqs), out_(*out), cgroup_dir_(reqs.front().cgroup_dir) {
    for (size_t i = 0; i < reqs.size(); ++i) {
      commands_.push_back(std::make_unique<Running>(reqs[i], &out_[i]));
    }
  }

  // Every command forked and held, `all_ready`, then all released at once.
  void Start(const std::function<void()>& all_ready);
  // After the watch: what is left killed, every command reaped, each one's error.
  void End(WatchEnd end);

  bool any_running() const {
    return std::any_of(commands_.begin(), commands_.end(),
                       [](const auto& c) { return c->running(); });
  }
  void Fds(std::vector<pollfd>* fds) override {
    for (const auto& c : commands_) c->AddFds(fds);
  }
  void Ready(size_t i) override { commands_[i / 3]->Ready(i % 3); }
  bool Done(Clock::time_point polled) override;
  void KillAll() override {
    for (const auto& c : commands_) {
      if (c->pid() > 0) ::kill(-c->pid(), SIGKILL);
    }
    for (const auto& c : commands_) {
      if (c->pid() > 0) {
        KillUntilGone(c->pid(), [&] { return GroupMembers(cgroup_dir_, c->pid(), leaders_); });
      }
    }
    KillUntilGone(0, [&] { return CgroupMembers(cgroup_dir_, leaders_); });
  }
  int MaxWaitMs() const override {
    int ms = 100;
    for (const auto& c : commands_) ms = std::min(ms, c->MaxWaitMs());
    return ms;
  }

  const Clock::time_point t0 = Clock::now();

 private:
  void CountEscaped(size_t k);

  const std::vector<ExecRequest>& reqs_;
  std::vector<ExecOutcome>& out_;
  const std::string cgroup_dir_;
  std::vector<std::unique_ptr<Running>> commands_;
  std::set<pid_t> leaders_;  // every command's first process
  std::set<pid_t> escaped_;  // processes that left every command's group, counted already
  size_t last_exited_ = 0;
};

void CommandRun::Start(const std::function<void()>& all_ready) {
  int gate[2];
  if (::pipe2(gate, O_CLOEXEC) != 0) {
    for (ExecOutcome& o : out_) o.error = Status::FromErrno("pipe", errno).message();
    return;
  }
  UniqueFd gate_rd(gate[0]), gate_wr(gate[1]);
  const Clock::time_point killed_at =
      t0 + std::chrono::duration_cast<Clock::duration>(
               std::chrono::duration<double>(reqs_.front().timeout_s));
  for (size_t i = 0; i < commands_.size(); ++i) {
    const Status s =
        commands_[i]->Spawn(gate_rd.get(), gate_wr.get(), CommandEnv(reqs_[i], killed_at));
    if (!s.ok()) out_[i].error = s.message();
    if (commands_[i]->pid() > 0) leaders_.insert(commands_[i]->pid());
  }
  if (all_ready) all_ready();
  gate_wr.reset();  // EOF: every held command goes on to its exec
  for (size_t i = 0; i < commands_.size(); ++i) {
    if (commands_[i]->pid() <= 0 || !out_[i].error.empty()) continue;
    if (const Status s = commands_[i]->Confirm(); !s.ok()) out_[i].error = s.message();
  }
}

bool CommandRun::Done(Clock::time_point polled) {
  for (size_t k = 0; k < commands_.size(); ++k) {
    if (!commands_[k]->ExitSeen()) continue;
    commands_[k]->Exited(polled, leaders_);
    CountEscaped(k);
    last_exited_ = k;
  }
  return !any_running();
}

// Processes in the cgroup outside every command's process group (a daemon that called setsid)
// cannot be told apart: each is counted on the first command to exit once it is there, and
// killed once every command has exited, so that none of the others loses a process it uses.
void CommandRun::CountEscaped(size_t k) {
  for (pid_t p : CgroupMembers(cgroup_dir_, leaders_)) {
    const pid_t group = ::getpgid(p);
    if (group <= 0 || leaders_.count(group) != 0 || !escaped_.insert(p).second) continue;
    ++out_[k].left_behind;
  }
}

void CommandRun::End(WatchEnd end) {
  if (end == WatchEnd::kDone && !cgroup_dir_.empty()) {
    const std::set<pid_t> left = CgroupMembers(cgroup_dir_, leaders_);
    KillUntilGone(0, [&] { return CgroupMembers(cgroup_dir_, leaders_); });
    for (pid_t p : left) out_[last_exited_].left_behind += escaped_.count(p) == 0 ? 1 : 0;
  }
  for (size_t i = 0; i < commands_.size(); ++i) {
    out_[i].timed_out = end == WatchEnd::kTimedOut && commands_[i]->running();
    if (commands_[i]->pid() > 0) commands_[i]->Finish();
    if (out_[i].started) out_[i].error = EndError(reqs_[i], out_[i]);
  }
}

}  // namespace

std::vector<ExecOutcome> RunCommands(const std::vector<ExecRequest>& reqs,
                                     const std::function<void()>& all_ready, bool* interrupted) {
  std::vector<ExecOutcome> out(reqs.size());
  *interrupted = false;
  if (reqs.empty()) return out;
  CommandRun run(reqs, &out);
  run.Start(all_ready);
  WatchEnd end = WatchEnd::kDone;
  if (run.any_running()) end = Watch(run, /*sample_s=*/0, reqs.front().timeout_s, run.t0);
  *interrupted = end == WatchEnd::kInterrupted;
  run.End(end);
  return out;
}

ExecOutcome RunCommand(const ExecRequest& req, bool* interrupted) {
  return std::move(RunCommands({req}, {}, interrupted).front());
}

}  // namespace loadbench
