// Spawning workers: forks and execs `loadbench worker` processes for one run, samples their
// timelines from outside, reads each one's record from its result pipe, and reaps each with
// wait4 for its rusage. Several workers loading at once are held after their loads until all
// have loaded, so that their memory (shared pages, PSS) is measured side by side.
#pragma once

#include <sys/resource.h>

#include <string>
#include <vector>

#include "harness/run/record.h"
#include "harness/system/timeline.h"

namespace loadbench {

struct SpawnRequest {
  std::string exe, file, strategy, counters;
  std::vector<std::string> file_paths;  // the model's files, for the timeline (default: file)
  std::string expect_checksum = "none";  // hex, for a file that stores no checksum
  // Readers of a model by a read pattern (harness/ranks/part.h): worker i loads part
  // first_part + i of `parts` and must give part_checksums[i] (hex). parts 1: the whole model.
  std::string pattern = "replicated";
  int first_part = 0, parts = 1;
  std::vector<std::string> part_checksums;
  std::string cgroup_procs;  // the memory cgroup's procs file the workers join; "" for none
  int procs = 1;
  double timeout_s = 0;
  double sample_s = 0;  // 0: no timeline
  // Profiles (harness/run/profile.h): perf's path and rate; each worker's data goes to
  // profile_dir/worker-PID.perf.data. profile_hz 0: none.
  std::string perf, profile_dir;
  int profile_hz = 0;
};

// What the runner learns about one worker process.
struct WorkerOutcome {
  RunRecord record;      // the worker's part, when it sent one (error empty)
  std::string error;     // why there is no usable record
  rusage usage{};
  double process_s = 0;  // from fork to reaping
  std::vector<TimelineSample> timeline;
  int signal = 0;  // the signal that killed the worker, when one did
  std::string profile_data;   // perf's data of the timed region, when it was profiled
  std::string profile_error;  // why a profile asked for was not taken
};

// In a child after fork, before exec (async-signal-safe): puts fds[i] at descriptor 3 + i,
// each first copied above 16 so that no placement overwrites another, and the placed copies
// stay open across exec; a -1 leaves its number free. False when a descriptor cannot be moved.
bool PlaceFdsFromChild(int* fds, int n);

// Runs `req.procs` workers to the end. On timeout or interruption kills them all; interrupted,
// it sets *interrupted and the outcomes mean nothing.
std::vector<WorkerOutcome> SpawnWorkers(const SpawnRequest& req, bool* interrupted);

}  // namespace loadbench
