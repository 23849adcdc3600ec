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
