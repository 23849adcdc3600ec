// `loadbench worker` (internal): one load in the worker process the runner forks and execs
// (harness/launch/worker.h).
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>

#include "harness/cli/commands.h"
#include "harness/launch/worker.h"
#include "harness/machine/counters.h"
#include "loaders/blocks/peers.h"

namespace loadbench::cli {
namespace {

// `text` as K/N with 0 <= K < N, else kBadInput naming `flag`.
Status KOfN(const char* flag, const std::string& text, int* k, int* n) {
  if (std::sscanf(text.c_str(), "%d/%d", k, n) == 2 && *n >= 1 && *k >= 0 && *k < *n) {
    return Status::Ok();
  }
  return Status::BadInput(fmt::format("{}: '{}' is not K/N with 0 <= K < N", flag, text));
}

}  // namespace

int WorkerCommand(WorkerFlags& f) {
  Status s = ParseCounterList(f.counters, &f.req.counters);
  if (!s.ok()) return ReportError("worker", s);
  if (f.expect_checksum != "none") {
    size_t used = 0;
    try {
      f.req.expect_checksum = std::stoull(f.expect_checksum, &used, 16);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != f.expect_checksum.size()) {
      return ReportError("worker",
                         Status::BadInput(fmt::format("--expect-checksum: '{}' is not a hex number",
                                                      f.expect_checksum)));
    }
  }
  int k = 0, n = 0;
  if (Status s = KOfN("--part", f.part, &f.req.part, &f.req.parts); !s.ok()) {
    return ReportError("worker", s);
  }
  if (Status s = KOfN("--reader", f.reader, &k, &n); !s.ok()) return ReportError("worker", s);
  ::setenv(kReaderVar, f.reader.c_str(), 1);
  return WorkerMain(f.req, f.result_fd);
}

}  // namespace loadbench::cli
