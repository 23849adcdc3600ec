// `loadbench netns-exec NETNS COMMAND...`: mpirun's remote shell for a [cluster]'s nodes
// (harness/run/cluster_run.h). mpirun runs its remote shell as `AGENT HOST COMMAND-LINE`, as it
// would run ssh; here HOST is a node's namespace, and the command line runs in it through
// /bin/sh -c, as ssh's remote shell would run it. Only the namespaces of a cluster that a
// loadbench command above it made are entered (process/child.h ExecShellInNetns).
#include <fmt/format.h>

#include "harness/cli/commands.h"
#include "harness/process/child.h"

namespace loadbench::cli {

int NetnsExecCommand(const NetnsExecFlags& f) {
  if (!f.netns.starts_with("loadbench-") || f.netns.find('/') != std::string::npos) {
    return ReportError("netns-exec",
                       Status::BadInput(fmt::format("{}: not one of loadbench's network namespaces "
                                                    "(loadbench-...)",
                                                    f.netns)));
  }
  if (f.command.empty()) return ReportError("netns-exec", Status::BadInput("no command given"));
  const Status s = ExecShellInNetns(f.netns, fmt::format("{}", fmt::join(f.command, " ")));
  return ReportError("netns-exec",
                     s.code() == Status::Code::kIOError ? Status::BadInput(s.message()) : s);
}

}  // namespace loadbench::cli
