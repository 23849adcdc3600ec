// The command launcher: an exec strategy's command (experiment/command.h), started where a
// worker would be and measured from outside: in its own process group and, where one can be
// made, its own memory cgroup, with nothing it started left alive after it. A command may say
// more on the file descriptor in LOADBENCH_FD (docs/exec.md): its own ready and done times, the
// model checksum it computed, or that it cannot run here.
#pragma once

#include <sys/resource.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "harness/launch/launcher.h"
#include "harness/machine/timeline.h"
#include "harness/record/record.h"
#include "loaders/base/status.h"

namespace loadbench {

// The launcher of exec commands (launch/launcher.h): one command per run, request.program
// with request.argv.
std::unique_ptr<Launcher> CommandLauncher();

struct ExecRequest {
  std::string program;                  // resolved argv[0]
  std::vector<std::string> argv;        // filled
  std::vector<std::string> file_paths;  // the model's files, for the timeline
  std::string cgroup_procs;             // the cgroup's procs file; "" for none
  std::string cgroup_dir;               // its folder, to find and kill what is left; "" for none
  double timeout_s = 0;                 // 0: none
  double sample_s = 0;                  // 0: no timeline
};

// What the command said on LOADBENCH_FD.
struct ExecReport {
  std::optional<double> ready_s, done_s;
  std::optional<uint64_t> checksum;
  std::optional<std::string> unsupported;
};

// A checksum as 16 hex digits at most (the protocol's, the run's expected one); nullopt when
// the text is not one ("none").
std::optional<uint64_t> ParseChecksum(const std::string& text);

// Reads the protocol lines; kFailed naming the first line that is not one of them.
Status ParseExecReport(const std::string& text, ExecReport* out);

struct ExecOutcome {
  bool started = false;  // the command was executed
  std::string error;     // why the run failed (not started, killed, timed out, exit status)
  int signal = 0;        // the signal that killed the command, when one did
  std::optional<int> exit_status;
  bool timed_out = false;
  double wall_s = 0;                   // exec to the first process's exit
  double process_s = 0;                // fork to reaped
  double exec_mono_s = 0;              // CLOCK_MONOTONIC at exec, where the timeline starts
  rusage usage{};                      // the command and the descendants it waited for
  std::optional<uint64_t> read_bytes;  // the same processes' storage reads
  std::string report_text;             // what it wrote on LOADBENCH_FD
  std::string stderr_tail;             // the last lines it wrote on stderr
  int left_behind = 0;                 // processes alive when the first exited, then killed
  std::vector<TimelineSample> timeline;
};

// Runs the command to the end of its first process, then kills whatever it left; on timeout
// or interruption kills everything at once. Interrupted, it sets *interrupted and the outcome
// means nothing.
ExecOutcome RunCommand(const ExecRequest& req, bool* interrupted);

// How an exec run's figures were measured, for its record: `cgroup` is the group's description
// ("cgroup v1"), or empty with `no_cgroup` saying why there was none.
struct ExecMeasured {
  std::string cgroup, no_cgroup;
};

// The exec run's part of its record from the outcome: status and error (the LOADBENCH_FD lines
// read, a checksum judged against `expected`), wall_s as `timed` says (experiment/command.h:
// the whole command, or its own region up to `done`, which it must then send), ready_s where it
// has wall_s's origin, bytes read, peak RSS, warnings (processes it left running), and the
// `exec` object with both times. The process's CPU time and faults are the completion's, as for
// every reader.
void FillExecRecord(const ExecOutcome& o, std::optional<uint64_t> expected,
                    const std::string& timed, const ExecMeasured& how, RunRecord* r);

}  // namespace loadbench
