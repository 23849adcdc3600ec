#include "harness/run/spawn.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <string_view>

#include <fmt/format.h>

#include "harness/run/profile.h"
#include "harness/system/cgroup.h"
#include "harness/system/interrupt.h"
#include "loaders/base/file_io.h"

namespace loadbench {
namespace {

using Clock = std::chrono::steady_clock;

// One started worker, as the runner tracks it.
struct Child {
  pid_t pid = -1;
  UniqueFd result;  // the read end of the worker's result pipe
  UniqueFd hold;    // the write end of its hold pipe (several workers only)
  std::string data;
  bool open = true;  // result pipe not at EOF yet
  bool loaded = false, measured = false;  // the worker's hold stages (several workers only)
  std::unique_ptr<TimelineSampler> sampler;
  std::unique_ptr<Profiler> profiler;
  std::string profile_data, profile_error;
};

// The descriptors a worker gets, at 3, 4, 5 and 6 (-1: none).
struct WorkerFds {
  int result = -1, hold = -1, profile_ctl = -1, profile_ack = -1;
};

// What differs between the workers of one run: the part each loads and its checksum.
struct WorkerArgs {
  std::string part, checksum;
};

WorkerArgs ArgsOf(const SpawnRequest& req, size_t i) {
  if (req.parts <= 1) return {"0/1", req.expect_checksum};
  return {fmt::format("{}/{}", req.first_part + static_cast<int>(i), req.parts),
          req.part_checksums.at(i)};
}

// In the child, after fork: only async-signal-safe calls until exec.
[[noreturn]] void ExecWorker(const SpawnRequest& req, const WorkerArgs& args, WorkerFds fds,
                             pid_t parent) {
  ::signal(SIGINT, SIG_DFL);
  ::signal(SIGTERM, SIG_DFL);
  // Nothing outlives the harness: killed by any signal, SIGKILL included, it takes the worker
  // with it (the setting survives exec). A harness that died before this line is seen here.
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent) ::_exit(125);
  // The OOM killer must pick a worker, never the harness that records its death.
  SetOomScoreAdjFromChild(1000);
  if (!req.cgroup_procs.empty() && !JoinCgroupFromChild(req.cgroup_procs.c_str())) ::_exit(126);
  int placed[] = {fds.result, fds.hold, fds.profile_ctl, fds.profile_ack};
  if (!PlaceFdsFromChild(placed, 4)) ::_exit(127);
  int devnull = ::open("/dev/null", O_RDONLY);
  if (devnull >= 0) ::dup2(devnull, 0);
  const char* hold_arg = fds.hold >= 0 ? "4" : "-1";
  const bool profiled = fds.profile_ctl >= 0;
  const char* argv[] = {req.exe.c_str(),      "worker",          "--file",
                        req.file.c_str(),     "--strategy",      req.strategy.c_str(),
                        "--result-fd",        "3",               "--counters",
                        req.counters.c_str(), "--hold-fd",       hold_arg,
                        "--expect-checksum",  args.checksum.c_str(),
                        "--pattern",          req.pattern.c_str(),
                        "--part",             args.part.c_str(),
                        "--profile-ctl-fd",   profiled ? "5" : "-1",
                        "--profile-ack-fd",   profiled ? "6" : "-1", nullptr};
  ::execv(req.exe.c_str(), const_cast<char* const*>(argv));
  ::_exit(127);
}

// Perf's pipes for a worker about to be forked; without them the worker runs unprofiled and
// its outcome says why.
void OpenProfiler(const SpawnRequest& req, Child* c) {
  if (req.profile_hz <= 0) return;
  c->profiler = std::make_unique<Profiler>();
  if (Status s = c->profiler->Open(); !s.ok()) {
    c->profile_error = s.message();
    c->profiler.reset();
  }
}

// Forks and execs one `loadbench worker`, and its profiler.
Status StartChild(const SpawnRequest& req, const WorkerArgs& args, Child* c) {
  int result[2], hold[2] = {-1, -1};
  if (::pipe2(result, O_CLOEXEC) != 0) return Status::FromErrno("pipe", errno);
  c->result.reset(result[0]);
  UniqueFd wr(result[1]), hold_rd;
  if (req.procs > 1) {
    if (::pipe2(hold, O_CLOEXEC) != 0) return Status::FromErrno("pipe", errno);
    hold_rd.reset(hold[0]);
    c->hold.reset(hold[1]);
  }
  OpenProfiler(req, c);
  WorkerFds fds{wr.get(), hold_rd.valid() ? hold_rd.get() : -1};
  if (c->profiler) {
    fds.profile_ctl = c->profiler->worker_ctl();
    fds.profile_ack = c->profiler->worker_ack();
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return Status::FromErrno("fork", errno);
  if (pid == 0) ExecWorker(req, args, fds, parent);
  c->pid = pid;
  if (c->profiler) {
    c->profile_data = fmt::format("{}/worker-{}.perf.data", req.profile_dir, pid);
    if (Status s = c->profiler->Start(req.perf, pid, req.profile_hz, c->profile_data); !s.ok()) {
      c->profile_error = s.message();
      c->profiler.reset();
    }
  }
  if (req.sample_s > 0) c->sampler = std::make_unique<TimelineSampler>(
      pid, req.file_paths.empty() ? std::vector<std::string>{req.file} : req.file_paths);
  return Status::Ok();
}

// The workers of one run while they run.
class Group {
 public:
  Group(const SpawnRequest& req, std::vector<WorkerOutcome>* out)
      : req_(req), out_(*out), children_(out->size()), released_(req.procs == 1) {}

  void StartAll() {
    for (size_t i = 0; i < children_.size(); ++i) {
      if (Status s = StartChild(req_, ArgsOf(req_, i), &children_[i]); !s.ok()) {
        out_[i].error = s.message();
        children_[i].open = false;
      }
    }
  }

  // Waits for output, reads it, and moves the hold barriers; false once every pipe is closed,
  // or when the workers were killed (*killed).
  bool Step(bool* killed, bool* interrupted) {
    std::vector<pollfd> polls;
    std::vector<size_t> who;
    for (size_t i = 0; i < children_.size(); ++i) {
      if (children_[i].open) {
        polls.push_back({children_[i].result.get(), POLLIN, 0});
        who.push_back(i);
      }
    }
    if (polls.empty()) return false;
    const int pr = ::poll(polls.data(), polls.size(), SampleAndWaitMs());
    if (KillIfDue(interrupted)) {
      *killed = true;
      return false;
    }
    if (pr < 0 && errno != EINTR) return false;
    for (size_t k = 0; pr > 0 && k < polls.size(); ++k) {
      if (polls[k].revents != 0) ReadFrom(children_[who[k]]);
    }
    MoveBarriers();
    return true;
  }

  void ReapAll(bool killed);

 private:
  // Samples the timelines when a sample is due; the poll's wait until the next one.
  int SampleAndWaitMs() {
    if (pacer_.Due()) {
      for (auto& c : children_) {
        if (c.sampler) c.sampler->Sample();
      }
    }
    return pacer_.WaitMs(100);
  }

  // Kills every worker on interruption or timeout.
  bool KillIfDue(bool* interrupted) {
    const double elapsed = std::chrono::duration<double>(Clock::now() - t0_).count();
    if (!Interrupted() && !(req_.timeout_s > 0 && elapsed > req_.timeout_s)) return false;
    for (auto& c : children_) {
      if (c.pid > 0) ::kill(c.pid, SIGKILL);
    }
    *interrupted = Interrupted();
    for (size_t i = 0; i < out_.size(); ++i) {
      if (!*interrupted && children_[i].open) {
        out_[i].error = fmt::format("timed out after {:.0f} s; worker killed", req_.timeout_s);
      }
    }
    return true;
  }

  void ReadFrom(Child& c) {
    char buf[4096];
    const ssize_t n = ::read(c.result.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) return;
    if (n <= 0) {
      c.open = false;
      return;
    }
    c.data.append(buf, static_cast<size_t>(n));
    for (auto [stage, flag] : {std::pair<std::string_view, bool*>{"loaded\n", &c.loaded},
                               {"measured\n", &c.measured}}) {
      if (!*flag && c.data.starts_with(stage)) {
        *flag = true;
        c.data.erase(0, stage.size());
      }
    }
  }

  // Two barriers for several workers: all loaded -> one byte each (measure your memory now);
  // all measured -> EOF (tear down and report).
  void MoveBarriers() {
    auto all = [&](bool Child::*stage) {
      return std::all_of(children_.begin(), children_.end(),
                         [&](const Child& c) { return c.*stage || !c.open; });
    };
    if (!released_) {
      if (!all(&Child::loaded)) return;
      for (auto& c : children_) {
        if (c.hold.valid() && ::write(c.hold.get(), "g", 1) != 1) c.hold.reset();
      }
      released_ = true;
    } else if (req_.procs > 1 && all(&Child::measured)) {
      for (auto& c : children_) c.hold.reset();
    }
  }

  void Judge(const Child& c, int wstatus, WorkerOutcome* o) const;
  void FinishProfile(Child& c, bool killed, WorkerOutcome* o) const;

  const SpawnRequest& req_;
  std::vector<WorkerOutcome>& out_;
  std::vector<Child> children_;
  bool released_;
  const Clock::time_point t0_ = Clock::now();
  SamplePacer pacer_{req_.sample_s};
};

// Why a reaped worker left no usable record, or its record.
void Group::Judge(const Child& c, int wstatus, WorkerOutcome* o) const {
  if (WIFSIGNALED(wstatus)) {
    o->signal = WTERMSIG(wstatus);
    o->error = fmt::format("worker killed by signal {} ({})", o->signal, ::strsignal(o->signal));
  } else if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 127) {
    o->error = fmt::format("could not execute {}", req_.exe);
  } else if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 126 && !req_.cgroup_procs.empty()) {
    o->error =
        fmt::format("the worker could not join its memory cgroup ({})", req_.cgroup_procs);
  } else {
    const auto j = nlohmann::ordered_json::parse(c.data, nullptr, false);
    if (j.is_discarded() || !FromWireJson(j, &o->record).ok()) {
      o->error = fmt::format("worker exited with status {} and no result",
                             WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1);
    }
  }
}

void Group::ReapAll(bool killed) {
  for (size_t i = 0; i < children_.size(); ++i) {
    Child& c = children_[i];
    WorkerOutcome& o = out_[i];
    if (c.sampler) o.timeline = c.sampler->samples();
    if (c.pid <= 0) continue;
    int wstatus = 0;
    while (::wait4(c.pid, &wstatus, 0, &o.usage) < 0 && errno == EINTR) {
    }
    o.process_s = std::chrono::duration<double>(Clock::now() - t0_).count();
    if (!killed && o.error.empty()) Judge(c, wstatus, &o);
  }
  for (size_t i = 0; i < children_.size(); ++i) FinishProfile(children_[i], killed, &out_[i]);
}

// Once its worker is reaped, perf writes its data and exits; the outcome gets the data or why
// there is none.
void Group::FinishProfile(Child& c, bool killed, WorkerOutcome* o) const {
  if (req_.profile_hz <= 0) return;
  o->profile_error = c.profile_error;
  if (!c.profiler) return;
  if (killed) {
    c.profiler->Kill();
    return;
  }
  if (Status s = c.profiler->Finish(30); s.ok()) {
    o->profile_data = c.profile_data;
  } else {
    o->profile_error = s.message();
  }
}

}  // namespace

bool PlaceFdsFromChild(int* fds, int n) {
  for (int i = 0; i < n; ++i) {
    if (fds[i] >= 0 && (fds[i] = ::fcntl(fds[i], F_DUPFD_CLOEXEC, 16)) < 0) return false;
  }
  for (int i = 0; i < n; ++i) {
    if (fds[i] >= 0 && ::dup2(fds[i], 3 + i) < 0) return false;  // dup2 clears O_CLOEXEC
  }
  return true;
}

std::vector<WorkerOutcome> SpawnWorkers(const SpawnRequest& req, bool* interrupted) {
  std::vector<WorkerOutcome> out(static_cast<size_t>(req.procs));
  Group group(req, &out);
  group.StartAll();
  bool killed = false;
  while (group.Step(&killed, interrupted)) {
  }
  group.ReapAll(killed);
  return out;
}

}  // namespace loadbench
