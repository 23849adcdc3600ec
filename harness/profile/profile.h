// Profiles: a worker's timed region sampled by `perf record` on the software cpu-clock event,
// with kernel and user call chains, folded into one line per distinct stack
// (profiles/RUN_ID.folded beside the run's timeline). perf is attached to the worker before its
// load and started disabled; the worker itself turns sampling on at the start of its timed
// region and off at its end through perf's control pipes (`--control fd:CTL,ACK`), so that
// neither the worker's start-up nor its teardown and verification are in the profile.
// A profile that cannot be taken (no perf, not permitted, perf failed) leaves the run as it is
// and says why; it never changes a run's status.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <istream>
#include <map>
#include <string>

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

// A profile folded: each distinct call chain, root first, frames joined by ';' and led by the
// thread's name, with its sample count. Kernel frames end in "_[k]"; a frame without a symbol
// is its object's file name in brackets ("[libc.so.6]").
struct FoldedProfile {
  std::map<std::string, uint64_t> stacks;
  uint64_t samples = 0;
  uint64_t period_ns = 0;  // the samples' periods added up: on-CPU time
};

// Folds the output of `perf script -F comm,period,ip,sym,dso` (one header line per sample,
// then one line per frame, leaf first, then a blank line). Malformed text is kBadInput.
Status FoldPerfScript(std::istream& in, FoldedProfile* out);

// Runs `perf script` over `data_path` (in a process group of its own, killed when done) and
// folds what it prints.
Status FoldPerfData(const std::string& perf, const std::string& data_path, FoldedProfile* out);

// Writes the folded stacks, one "stack count" line each. A write that fails removes the file
// and is kNotWritten.
Status WriteFolded(const std::string& path, const FoldedProfile& p);

}  // namespace loadbench
