// The command launcher: an exec strategy's command (experiment/command.h), started where a
// worker would be and measured from outside: in its own process group and, where one can be
// made, a memory cgroup of the run's, with nothing it started left alive after it. A run of
// several readers runs one command per reader, all started together. A command may say more on
// the file descriptor in LOADBENCH_FD (docs/exec.md): its own ready and done times, the model
// checksum it computed, details of its own, or that it cannot run here.
#pragma once

#include <sys/resource.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/launch/launcher.h"
#include "harness/machine/timeline.h"
#include "harness/record/record.h"
#include "loaders/base/status.h"

namespace loadbench {

// The launcher of exec commands on this machine (launch/launcher.h): one command per reader,
// request.program with request.argv, all started together (RunCommandReaders).
std::unique_ptr<Launcher> CommandLauncher();

// The variable a command of several readers finds the run's read pattern in (loaders/use/
// part.h ReadPattern::Text: replicated, tp, tp:1, pp, files).
inline constexpr const char* kPatternVar = "LOADBENCH_PATTERN";

// Why an exec command's reader is not profiled, wherever it runs.
inline constexpr const char* kExecUnprofiled =
    "exec commands are not profiled: no timed region the profiler could be turned on and off at";

// Readers first .. first + req.readers - 1 of the run (of req.all_readers under MPI, else of
// req.readers) as its commands, run together (RunCommands) in the memory cgroup `h` made, if
// any: each one told its place in its environment (LOADBENCH_READER=K/N, the run's
// LOADBENCH_FLEET_TOKEN, LOADBENCH_PATTERN with several readers; docs/exec.md), each record
// filled (FillExecRecord) against its part's checksum, with needed_bytes. `all_ready` as
// RunCommands'. Interrupted, it sets *interrupted and the outcomes mean nothing. (The ranks'
// launcher runs each rank's command through it, the ranks' barrier as `all_ready`.)
std::vector<ReaderOutcome> RunCommandReaders(const LaunchRequest& req, const HostState& h,
                                             int first, const std::function<void()>& all_ready,
                                             bool* interrupted);

struct ExecRequest {
  std::string program;                  // resolved argv[0]
  std::vector<std::string> argv;        // filled
  std::vector<std::string> file_paths;  // the model's files, for the timeline
  std::string cgroup_procs;             // the cgroup's procs file; "" for none
  std::string cgroup_dir;               // its folder, to find and kill what is left; "" for none
  double timeout_s = 0;                 // 0: none
  double sample_s = 0;                  // 0: no timeline
  // NAME=VALUE variables set in its environment beside the harness's own and LOADBENCH_FD (and
  // LOADBENCH_DEADLINE, which RunCommands sets with a timeout).
  std::vector<std::string> env;
};

// What the command said on LOADBENCH_FD.
struct ExecReport {
  std::optional<double> ready_s, done_s;
  std::optional<uint64_t> checksum;
  std::optional<std::string> unsupported;
  // Its `detail KEY VALUE` lines: an object of KEY to VALUE (a JSON number, string or bool);
  // null when it sent none.
  nlohmann::ordered_json details;
};

// At most this many distinct detail keys in one command's report.
inline constexpr size_t kMaxExecDetails = 64;

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
  double exec_unix_s = 0;              // the same moment by the wall clock (CLOCK_REALTIME)
  std::optional<double> done_unix_s;   // when its `done` line arrived, by the wall clock
  rusage usage{};                      // the command and the descendants it waited for
  std::optional<uint64_t> read_bytes;  // the same processes' storage reads
  std::string report_text;             // what it wrote on LOADBENCH_FD
  std::string stderr_tail;             // the last lines it wrote on stderr
  // Processes it left alive when its first process exited, then killed: its process group's
  // then; with a cgroup, also those that left every command's group (setsid), each counted on
  // the first command to exit once it is there, killed once every command of the run exited.
  int left_behind = 0;
  std::vector<TimelineSample> timeline;
};

// Runs the commands together, each to the end of its first process: each is forked in a
// process group of its own and held before its execve until every one is forked, then
// `all_ready` is called (when set), then all are released at once. When a command's first
// process exits its process group is killed; what is left in the cgroup (the requests' common
// cgroup_dir) once every first process has exited is killed then. On timeout (the first
// request's timeout_s, counted from before the first fork, `all_ready` included) or
// interruption everything is killed at once. Interrupted, it sets *interrupted and the outcomes
// mean nothing. The timeline (sample_s, file_paths) is each request's own.
std::vector<ExecOutcome> RunCommands(const std::vector<ExecRequest>& reqs,
                                     const std::function<void()>& all_ready, bool* interrupted);

// One command run alone (RunCommands).
ExecOutcome RunCommand(const ExecRequest& req, bool* interrupted);

// How an exec run's figures were measured, for its record: `cgroup` is the group's description
// ("cgroup v1"), or empty with `no_cgroup` saying why there was none.
struct ExecMeasured {
  std::string cgroup, no_cgroup;
};

// The exec run's part of its record from the outcome: status and error (the LOADBENCH_FD lines
// read, a checksum judged against `expected`), wall_s as `timed` says (experiment/command.h:
// the whole command, or its own region up to `done`, which it must then send), ready_s where it
// has wall_s's origin, bytes read, peak RSS, warnings (processes it left running), its details,
// load_start_unix_s (timed "command": its exec; "region": when its `done` line arrived less its
// done seconds), and the `exec` object with both times. The process's CPU time and faults are
// the completion's, as for every reader.
void FillExecRecord(const ExecOutcome& o, std::optional<uint64_t> expected,
                    const std::string& timed, const ExecMeasured& how, RunRecord* r);

}  // namespace loadbench
