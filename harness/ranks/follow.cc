// The ranks other than 0: they follow rank 0's messages (harness/ranks/across.h).
#include <unistd.h>

#include <fmt/format.h>

#include "harness/ranks/across.h"
#include "harness/system/cache.h"
#include "harness/system/leftovers.h"
#include "harness/system/locks.h"
#include "loaders/base/proc_fields.h"
#include "loaders/loader.h"

namespace loadbench {
namespace {

// What a run of `strategy` leaves outside its processes (shm's segment), removed.
void CleanUp(const std::string& spec, const std::string& path) {
  std::vector<StrategySpec> specs;
  if (!ParseStrategyList(spec, &specs).ok() || specs.size() != 1) return;
  const StrategyInfo* info = FindStrategy(specs[0].name);
  std::vector<std::string> removed;
  if (info != nullptr && info->cleanup != nullptr) (void)info->cleanup(path, &removed);
}

// A host's cache state for a run, made and checked by its first rank.
RankJson PrepareHost(const RankJson& run, const PreparedFile& f) {
  const std::string cache = run.value("cache", "");
  DropMethod drop = ::geteuid() == 0 ? DropMethod::kDropCaches : DropMethod::kFadvise;
  Status s;
  if (cache == "cold") {
    CleanUp(run.value("strategy", ""), f.path);
    s = DropModelCache(f.table, &drop);
  } else {
    s = WarmModel(f.table);
  }
  ReadBackOwnCode();
  ModelResidency before;
  if (s.ok()) s = MeasureModelResidency(f.table, &before);
  return HostStartJson(s, before, DropMethodName(drop), cache, MeminfoBytes("Cached"));
}

RankJson HostAfter(const PreparedFile& f) {
  std::optional<ModelResidency> after;
  if (ModelResidency m; MeasureModelResidency(f.table, &m).ok()) after = m;
  return HostAfterJson(after, MeminfoBytes("Cached"));
}

// This rank's part of one run.
void FollowRun(const Job& job, const RankJson& run, const std::vector<PreparedFile>& files,
               const std::string& exe) {
  size_t i = 0;  // the run's file among this host's, by path (the check's order)
  while (i < files.size() && files[i].path != run.value("path", "")) ++i;
  HostSteps host;
  host.prepare = [&] {
    if (i >= files.size()) return RankJson{{"ok", false}, {"error", "the file was not prepared"}};
    return PrepareHost(run, files[i]);
  };
  host.after = [&] { return i < files.size() ? HostAfter(files[i]) : RankJson::object(); };
  WorkerOutcome mine;
  bool interrupted = false;
  RunOnEveryRank(job, run.value("readers", 1), ReaderSpawn(job, run, exe), host, &mine,
                 &interrupted);
  if (job.host_leader() && i < files.size()) CleanUp(run.value("strategy", ""), files[i].path);
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
      FollowRun(job, m, files, rs.exe);
    } else {
      return m.value("code", 2);
    }
  }
}

}  // namespace loadbench
