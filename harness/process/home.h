// Where the tool's own files are: the folder that holds analysis/ (the Python package),
// loaders/peers/ (the peers an exec strategy runs) and experiments/ (the shipped experiment
// files), whether loadbench runs from its build tree or from an install (PREFIX/bin/loadbench
// beside PREFIX/share/loadbench); and the tool's analysis run from there, as
// `python3 -m analysis.NAME`.
#pragma once

#include <string>
#include <vector>

#include "loaders/base/status.h"

namespace loadbench {

// The folder of the tool's files, the first of:
//   $LOADBENCH_HOME when set and not empty: it must hold analysis/__init__.py (kBadInput
//   naming it otherwise, never a fall back to another folder);
//   <the folder of /proc/self/exe>/../share/loadbench, when it holds analysis/__init__.py;
//   the source tree this binary was built from, when it still holds analysis/__init__.py.
// kBadInput naming every place looked at when none holds it.
Status LoadbenchHome(std::string* home);

// This binary's absolute path (/proc/self/exe), or "" when it cannot be read.
std::string ExePath();

// `python3 -m analysis.MODULE ARGS...` as the tool runs it, from any working folder: the
// interpreter (/usr/bin/python3, which sees Debian's pandas and matplotlib; else python3 on
// PATH), and this process's environment with PYTHONPATH starting at the home (and no working
// folder before it: PYTHONSAFEPATH), LOADBENCH_HOME set to it and LOADBENCH_BIN to this binary
// (the analysis runs the loadbench that runs it).
struct AnalysisCommand {
  std::string python;             // the interpreter's path
  std::vector<std::string> argv;  // PYTHON -m analysis.MODULE ARGS...
  std::vector<std::string> env;   // NAME=VALUE, the whole environment
};

// The command for `module` (report, compare, ...) with `args`; kBadInput when there is no home,
// kUnsupported when there is no python3.
Status MakeAnalysisCommand(const std::string& module, const std::vector<std::string>& args,
                           AnalysisCommand* out);

// Runs `c` to its end in a process group of its own, keeping the terminal's standard streams:
// an interruption (interrupt.h) is passed on to it once, and whatever is left of its group is
// killed when it ends. *exit_code: its exit code, 128 + the signal that killed it. An error
// only when it could not be started.
Status RunAnalysis(AnalysisCommand c, int* exit_code);

}  // namespace loadbench
