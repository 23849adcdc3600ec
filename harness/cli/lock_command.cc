// `loadbench lock [--no-wait] [--] COMMAND [ARGS...]`: COMMAND run as one measurement, holding
// the machine lock that run, experiment and probe take, so that scripts which measure (the fio
// comparison, the A/A calibration, your own loader) never overlap another measurement. The
// loadbench commands COMMAND starts measure under the same lock instead of waiting for it.
// COMMAND runs in a process group of its own: Ctrl-C and SIGTERM are passed to COMMAND (which
// stops its own children as it sees fit), the whole group is killed when COMMAND ends, and a
// killed `loadbench lock` takes COMMAND with it.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "harness/cli/commands.h"
#include "harness/system/interrupt.h"
#include "harness/system/leftovers.h"

namespace loadbench::cli {
namespace {

// In the child, after fork: only async-signal-safe calls until exec.
[[noreturn]] void ExecCommand(const std::vector<char*>& argv, pid_t parent) {
  ::setpgid(0, 0);
  ::signal(SIGINT, SIG_DFL);
  ::signal(SIGTERM, SIG_DFL);
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent) ::_exit(125);
  ::execvp(argv[0], argv.data());
  const char msg[] = "loadbench lock: cannot execute the command\n";
  (void)!::write(2, msg, sizeof msg - 1);
  ::_exit(127);
}

// Waits for the command, passing an interruption on to it once; then kills what is left of its
// group. Returns the command's exit code (128 + the signal that killed it).
int WaitForGroup(pid_t pid) {
  bool passed = false;
  int status = 0;
  for (;;) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid || (r < 0 && errno != EINTR)) break;
    if (Interrupted() && !passed) {
      ::kill(pid, InterruptSignal());
      passed = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(-pid, SIGKILL);  // whatever the command left running in its group
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

}  // namespace

int LockCommand(const LockFlags& f, const std::string& command_line) {
  std::vector<std::string> command = f.command;
  if (command.empty()) return ReportError("lock", Status::BadInput("no command given"));
  InstallInterruptHandlers();  // passed on to the command, not taken by this process
  HeldLock machine;
  if (Status s =
          BeginMeasurement("loadbench lock", ThisProcess(command_line, ""), !f.no_wait, &machine);
      !s.ok()) {
    const int code = ReportError("lock", s);
    return Interrupted() ? 130 : code;
  }
  if (Status s = PassMachineLockToChildren(machine); !s.ok()) return ReportError("lock", s);
  std::vector<char*> argv;
  for (std::string& a : command) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return ReportError("lock", Status::FromErrno("fork", errno));
  if (pid == 0) ExecCommand(argv, parent);
  ::setpgid(pid, pid);  // also here, so that no signal finds the group not made yet
  return WaitForGroup(pid);
}

}  // namespace loadbench::cli
