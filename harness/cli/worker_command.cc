// `loadbench worker` (internal): one load in the worker process the runner forks and execs
// (harness/launch/worker.h), told what to load by one typed request (harness/launch/request.h).
#include <cstdlib>

#include <fmt/format.h>

#include "harness/cli/commands.h"
#include "harness/launch/worker.h"
#include "loaders/blocks/peers.h"

namespace loadbench::cli {

int WorkerCommand(const WorkerFlags& f) {
  const nlohmann::ordered_json j =
      nlohmann::ordered_json::parse(f.request, nullptr, /*allow_exceptions=*/false);
  WorkerRequest req;
  if (Status s = ReadWorkerRequest(j, &req); !s.ok()) return ReportError("worker", s);
  const std::string reader = fmt::format("{}/{}", req.reader, req.readers);
  ::setenv(kReaderVar, reader.c_str(), 1);
  return WorkerMain(req);
}

}  // namespace loadbench::cli
