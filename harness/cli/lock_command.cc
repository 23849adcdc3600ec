// `loadbench lock [--no-wait] [--] COMMAND [ARGS...]`: COMMAND run as one measurement, holding
// the machine lock that run, experiment and probe take, so that scripts which measure (the fio
// comparison, the A/A calibration, your own loader) never overlap another measurement. The
// loadbench commands COMMAND starts measure under the same lock instead of waiting for it.
// COMMAND runs in a process group of its own: Ctrl-C and SIGTERM are passed to COMMAND (which
// stops its own children as it sees fit), the whole group is killed when COMMAND ends, and a
// killed `loadbench lock` takes COMMAND with it.
#include "harness/cli/commands.h"
#include "harness/leftovers/leftovers.h"
#include "harness/process/child.h"
#include "harness/process/interrupt.h"

namespace loadbench::cli {

int LockCommand(const LockFlags& f, const std::string& command_line) {
  if (f.command.empty()) return ReportError("lock", Status::BadInput("no command given"));
  InstallInterruptHandlers();  // passed on to the command, not taken by this process
  HeldLock machine;
  if (Status s =
          BeginMeasurement("loadbench lock", ThisProcess(command_line, ""), !f.no_wait, &machine);
      !s.ok()) {
    const int code = ReportError("lock", s);
    return Interrupted() ? 130 : code;
  }
  if (Status s = PassMachineLockToChildren(machine); !s.ok()) return ReportError("lock", s);
  pid_t pid = -1;
  if (Status s = StartCommandGroup(f.command, &pid); !s.ok()) {
    ReportError("lock", s);
    return 127;  // as a shell says of a command it cannot run
  }
  return WaitForCommandGroup(pid);
}

}  // namespace loadbench::cli
