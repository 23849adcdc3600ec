// An exec strategy as the plan holds it: any command that loads a model (the user's own
// loader, fio, a PyTorch script), with placeholders the run fills. How it is started and
// measured is the command launcher's (harness/launch/command.h); what it may say back is in
// docs/exec.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loaders/base/status.h"
#include "loaders/strategy/registry.h"
#include "loaders/use/spec.h"

namespace loadbench {

inline constexpr const char* kExec = "exec";

// Which region of an exec run its wall_s (the ranked figure) is: the whole command, from its
// exec to its first process's exit (interpreter, imports, its own program read in, exit), or
// the command's own region, from its start of loading to its `done` line on LOADBENCH_FD, as a
// worker's wall_s is. The record keeps the other beside it (docs/exec.md).
inline constexpr const char* kTimedCommand = "command";
inline constexpr const char* kTimedRegion = "region";

// An exec strategy as an experiment or `run --exec` gives it.
struct ExecCommand {
  std::string label;              // the row's name; spec text "exec:label=LABEL"
  std::vector<std::string> argv;  // with placeholders; shell: one string for /bin/sh -c
  bool shell = false;
  std::string package;  // the Debian package named when argv[0] is not found; may be empty
  std::string timed = kTimedCommand;  // kTimedCommand or kTimedRegion
};

// The spec of an exec strategy: "exec:label=LABEL", its identity in records and rounds.
StrategySpec ExecSpec(const std::string& label);

// What the placeholders stand for in one run.
struct ExecPlaces {
  std::string file;           // {file}: the model as the run loads it (an absolute path, or a URL)
  std::string dir;            // {dir}: its folder
  uint64_t bytes = 0;         // {bytes}: the model's bytes, every shard
  std::string peers;          // {peers}: the folder of the peers shipped with the suite
  std::string endpoint = "";  // {endpoint}: the S3 endpoint (AWS_ENDPOINT_URL: the [server]'s)
};

// The argv to execute: placeholders filled, a shell command as /bin/sh -c. Other braces are
// left as they are (a shell's ${VAR}, awk's {print}).
std::vector<std::string> FillCommand(const ExecCommand& c, const ExecPlaces& places);

// `run --exec 'LABEL=COMMAND'`: COMMAND split at spaces, '...' and "..." quoting (no escapes,
// no expansion); with `shell`, COMMAND is kept whole. kBadInput with the reason.
Status ParseExecFlag(const std::string& text, bool shell, ExecCommand* out);

// The folder of the shipped peers: loaders/peers of the tool's home (process/home.h), or
// "loaders/peers" (of the working folder) where there is none.
std::string PeersDir();

// argv[0] as execv needs it: a path as given, else the first executable of that name on PATH.
// kUnsupported "command not found" (naming the package when known) otherwise.
Status ResolveProgram(const ExecCommand& c, const std::string& argv0, std::string* path);

}  // namespace loadbench
