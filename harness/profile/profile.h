// Profiles: a worker's timed region sampled by `perf record` on the software cpu-clock event,
// with kernel and user call chains, folded into one line per distinct stack
// (profiles/RUN_ID.folded beside the run's timeline). perf is attached to the worker before its
// load and started disabled; the worker itself turns sampling on at the start of its timed
// region and off at its end through perf's control pipes (`--control fd:CTL,ACK`), so that
// neither the worker's start-up nor its teardown and verification are in the profile. Samples
// carry CLOCK_MONOTONIC times, and only those within the load's own time, as the worker reports
// it (the Window), are folded: a profile covers what wall_s covers, for a streaming strategy too.
// A profile that cannot be taken (no perf, not permitted, perf failed) leaves the run as it is
// and says why; it never changes a run's status.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <istream>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "loaders/base/file_io.h"
#include "loaders/base/status.h"

namespace loadbench {

// perf on PATH, checked to be allowed to sample kernel call chains: its path, or kUnsupported
// naming the package or the setting that stops it.
Status FindProfiler(std::string* perf);

// One worker's perf process.
class Profiler {
 public:
  Profiler() = default;
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;
  ~Profiler() { Kill(); }

  // The control pipes, before the worker's fork: the worker gets worker_ctl() (it writes
  // "enable" or "disable") and worker_ack() (perf answers "ack").
  Status Open();
  int worker_ctl() const { return ctl_wr_.get(); }
  int worker_ack() const { return ack_rd_.get(); }

  // Starts `perf record` on `pid` in a process group of its own, sampling at `hz` into
  // `data_path` (perf's messages go to data_path + ".log"). Closes this process's copies of
  // the pipes either way, so that a worker whose perf is gone reads EOF instead of waiting.
  Status Start(const std::string& perf, pid_t pid, int hz, const std::string& data_path);

  // After the worker is reaped: waits up to `timeout_s` for perf to write its data and exit,
  // then kills its group. Ok when perf exited 0, else why not (perf's last message).
  Status Finish(double timeout_s);

  // Kills perf's process group, if it runs (a worker killed on timeout or interruption).
  void Kill();

 private:
  UniqueFd ctl_rd_, ctl_wr_, ack_rd_, ack_wr_;
  pid_t pid_ = -1;
  std::string log_path_;
};

// In the worker: tells perf to start ("enable") or stop ("disable") sampling and waits for its
// ack. False when perf did not answer (gone: the profile will say why).
bool ProfileControl(int ctl_fd, int ack_fd, const char* command);

// The part of a worker's run a profile covers: stretches [begin, end] of CLOCK_MONOTONIC seconds
// (perf's sample clock, `-k CLOCK_MONOTONIC`), in order, not overlapping. The worker sends the
// load's own time (wall_s's stretches: a streaming strategy's per-layer checks and releases are
// not in it) within the time perf was on.
using Window = std::vector<std::pair<double, double>>;

// One thread of the profiled process as perf saw it: its samples within the window, and when
// it started and exited where perf saw that (perf records both only while it samples).
struct ThreadSeen {
  std::string name;
  uint64_t samples = 0;
  uint64_t period_ns = 0;
  std::optional<double> started, exited;
};

// A profile folded: each distinct call chain, root first, frames joined by ';' and led by the
// thread's name, with its sample count. Kernel frames end in "_[k]"; a frame without a symbol
// is its object's file name in brackets ("[libc.so.6]").
struct FoldedProfile {
  std::map<std::string, uint64_t> stacks;
  uint64_t samples = 0;
  uint64_t period_ns = 0;  // the samples' periods added up: on-CPU time of every thread
  uint64_t outside = 0;    // samples outside the window, left out of everything above
  int64_t pid = 0;         // the process (its main thread's tid); 0 when perf saw nothing
  std::map<int64_t, ThreadSeen> threads;  // by tid
};

// Folds the output of `perf script --show-task-events -F comm,pid,tid,time,period,ip,sym,dso`
// (per sample a header line "COMM PID/TID TIME: PERIOD", then one line per frame, leaf first,
// then a blank line; a thread's start and exit are one line each, "COMM PID/TID TIME:
// PERF_RECORD_FORK(PID:TID):(PPID:PTID)"). With a window, only the samples within it are folded.
// Malformed text is kBadInput.
Status FoldPerfScript(std::istream& in, const std::optional<Window>& window, FoldedProfile* out);

// Runs `perf script` over `data_path` (in a process group of its own, killed when done) and
// folds what it prints.
Status FoldPerfData(const std::string& perf, const std::string& data_path,
                    const std::optional<Window>& window, FoldedProfile* out);

// A thread's share of the window: the part of the window it lived in (from its start to its
// exit, each where perf saw it, else the window's edge), its time on a CPU there, and the rest,
// waiting (blocked or not scheduled; never below 0, as a thread's samples can overshoot its time
// by a sampling period).
struct ThreadTime {
  int64_t tid = 0;
  std::string name;
  double in_window_s = 0, on_cpu_s = 0, waiting_s = 0;
};

// Every thread that lived in the window, by tid: those perf sampled or saw start or exit in it,
// and the process's main thread, which runs the load (a thread perf saw neither run nor start
// nor exit there, a helper idle throughout, is not in the profile's data).
std::vector<ThreadTime> ThreadTimes(const FoldedProfile& p, const Window& window);

// The record's profile figures beyond the folded file's: `window_s` (the window's length),
// `threads`, `shares_of` ("wall": one thread, whose on-CPU and waiting time add up to the wall
// time; "cpu": several, whose on-CPU time can exceed it, so that shares of it are of CPU time),
// `waiting_s` (each thread's waiting, added up) and `per_thread` (ThreadTimes). Without a window
// (a load that did not finish) window_s, waiting_s and per-thread times are null and the shares
// are of CPU time.
nlohmann::ordered_json ProfileFigures(const FoldedProfile& p, const std::optional<Window>& window);

// Writes the folded stacks, one "stack count" line each. A write that fails removes the file
// and is kNotWritten.
Status WriteFolded(const std::string& path, const FoldedProfile& p);

}  // namespace loadbench
