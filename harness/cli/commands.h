// The subcommands. main.cc, the only file that sees CLI11, declares every subcommand's flags
// into the plain structs below, parses the command line and calls the subcommand's function;
// each function lives in a file of its own (harness/cli/*_command.cc) and returns the exit
// code of the CLI contract (docs/cli.md).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/gen/generator.h"
#include "harness/launch/worker.h"
#include "loaders/base/status.h"

namespace loadbench::cli {

struct GenFlags {
  GenOptions gen;
  std::string size, align;
  bool quiet = false, dry_run = false;
};
int GenCommand(GenFlags& f);

struct InspectFlags {
  std::string file;
  bool json = false;
};
int InspectCommand(const InspectFlags& f);

// --reps N|auto and the --auto-* options, which run and experiment share.
struct RepsFlags {
  std::string reps, target, budget;
  int min_rounds = -1, max_rounds = -1;
};

// --profile and --profile-hz, for run and experiment.
struct ProfileFlags {
  bool on = false;
  std::optional<int> hz;
};

// What run and experiment do once their runs are recorded (exit 0 or 1): `python3 -m
// analysis.report DIR --brief` (the report written, its verdict printed), as `make run` ends,
// with `--export FMT FILE` for each export; not with --no-report or LOADBENCH_NO_REPORT=1.
struct ReportFlags {
  bool no_report = false;
  std::vector<std::string> exports;  // FMT FILE, FMT FILE, ...
};

// The exports checked before anything runs: each FMT one of csv, md, json. kBadInput naming it.
Status CheckExports(const ReportFlags& f);

// The report of `out_dir` after the runs that ended with `code`, unless told not to, or the
// runs did not all get recorded (a code other than 0 and 1), or this is a rank of an MPI job
// other than rank 0 or one of a [cluster]'s (the command that made the cluster reports).
// Returns the exit code: `code`, at least 1 when the report failed (said, with the command
// that writes it), 130 when it was interrupted.
int ReportAfterRuns(const std::string& who, int code, const std::string& out_dir,
                    const ReportFlags& f);

// `loadbench report|compare|machines|gate|advise ARGS...`: `python3 -m analysis.NAME ARGS...`
// from the tool's home (every argument the module's, --help too), run to its end with Ctrl-C
// and SIGTERM passed on to it. Its exit code; 2 with no home, 127 when it cannot be run.
int AnalysisMain(const std::string& name, const std::vector<std::string>& args);

// The analysis subcommands, each with its line for `loadbench --help`.
struct AnalysisSubcommand {
  const char* name;
  const char* summary;
};
const std::vector<AnalysisSubcommand>& AnalysisSubcommands();

struct RunFlags {
  std::string file, strategies = "fread,mmap,mmap_seq", cache = "both";
  RepsFlags reps;
  std::string order = "balanced", baseline, out, experiment = "run";
  uint64_t seed = 0;
  bool ceiling = false, resume = false, no_wait = false, verbose = false;
  double timeout_s = 0, sample_ms = 10, settle_wait_s = 60;
  std::string counters = "default", memory_limit, tune = "off";
  int procs = 1;
  std::string pattern = "replicated";
  std::map<std::string, std::string> use;     // --consume and the like, by option name
  std::vector<std::string> exec, exec_shell;  // LABEL=COMMAND each
  std::vector<std::string> storages;          // KIND[:OPTION=VALUE...] each
  ProfileFlags profile;
  ReportFlags report;
  bool dry_run = false;
};
int RunCommand(const RunFlags& f, const std::string& command_line);

struct ExperimentFlags {
  std::string path, out_dir, data_dir = "data";
  RepsFlags reps;
  bool dry_run = false, quiet = false, cleanup = false, no_wait = false, verbose = false;
  double settle_wait_s = 60;
  std::optional<uint64_t> seed;
  std::string tune;  // off, on or auto instead of the file's [system] tune; "": the file's
  ProfileFlags profile;
  ReportFlags report;
  // --resume [DIR]: go on with DIR (or --out), or with the newest results/NAME-* folder that is
  // incomplete; without it the results folder must hold no runs.
  bool resume = false;
  std::string resume_dir;
};
int ExperimentCommand(const ExperimentFlags& f, const std::string& command_line);

int ListCommand(bool json);

struct CacheFlags {
  std::string action, file;
  bool json = false, no_wait = false;
};
int CacheCommand(const CacheFlags& f, const std::string& command_line);

struct LockFlags {
  bool no_wait = false;
  std::vector<std::string> command;  // what runs under the lock, with its arguments
};
int LockCommand(const LockFlags& f, const std::string& command_line);

struct NetnsExecFlags {
  std::string netns;
  std::vector<std::string> command;  // joined by spaces for /bin/sh -c
};
int NetnsExecCommand(const NetnsExecFlags& f);

struct SystemFlags {
  std::string action;             // show, tune, reset or settle
  std::string data_dir = "data";  // show: the read-ahead and scheduler of the device holding it
  std::string page_reporting = "off";
  bool json = false, no_wait = false;
  double settle_wait_s = 60;         // settle: how long a busy machine is waited for
  std::vector<std::string> command;  // tune: what runs tuned, with its arguments
};
int SystemCommand(const SystemFlags& f, const std::string& command_line);

struct ServeFlags {
  std::string kind, root, limit_rate;
  std::vector<std::string> buckets;
  bool until_stdin_closes = false;
};
int ServeCommand(const ServeFlags& f);

struct PutFlags {
  std::string file, name;
};
int PutCommand(const PutFlags& f);

struct WorkerFlags {
  std::string request;  // the request as JSON (launch/request.h)
};
int WorkerCommand(const WorkerFlags& f);

// "loadbench CMD: message" on stderr; returns the status's exit code.
int ReportError(const std::string& cmd, const Status& s);

}  // namespace loadbench::cli
