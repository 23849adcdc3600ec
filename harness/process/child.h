// Child processes: the one set-up every process the harness starts goes through between fork
// and exec (workers, exec commands, perf record, perf script), and the one reaping. A child
// never outlives the harness (PR_SET_PDEATHSIG, checked against a parent that died first), gets
// the default SIGINT, SIGTERM and SIGPIPE, reads /dev/null (the command of `loadbench lock`
// keeps the terminal's), and finds its descriptors at 3, 4, ...
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <string>
#include <vector>

#include "loaders/base/status.h"

namespace loadbench {

// How a child is set up after fork, before exec. Plain data, read only by async-signal-safe
// code in the child.
struct ChildSetup {
  pid_t parent = -1;                   // the harness (getpid() before fork)
  bool own_group = false;              // a process group of its own, to be killed whole
  bool oom_victim = false;             // the OOM killer's first pick, never the harness
  const char* cgroup_procs = nullptr;  // a cgroup's procs file to join; null for none
  const int* fds = nullptr;            // placed at 3, 4, ... (a -1 leaves its number free)
  int nfds = 0;
  int out = -2, err = -2;   // stdout and stderr: a descriptor, -1 /dev/null, -2 inherited
  bool keep_stdin = false;  // stdin inherited instead of /dev/null
  int errno_fd = -1;        // where the errno of a failed set-up or exec goes; -1: nowhere
  // Where the child writes CLOCK_MONOTONIC (a timespec) right before its execve, so that the
  // parent knows when the program started however late it is scheduled itself; -1: nowhere.
  int exec_clock_fd = -1;
  // A network namespace to enter (an open /run/netns/NAME); -1: this one.
  int netns_fd = -1;
};

// Exit codes of a child whose set-up failed (the reaper tells them apart).
inline constexpr int kChildParentGone = 125;  // the harness died before the child was set up
inline constexpr int kChildNoGroup = 124;     // setpgid failed
inline constexpr int kChildNoCgroup = 126;    // the cgroup could not be joined
inline constexpr int kChildNoExec = 127;      // descriptors could not be placed, or exec failed

// In the child after fork: sets it up as `s` says and execs `path` with `argv` (and `envp`, or
// the harness's environment when null). Only async-signal-safe calls; never returns.
[[noreturn]] void ExecChild(const ChildSetup& s, const char* path, char* const* argv,
                            char* const* envp = nullptr);

// In a child after fork, before exec (async-signal-safe): puts fds[i] at descriptor 3 + i,
// each first copied above 16 so that no placement overwrites another, and the placed copies
// stay open across exec; a -1 leaves its number free. False when a descriptor cannot be moved.
bool PlaceFdsFromChild(int* fds, int n);

// Waits for `pid` to exit (through EINTR): its wait status, and its rusage when `usage` is set.
int Reap(pid_t pid, rusage* usage = nullptr);

// A user's command (`loadbench lock`'s, `system tune`'s) started with ExecChild in a process
// group of its own, keeping the terminal's standard input, output and error, and waited for
// until it has exec'd: one that cannot be run (not on PATH, not executable) is kUnsupported or
// an errno Status naming it and why.
Status StartCommandGroup(std::vector<std::string> argv, pid_t* pid);

// Waits for such a command, passing an interruption (interrupt.h) on to it once; then kills what
// is left of its group. Its exit code, 128 + the signal that killed it.
int WaitForCommandGroup(pid_t pid);

// This process, moved into the network namespace `name` (/run/netns/NAME) with TMPDIR at the
// node's own temporary folder, replaced by /bin/sh -c `command`: what a remote shell does with a
// command line on a host. Only a namespace that a loadbench command above this process made and
// still lists in its journal (journal.h AncestorJournalListing: a cluster's node, harness/net/
// cluster.h), with the folder it made for it (/tmp/NAME-XXXXXX, this user's, 0700). Returns only
// when it cannot: kBadInput for a namespace no such command made, else why.
Status ExecShellInNetns(const std::string& name, const std::string& command);

// Whether this process runs in network namespace `name` (/run/netns/NAME): the same namespace,
// by its device and inode.
bool InNetns(const std::string& name);

// A program as execve needs it: `name` as given when it holds a '/', else the first executable
// of that name on PATH. kUnsupported "command not found" otherwise, naming `package` (the
// Debian package that has it) when not empty.
Status FindProgram(const std::string& name, const std::string& package, std::string* path);

}  // namespace loadbench
