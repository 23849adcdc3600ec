#include "harness/run/follow.h"

#include <fmt/format.h>

#include "harness/launch/ranks.h"
#include "harness/leftovers/leftovers.h"
#include "harness/measure/host.h"
#include "harness/process/locks.h"
#include "harness/run/session.h"

namespace loadbench {
namespace {

// This rank's part of one run: its host prepared (when it is the host's first rank) exactly as
// rank 0 prepares its own (measure/host.h), its reader run.
void FollowRun(const Job& job, const RankJson& run, const std::vector<PreparedFile>& files,
               const std::string& exe) {
  LaunchRequest req;
  if (Status s = RequestOf(run, exe, &req); !s.ok()) {
    fmt::print(stderr, "loadbench (rank {}): run message: {}\n", job.rank(), s.message());
  }
  const PreparedFile* f = nullptr;  // the run's file among this host's, by path
  for (const PreparedFile& mine : files) f = mine.path == req.worker.file ? &mine : f;
  Host host({f != nullptr ? &f->table : nullptr, req.worker.file, req.cache,
             req.worker.strategy.info, 0, false});
  bool interrupted = false;
  RunOnEveryRank(job, req, host.Steps(), &interrupted);
  if (job.host_leader()) host.CleanUp(fmt::format("loadbench (rank {})", job.rank()));
}

// Another host's first rank holds that machine for this measurement, as rank 0 holds its own:
// once rank 0 has its lock (it sends the check after), so that two ranks of one machine never
// wait for each other; and without waiting, since every rank waits for this one (a machine
// another measurement holds is said, and measured anyway).
void HoldHost(const Job& job, const ExecuteOptions& o, HeldLock* machine) {
  if (!job.host_leader()) return;
  const Status s = BeginMeasurement(o.who, ThisProcess(o.command_line, o.out_dir), false, machine);
  if (!s.ok()) {
    fmt::print(stderr, "{}: WARNING: rank {} (host {}): {}\n", o.who, job.rank(), job.host(),
               s.message());
  }
}

}  // namespace

int FollowJob(const Job& job, const ExecuteOptions& o) {
  RunSession rs;
  StartSession(&rs);
  HeldLock machine;
  std::vector<PreparedFile> files;
  for (;;) {
    const RankJson m = ParseRankJson(job.Broadcast(""));
    const std::string type = m.value("type", "end");
    if (type == "check") {
      HoldHost(job, o, &machine);
      if (std::string why = CheckRanks(job, m, o.who, &files); !why.empty()) {
        fmt::print(stderr, "{}: {}\n", o.who, why);
        return 2;
      }
    } else if (type == "run") {
      FollowRun(job, m, files, rs.measure.exe);
    } else {
      return m.value("code", 2);
    }
  }
}

}  // namespace loadbench
