// The iperf3 kind: iperf3's server, the other end of a link's own measurement (harness/link/
// iperf.h), on the link's server address at a free port, in the foreground, its output flushed
// line by line so that its "listening" line is seen as soon as it is printed.
#include <fmt/format.h>

#include "harness/server/kinds.h"
#include "harness/system/child.h"

namespace loadbench {

Status PrepareIperf3(const ServerSpec& spec, ServerLaunch* out) {
  ServerLaunch l;
  l.name = "iperf3";
  if (Status s = FindProgram("iperf3", "iperf3", &l.program); !s.ok()) {
    return Status::BadInput(s.message());
  }
  std::string said;
  LB_RETURN_IF_ERROR(RunForOutput({l.program, "--version"}, 10, &said));
  l.version = VersionIn(said);
  LB_RETURN_IF_ERROR(FreeLoopbackPort(&l.port));
  l.argv = {l.program,     "--server", "--bind", spec.address, "--port", std::to_string(l.port),
            "--forceflush"};
  l.config = {{"bind", spec.address}, {"port", l.port}};
  *out = std::move(l);
  return Status::Ok();
}

bool IperfListening(const std::string& log) {
  return log.find("Server listening on") != std::string::npos;
}

}  // namespace loadbench
