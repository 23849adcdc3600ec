// One host's part of a run, the same for every launcher: before the readers start, the state
// the run promises (cold: what strategies left outside their processes removed, the model's
// pages dropped; warm: the model read in), the tool's own code read back, the model's residency
// and the page cache measured, and the memory cgroup the readers join made; after they ended,
// the same measured again with the OOM killer's count and the cgroup's peak. Rank 0 and every
// other host's first rank under MPI prepare their hosts with it (harness/run/follow.cc).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "harness/launch/launcher.h"
#include "harness/process/cgroup.h"
#include "loaders/format/tensor_table.h"
#include "loaders/strategy/registry.h"

namespace loadbench {

// What a host is prepared for.
struct HostPlan {
  const TensorTable* table = nullptr;  // the model as this host sees it
  std::string path;                    // its path, as strategies' leftovers are named by it
  std::string cache;                   // "cold" or "warm"
  const StrategyInfo* info = nullptr;  // the strategy, for its leftovers; null for none
  uint64_t memory_limit = 0;           // bytes; 0: none
  bool measuring_cgroup = false;       // a cgroup even without a limit (commands)
};

class Host {
 public:
  explicit Host(HostPlan plan) : plan_(std::move(plan)) {}

  // The steps a launcher calls, bound to this host (which must outlive them).
  HostSteps Steps();
  // What the run's strategy left outside its processes goes before the next run, whatever that
  // is, so that no run is measured beside it; a failure is said after `who`.
  void CleanUp(const std::string& who) const;

 private:
  HostState Prepare();
  Status Make(HostState* h);
  void After(HostState* h) const;

  HostPlan plan_;
  std::unique_ptr<MemoryCgroup> cgroup_;
};

// Removes what `info` leaves outside its processes (shm: a segment holding the whole file,
// which nothing can reclaim) for `file`; a failure is said after `who` on stderr when `who` is
// not empty, and returned.
Status CleanUpAfter(const StrategyInfo& info, const std::string& file, const std::string& who);

}  // namespace loadbench
