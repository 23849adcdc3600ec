// The worker: one load of one file by one strategy, in a process of its own (the runner forks
// and execs `loadbench worker`), so that its peak RSS, faults and I/O are its own.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/record/record.h"

namespace loadbench {

struct WorkerRequest {
  std::string file;
  std::string strategy;               // with options: "fread:chunk=4MiB"
  std::vector<std::string> counters;  // libpfm4 event names, counted over the timed region
  // When >= 0: once the load is complete the worker writes "loaded\n" to its result fd and
  // waits for a byte (or EOF) on this fd before it measures its memory; after writing its
  // record it waits for EOF before exiting. Workers loading concurrently are so measured while
  // all of them hold their memory.
  int hold_fd = -1;
  // When >= 0: the start barrier. Once set up (its strategy resolved, counters opened, a
  // device strategy's context made, perf attached and sampling when profiled), the worker
  // writes "ready\n" to its result fd and waits for a byte on this fd before its timed region
  // starts; EOF instead (the runner gave up on the run) ends it unloaded. The runner releases
  // the readers of a run together, once every one is ready.
  int start_fd = -1;
  // The checksum the model must give, as the runner read it (the one stored in it, or the
  // runner's reference read of a file that stores none): a model that stores another is not the
  // one the runner read, and fails. Unset (run on its own): what the file stores, if anything.
  std::optional<uint64_t> expect_checksum;
  // One of several readers (loaders/use/part.h): the read pattern and which part of how
  // many this worker loads; with parts > 1 the checksum to give is the part's.
  std::string pattern = "replicated";
  int part = 0, parts = 1;
  // When >= 0: perf's control pipes (harness/profile/profile.h). The worker enables the profiler
  // before it says it is ready (start_fd), so that it never waits for perf once released, and
  // disables it at the end of its timed region, waiting for each ack.
  int profile_ctl_fd = -1, profile_ack_fd = -1;
};

// Runs the load and returns the worker's part of the run record (harness/record/record.h): status,
// error, params, use, the checksum and how it was verified, the timings, peak and start RSS,
// bytes read, the memory split, counters, details, load_start_unix_s (CLOCK_REALTIME at the
// start, to compare readers across hosts) and load_start_mono_s (CLOCK_MONOTONIC at the start,
// to align the runner's timeline). Timing starts before the file is opened and ends
// when the consumer has used every tensor (loaders/use/pipeline.h); a verification pass that
// is not part of the use comes after.
RunRecord RunWorker(const WorkerRequest& req, int result_fd);

// The `worker` subcommand: runs RunWorker and writes its record as one JSON line (WireJson) to
// `result_fd`.
// Exit 0 when the record was written (whatever the run's status), 1 when it could not be.
int WorkerMain(const WorkerRequest& req, int result_fd);

}  // namespace loadbench
