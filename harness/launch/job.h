// The MPI job a command runs in: `mpirun -np N loadbench experiment X.toml` (or Slurm's srun)
// starts N ranks of one experiment, on one host or many. Rank 0 reads the plan and writes the
// results; every rank loads its reader's part in a worker of its own (docs/many-readers.md).
// This header is the whole of MPI as the rest of the harness sees it: a build without MPI
// compiles it too, and a command launched by mpirun there says why it cannot take part.
#pragma once

#include <string>
#include <vector>

#include "loaders/base/status.h"

namespace loadbench {

// Whether this process was started by an MPI launcher (mpirun, mpiexec, srun with PMI/PMIx):
// from the variables they set.
bool LaunchedByMpi();

// Empty when this build can join MPI jobs, else why not.
std::string MpiUnavailableReason();

// The name of this rank's host: its hostname, so that ranks on one machine are one host
// however the hostfile names it; LOADBENCH_HOST, when set, instead (ranks of one machine told
// apart, as the tests do to take the path of several hosts).
std::string HostName();

// This process's place in the job. Every collective call must be made by every rank, in the
// same order.
class Job {
 public:
  Job() = default;
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;
  ~Job();  // leaves the job (MPI_Finalize)

  // Joins the job this process was launched into (MPI_Init, then every rank's host).
  // kUnsupported when the build has no MPI.
  Status Join();

  int rank() const { return rank_; }
  int size() const { return size_; }
  const std::string& host() const { return hosts_.at(static_cast<size_t>(rank_)); }
  const std::string& host_of(int rank) const { return hosts_.at(static_cast<size_t>(rank)); }
  // The lowest rank on each rank's host: it prepares and checks the host's cache state.
  int leader_of(int rank) const { return leaders_.at(static_cast<size_t>(rank)); }
  bool host_leader() const { return leader_of(rank_) == rank_; }
  int hosts() const;

  // Every rank here. `prompt`: each rank leaves within a quarter of a millisecond of the last
  // one's arrival (the start barrier, where the readers' clocks start), checking at least that
  // often, which costs CPU while it waits; otherwise checks grow to 10 ms apart, leaving the CPU
  // to loads being measured.
  void Barrier(bool prompt = false) const;
  // Rank 0's `text` on every rank.
  std::string Broadcast(const std::string& text) const;
  // Every rank's `mine`, in rank order, on every rank.
  std::vector<std::string> AllGather(const std::string& mine) const;
  // Every rank's `mine`, in rank order, at rank 0; empty elsewhere.
  std::vector<std::string> Gather(const std::string& mine) const;

 private:
  bool joined_ = false;
  int rank_ = 0, size_ = 1;
  std::vector<std::string> hosts_ = {""};
  std::vector<int> leaders_ = {0};
};

}  // namespace loadbench
