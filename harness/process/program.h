// A program run to its end, its output read: `ip` and `tc` for a link, a server's `--version`,
// `nginx -t`, iperf3's client, `perf script`. The one way the harness does it, through the one
// child set-up (child.h), in a process group of its own that is killed whole at the end.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "loaders/base/file_io.h"
#include "loaders/base/status.h"

namespace loadbench {

struct ProgramRun {
  std::vector<std::string> argv = {};  // argv[0] a path (FindProgram)
  double timeout_s = 0;                // killed after this long; 0: no limit
  std::string netns = "";          // a network namespace to run in (a /run/netns path); "": this
  bool stderr_too = true;          // stderr into the output too; else to /dev/null
  bool stop_on_interrupt = false;  // killed at an interruption (interrupt.h)
};

// Runs `r` to its end: what it wrote into `output`. kIOError when it could not run, exited other
// than 0 or ran past its limit, with its last lines; kFailed "interrupted" when stopped so.
Status RunToEnd(const ProgramRun& r, std::string* output);

// The network namespace at `path` (a /run/netns path) opened for a child to enter
// (ChildSetup::netns_fd); nothing for "" (the child stays in this one).
Status OpenNetns(const std::string& path, UniqueFd* fd);

// The last `n` lines of `text`, joined by " | " (for one-line messages).
std::string LastLines(const std::string& text, int n);

// Whether `pid` (a child of ours) has exited, left unreaped (its zombie stays for a reaper);
// its wait status in *wstatus.
bool ChildExited(pid_t pid, int* wstatus);

// "exit code N" or "killed by signal N", of a wait status.
std::string DescribeExit(int wstatus);

// `v` as execve takes it: pointers into its strings, then a null.
std::vector<char*> CStrings(std::vector<std::string>& v);

// This process's environment with `vars` ("NAME=VALUE") in it, each replacing any of its name:
// a child's environment (ExecChild's envp, through CStrings).
std::vector<std::string> EnvironmentWith(const std::vector<std::string>& vars);

}  // namespace loadbench
