// The ranks launcher: a run's readers on the ranks of an MPI job (launch/job.h), and the
// messages rank 0 and the other ranks exchange. Rank 0 runs the executor as on one machine;
// the other ranks follow it (harness/run/follow.cc):
//   check  every rank runs the same loadbench, every host sees the same model (size, checksum)
//   run    each host's first rank prepares its host (the host steps); each rank starts its
//          reader in a fresh worker of its own, which sets up and says it is ready (or, for an
//          exec run, forks the run's command and holds it before its exec); all ranks wait for
//          each other at the start barrier, then release their readers at once; all wait for
//          the last; each host's first rank measures its host after; rank 0 gathers the
//          outcomes (on a cluster's nodes, with what each node's NIC carried meanwhile)
//   end    the exit code rank 0 ends with
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/experiment/file.h"
#include "harness/launch/job.h"
#include "harness/launch/launcher.h"

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
// The launcher of rank 0 (launch/launcher.h): it sends the run to the other ranks, then runs
// its own part of it (RunOnEveryRank) and returns every reader's outcome. `commands`: the run is
// an exec strategy's, one command per rank (launch/command.h), judged as commands are.
std::unique_ptr<Launcher> RanksLauncher(const Job& job, bool commands);

// The run message rank 0 sends for a run, and the request every other rank makes of it for its
// own reader (no timeline, no profile): an exec run's program, argv and timed region among it.
// It carries no credential of a store: a rank reads a
// remote model with the credentials of its own environment, or, for the experiment's own s3rver
// (which the message names by its endpoint), with s3rver's public keys, set by the rank itself.
// It does carry the run's peer token (loaders/blocks/peers.h), the secret the run's readers
// present to each other, over the job's own connections.
RankJson RunMessage(const LaunchRequest& req);
// The request read back: kBadInput when the message's worker request is not one (the rest is
// read all the same).
Status RequestOf(const RankJson& run, const std::string& exe, LaunchRequest* out);

// This rank's part of one run: its host prepared (by its first rank, `host.prepare`), this
// rank's reader (rank < req.readers) started as a worker loading its part (or as the run's
// command), every rank at the start barrier once its reader is ready, the readers released,
// every rank at the barrier again once its reader ended, `host.after` on each host's first
// rank, and the outcomes gathered. With req.nic_counters each reader's outcome has what its
// namespace's interfaces carried from its release to its end (net/nic_counters.h). Rank 0 gets
// every reader's outcome, each with its host's state; the others get nothing. Sets
// *interrupted when any rank was.
std::vector<ReaderOutcome> RunOnEveryRank(const Job& job, const LaunchRequest& req,
                                          const HostSteps& host, bool* interrupted);

// A host's state as the ranks send it, and back.
RankJson HostStateJson(const HostState& h);
HostState HostStateOf(const RankJson& j);

// Rank 0 tells the others it ends with `code`.
void EndJob(const Job& job, int code);

}  // namespace loadbench
