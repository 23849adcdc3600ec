// An experiment across the ranks of an MPI job (harness/ranks/job.h): the messages rank 0 and
// the other ranks exchange, and the steps every rank takes for one run. Rank 0 runs the
// executor as on one machine; the other ranks follow it (FollowJob):
//   check  every rank runs the same loadbench, every host sees the same model (size, checksum)
//   run    each host's first rank makes and checks its host's cache state; all ranks wait for
//          each other and start at once, each reader in a fresh worker of its own; all wait
//          for the last; each host's first rank measures its host after; rank 0 gathers the
//          records
//   end    the exit code rank 0 ends with
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/experiment/experiment.h"
#include "harness/ranks/job.h"
#include "harness/run/executor.h"
#include "harness/run/record.h"
#include "harness/run/session.h"
#include "harness/run/spawn.h"
#include "harness/system/cache.h"

namespace loadbench {

using RankJson = nlohmann::ordered_json;

// A message as JSON; an empty object when it is not JSON.
RankJson ParseRankJson(const std::string& text);

// ---- check ----
// What rank 0 asks every rank to agree on: its version and each file's path, bytes, checksum.
RankJson CheckMessage(const std::vector<PreparedFile>& files);
// Every rank's answer, gathered, and the verdict on all: one line naming the first rank that
// differs and how, or "" when all agree. A host's first rank (other than rank 0) prepares the
// files for its host into *files; `files` of rank 0 are its own.
std::string CheckRanks(const Job& job, const RankJson& check, const std::string& who,
                       std::vector<PreparedFile>* files);

// How rank k's answer (on `host`) differs from what rank 0 asked, in one line, or "": its
// version, or a file it cannot read or sees with another size or checksum.
std::string RankDifference(int k, const std::string& host, const RankJson& check,
                           const RankJson& answer);

// ---- run ----
// The host's cache state as its first rank made it ("ok" false with "error" when it could not),
// and its page cache after the run.
struct HostSteps {
  std::function<RankJson()> prepare;  // the cache state made and checked; Before()
  std::function<RankJson()> after;    // the residency and page cache after
};

// The host's state as HostSteps returns it: before the run (the state made, or why not; the
// drop method of a cold run; the page cache's size) and after it.
RankJson HostStartJson(const Status& prep, const ModelResidency& before, const char* drop,
                       const std::string& cache, std::optional<uint64_t> cached);
RankJson HostAfterJson(const std::optional<ModelResidency>& after, std::optional<uint64_t> cached);

// This rank's part of one run, the run message received: the host's state (its first rank
// calls `host.prepare`), every rank at the barrier, this rank's reader (rank < readers) started
// with `spawn` (procs 1, its part), every rank at the barrier again, `host.after`, and the
// outcome gathered. Rank 0 gets every rank's outcome message (its own included, with its
// worker's outcome in *mine); the others get nothing. Sets *interrupted when any rank was.
std::vector<RankJson> RunOnEveryRank(const Job& job, int readers, SpawnRequest spawn,
                                     const HostSteps& host, WorkerOutcome* mine,
                                     bool* interrupted);

// Reader `k`'s record from rank 0's gathered outcomes: what its worker sent (or why not), its
// process's usage, `host`, `rank` and `ranks`, and its host's cache state before and after
// (a state that was not the run's makes the record invalid). Identity fields are the caller's.
RunRecord ReaderRecord(const Job& job, const std::vector<RankJson>& outcomes, int k,
                       const std::string& cache);

// The run message rank 0 sends for a run of `p` on `f`; the spawn request every rank makes of
// it for its own reader (its part, no timeline, no profile).
RankJson RunMessage(const RunSession& rs, const PreparedFile& f, const RunPoint& p);
SpawnRequest ReaderSpawn(const Job& job, const RankJson& run, const std::string& exe);

// ---- the ranks other than 0 ----
// Follows rank 0 until it ends; returns the exit code to end with.
int FollowJob(const Job& job, const ExecuteOptions& o);
// Rank 0 tells the others it ends with `code`.
void EndJob(const Job& job, int code);

}  // namespace loadbench
