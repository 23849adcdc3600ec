// A memory cgroup for one worker, so that the page cache and anonymous memory of a load are
// charged and limited as they would be in a container with a memory limit; or, with no limit,
// for an exec run's command, so that everything it starts is measured and can be found.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "loaders/base/status.h"

namespace loadbench {

// One cgroup directory with the memory controller, named loadbench-<pid>-<n>: under the root of
// cgroup v2 where it is mounted, writable and lists `memory` in cgroup.controllers, else under
// the harness's own group of the cgroup v1 memory hierarchy (so that a harness in a limited
// container keeps its workers inside that limit). Not thread-safe; create it before
// fork, let the child join with JoinCgroupFromChild, read it after the child is reaped.
class MemoryCgroup final {
 public:
  // Creates the group with memory limited to `limit_bytes` and swap to none (v2
  // memory.swap.max, v1 memory.memsw.limit_in_bytes, where the kernel has them); with 0, a
  // group with no limit of its own, to measure what its tasks are charged (exec runs). kUnsupported
  // with the reason when no group can be made here (not root, no memory controller, read-only
  // hierarchy); every message names the path and the errno text.
  static Status Create(uint64_t limit_bytes, std::unique_ptr<MemoryCgroup>* out);

  // Remove(), its error dropped.
  ~MemoryCgroup();
  MemoryCgroup(const MemoryCgroup&) = delete;
  MemoryCgroup& operator=(const MemoryCgroup&) = delete;

  const char* version() const { return v2_ ? "v2" : "v1"; }
  const std::string& path() const { return path_; }
  // The file a task writes to join; computed here so that the child allocates nothing.
  const std::string& procs_path() const { return procs_path_; }
  uint64_t limit_bytes() const { return limit_bytes_; }

  // High-water mark of the group's charged memory (v2 memory.peak, v1
  // memory.max_usage_in_bytes); nullopt where the kernel lacks the file (v2 before 5.19).
  std::optional<uint64_t> PeakBytes() const;
  // Tasks of the group killed by an OOM killer (the `oom_kill` field of v2 memory.events or
  // v1 memory.oom_control); nullopt where the kernel lacks the field.
  std::optional<uint64_t> OomKills() const;

  // Removes the directory once no task is left in it, retrying briefly on EBUSY (a reaped
  // task may stay charged to the group for a moment). On failure the directory stays and the
  // status says why; after success, a second call does nothing.
  Status Remove();

 private:
  MemoryCgroup(bool v2, std::string path, uint64_t limit_bytes);

  bool v2_;
  std::string path_;
  std::string procs_path_;
  uint64_t limit_bytes_;
  bool removed_ = false;
};

// Whether `path` names a group that MemoryCgroup::Create of process `pid` makes here: the
// parent it makes groups under, and the name loadbench-PID-N. What a cleanup of another
// process's groups checks before it kills a task (leftovers/leftovers.h).
bool IsCgroupOfProcess(const std::string& path, long pid);

// "" when a memory cgroup can be created and removed here, else why. Finds out by creating and
// removing a probe group, so that the answer is the one Create would give.
std::string MemoryCgroupUnsupportedReason();

// Async-signal-safe, for a child between fork and exec: moves the calling process into the
// group whose cgroup.procs is `procs_path` ("0" names the writer in v1 and v2). False on
// failure, errno set.
bool JoinCgroupFromChild(const char* procs_path);

// Async-signal-safe, for a child between fork and exec: writes `adj` to
// /proc/self/oom_score_adj, so that an OOM killer picks workers (1000), not the harness.
// Only 0..1000 (else EINVAL): going below 0 needs CAP_SYS_RESOURCE, which a root harness in a
// container may lack, and a worker is never meant to be a less likely victim. False on
// failure, errno set.
bool SetOomScoreAdjFromChild(int adj);

// The system-wide count of OOM kills (`oom_kill` in /proc/vmstat, Linux 4.13+), to tell an OOM
// kill from another SIGKILL when no cgroup is used; nullopt where the field is absent.
std::optional<uint64_t> SystemOomKills();

}  // namespace loadbench
