#include "harness/launch/workers.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "harness/launch/watch.h"
#include "harness/process/child.h"
#include "harness/process/program.h"
#include "harness/profile/profile.h"
#include "loaders/base/file_io.h"
#include "loaders/blocks/peers.h"

namespace loadbench {
namespace {

// One started worker, as the runner tracks it.
struct Child {
  pid_t pid = -1;
  UniqueFd result;  // the read end of the worker's result pipe
  UniqueFd start;   // the write end of its start pipe: one byte releases it
  UniqueFd hold;    // the write end of its hold pipe (several workers only)
  std::string data;
  bool open = true;                       // result pipe not at EOF yet
  bool ready = false;                     // set up and waiting at the start barrier
  bool loaded = false, measured = false;  // the worker's hold stages (several workers only)
  std::unique_ptr<TimelineSampler> sampler;
  std::unique_ptr<Profiler> profiler;
  std::string profile_data, profile_error;
};

// Reader `reader`'s request (of the run's readers; under MPI, of every rank's): the part it loads
// and the checksum that must give, its place among the readers, and its descriptors: 3
// (result), 4 (hold), 5 and 6 (perf's), 7 (start).
WorkerRequest ReaderRequest(const LaunchRequest& req, int reader, bool hold, bool profiled) {
  WorkerRequest w = req.worker;
  if (!req.part_checksums.empty()) {
    w.part = reader;
    w.parts = static_cast<int>(req.part_checksums.size());
    w.expect_checksum = req.part_checksums.at(static_cast<size_t>(reader));
  }
  w.reader = reader;
  w.readers = req.all_readers > 0 ? req.all_readers : req.readers;
  w.result_fd = 3;
  w.hold_fd = hold ? 4 : -1;
  w.profile_ctl_fd = profiled ? 5 : -1;
  w.profile_ack_fd = profiled ? 6 : -1;
  w.start_fd = 7;
  return w;
}

// Perf's pipes for a worker about to be forked; without them the worker runs unprofiled and
// its outcome says why.
void OpenProfiler(const LaunchRequest& req, Child* c) {
  if (req.profile_hz <= 0) return;
  c->profiler = std::make_unique<Profiler>();
  if (Status s = c->profiler->Open(); !s.ok()) {
    c->profile_error = s.message();
    c->profiler.reset();
  }
}

// Starts perf on a forked worker, and the worker's timeline.
void Attach(const LaunchRequest& req, Child* c) {
  if (c->profiler) {
    c->profile_data = fmt::format("{}/worker-{}.perf.data", req.profile_dir, c->pid);
    if (Status s = c->profiler->Start(req.perf, c->pid, req.profile_hz, c->profile_data); !s.ok()) {
      c->profile_error = s.message();
      c->profiler.reset();
    }
  }
  if (req.sample_s > 0) c->sampler = std::make_unique<TimelineSampler>(c->pid, req.file_paths);
}

// A test hook (docs/testing.md): LOADBENCH_TEST_SLOW_START=K:SECONDS starts reader K's worker
// SECONDS late, as a reader slow to start up would be.
void SlowStartHook(int reader) {
  const char* hook = std::getenv("LOADBENCH_TEST_SLOW_START");
  int k = -1;
  double secs = 0;
  if (hook == nullptr || std::sscanf(hook, "%d:%lf", &k, &secs) != 2 || k != reader) return;
  std::this_thread::sleep_for(std::chrono::duration<double>(secs));
}

// What a worker finds in its environment beside the harness's own: the run's peer token and,
// with a timeout, LOADBENCH_DEADLINE (loaders/blocks/peers.h): a little before the watch kills
// the readers at `killed_at`, so that a reader that waits on another fails, naming it, first.
std::vector<std::string> WorkerEnv(const LaunchRequest& req, WatchClock::time_point killed_at) {
  std::vector<std::string> vars;
  if (!req.peer_token.empty()) vars.push_back(fmt::format("{}={}", kTokenVar, req.peer_token));
  if (req.timeout_s > 0) vars.push_back(DeadlineVariable(killed_at, req.timeout_s));
  return EnvironmentWith(vars);
}

// Forks and execs one `loadbench worker`, and its profiler; its environment is `env`.
Status StartChild(const LaunchRequest& req, const std::string& cgroup_procs, int reader,
                  std::vector<std::string> env, Child* c) {
  int result[2], start[2], hold[2] = {-1, -1};
  if (::pipe2(result, O_CLOEXEC) != 0) return Status::FromErrno("pipe", errno);
  c->result.reset(result[0]);
  UniqueFd wr(result[1]), hold_rd;
  if (::pipe2(start, O_CLOEXEC) != 0) return Status::FromErrno("pipe", errno);
  UniqueFd start_rd(start[0]);
  c->start.reset(start[1]);
  if (req.readers > 1) {
    if (::pipe2(hold, O_CLOEXEC) != 0) return Status::FromErrno("pipe", errno);
    hold_rd.reset(hold[0]);
    c->hold.reset(hold[1]);
  }
  OpenProfiler(req, c);
  const int fds[5] = {wr.get(), hold_rd.valid() ? hold_rd.get() : -1,
                      c->profiler ? c->profiler->worker_ctl() : -1,
                      c->profiler ? c->profiler->worker_ack() : -1, start_rd.get()};
  const WorkerRequest w = ReaderRequest(req, reader, hold_rd.valid(), c->profiler != nullptr);
  std::vector<std::string> argv_s = {req.exe, "worker", "--request", RequestJson(w).dump()};
  std::vector<char*> argv;
  for (std::string& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  ChildSetup setup;
  setup.parent = ::getpid();
  setup.oom_victim = true;
  setup.cgroup_procs = cgroup_procs.empty() ? nullptr : cgroup_procs.c_str();
  setup.fds = fds;
  setup.nfds = 5;
  std::vector<char*> envp = CStrings(env);
  const pid_t pid = ::fork();
  if (pid < 0) return Status::FromErrno("fork", errno);
  if (pid == 0) ExecChild(setup, req.exe.c_str(), argv.data(), envp.data());
  c->pid = pid;
  Attach(req, c);
  return Status::Ok();
}

// The workers of one run while they run.
class Group final : public Watched {
 public:
  Group(const LaunchRequest& req, const std::string& cgroup_procs,
        const std::function<void()>& all_ready, std::vector<ReaderOutcome>* out)
      : req_(req),
        cgroup_procs_(cgroup_procs),
        all_ready_(all_ready),
        out_(*out),
        children_(out->size()),
        released_(req.readers == 1) {}

  void StartAll(int first_part) {
    const std::vector<std::string> env =
        WorkerEnv(req_, t0 + std::chrono::duration_cast<WatchClock::duration>(
                                 std::chrono::duration<double>(req_.timeout_s)));
    for (size_t i = 0; i < children_.size(); ++i) {
      SlowStartHook(first_part + static_cast<int>(i));
      const int reader = first_part + static_cast<int>(i);
      if (Status s = StartChild(req_, cgroup_procs_, reader, env, &children_[i]); !s.ok()) {
        out_[i].error = s.message();
        children_[i].open = false;
      }
    }
  }

  void Fds(std::vector<pollfd>* fds) override {
    who_.clear();
    for (size_t i = 0; i < children_.size(); ++i) {
      if (children_[i].open) {
        fds->push_back({children_[i].result.get(), POLLIN, 0});
        who_.push_back(i);
      }
    }
  }
  void Ready(size_t i) override { ReadFrom(children_[who_[i]]); }
  bool Done(WatchClock::time_point) override {
    MoveBarriers();
    return false;  // until every result pipe is closed
  }
  void Sample() override {
    for (auto& c : children_) {
      if (c.sampler) c.sampler->Sample();
    }
  }
  void KillAll() override {
    for (auto& c : children_) {
      if (c.pid > 0) ::kill(c.pid, SIGKILL);
    }
  }

  void TimedOut() {
    for (size_t i = 0; i < out_.size(); ++i) {
      if (children_[i].open) {
        out_[i].error = fmt::format("timed out after {:.0f} s; worker killed", req_.timeout_s);
      }
    }
  }
  void ReapAll(bool killed);
  const WatchClock::time_point t0 = WatchClock::now();

 private:
  void ReadFrom(Child& c);
  bool Start();
  void MoveBarriers();
  void Judge(const Child& c, int wstatus, ReaderOutcome* o) const;
  void FinishProfile(Child& c, bool killed, ReaderOutcome* o) const;

  const LaunchRequest& req_;
  const std::string& cgroup_procs_;
  const std::function<void()>& all_ready_;
  std::vector<ReaderOutcome>& out_;
  std::vector<Child> children_;
  std::vector<size_t> who_;  // the child of each descriptor of this turn
  bool started_ = false, released_;
};

void Group::ReadFrom(Child& c) {
  char buf[4096];
  const ssize_t n = ::read(c.result.get(), buf, sizeof buf);
  if (n < 0 && errno == EINTR) return;
  if (n <= 0) {
    c.open = false;
    return;
  }
  c.data.append(buf, static_cast<size_t>(n));
  for (auto [stage, flag] : {std::pair<std::string_view, bool*>{"ready\n", &c.ready},
                             {"loaded\n", &c.loaded},
                             {"measured\n", &c.measured}}) {
    if (!*flag && c.data.starts_with(stage)) {
      *flag = true;
      c.data.erase(0, stage.size());
    }
  }
}

// The start barrier: once every worker is ready (or gone: it failed as it started), the
// caller's step (the ranks' barrier, under MPI), then one byte each, as close together as
// writes to their pipes go: their clocks start when they read it.
bool Group::Start() {
  if (started_) return true;
  for (const Child& c : children_) {
    if (c.open && !c.ready) return false;
  }
  if (all_ready_) all_ready_();
  for (auto& c : children_) {
    if (c.open && ::write(c.start.get(), "g", 1) != 1) c.start.reset();
  }
  started_ = true;
  return true;
}

// After the start, two barriers for several workers: all loaded -> one byte each (measure
// your memory now); all measured -> EOF (tear down and report).
void Group::MoveBarriers() {
  auto all = [&](bool Child::*stage) {
    return std::all_of(children_.begin(), children_.end(),
                       [&](const Child& c) { return c.*stage || !c.open; });
  };
  if (!Start()) return;
  if (!released_) {
    if (!all(&Child::loaded)) return;
    for (auto& c : children_) {
      if (c.hold.valid() && ::write(c.hold.get(), "g", 1) != 1) c.hold.reset();
    }
    released_ = true;
  } else if (req_.readers > 1 && all(&Child::measured)) {
    for (auto& c : children_) c.hold.reset();
  }
}

// Why a reaped worker left no usable record, or its record.
void Group::Judge(const Child& c, int wstatus, ReaderOutcome* o) const {
  if (WIFSIGNALED(wstatus)) {
    o->signal = WTERMSIG(wstatus);
    o->error = fmt::format("worker killed by signal {} ({})", o->signal, ::strsignal(o->signal));
  } else if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == kChildNoExec) {
    o->error = fmt::format("could not execute {}", req_.exe);
  } else if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == kChildNoCgroup &&
             !cgroup_procs_.empty()) {
    o->error = fmt::format("the worker could not join its memory cgroup ({})", cgroup_procs_);
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
    ReaderOutcome& o = out_[i];
    if (c.sampler) o.timeline = c.sampler->samples();
    if (c.pid <= 0) continue;
    const int wstatus = Reap(c.pid, &o.usage);
    o.process_s = std::chrono::duration<double>(WatchClock::now() - t0).count();
    if (!killed && o.error.empty()) Judge(c, wstatus, &o);
  }
  for (size_t i = 0; i < children_.size(); ++i) FinishProfile(children_[i], killed, &out_[i]);
}

// Once its worker is reaped, perf writes its data and exits; the outcome gets the data or why
// there is none.
void Group::FinishProfile(Child& c, bool killed, ReaderOutcome* o) const {
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

class Workers final : public Launcher {
 public:
  std::string NotOffered(int, uint64_t) const override { return ""; }
  std::string unprofiled(size_t) const override { return ""; }
  std::vector<ReaderOutcome> Launch(const LaunchRequest& req, const HostSteps& host,
                                    bool* interrupted) override {
    return LaunchHere(req, host, interrupted, [&](const HostState& h) {
      return RunWorkers(req, h.cgroup_procs, 0, {}, interrupted);
    });
  }
};

}  // namespace

std::vector<ReaderOutcome> RunWorkers(const LaunchRequest& req, const std::string& cgroup_procs,
                                      int first_part, const std::function<void()>& all_ready,
                                      bool* interrupted) {
  std::vector<ReaderOutcome> out(static_cast<size_t>(req.readers));
  Group group(req, cgroup_procs, all_ready, &out);
  group.StartAll(first_part);
  const WatchEnd end = Watch(group, req.sample_s, req.timeout_s, group.t0);
  if (end == WatchEnd::kTimedOut) group.TimedOut();
  *interrupted = end == WatchEnd::kInterrupted;
  group.ReapAll(end != WatchEnd::kDone);
  return out;
}

std::unique_ptr<Launcher> WorkersLauncher() { return std::make_unique<Workers>(); }

}  // namespace loadbench
