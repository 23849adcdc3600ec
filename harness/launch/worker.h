// The worker: one load of one file by one strategy, in a process of its own (the runner forks
// and execs `loadbench worker`), so that its peak RSS, faults and I/O are its own.
#pragma once

#include "harness/launch/request.h"
#include "harness/record/record.h"

namespace loadbench {

// Runs the load and returns the worker's part of the run record (harness/record/record.h): status,
// error, params, use, the checksum and how it was verified, the timings, peak and start RSS,
// bytes read, the memory split, counters, details, load_start_unix_s (CLOCK_REALTIME at the
// start, to compare readers across hosts) and load_start_mono_s (CLOCK_MONOTONIC at the start,
// to align the runner's timeline). Timing starts before the file is opened and ends
// when the consumer has used every tensor (loaders/use/pipeline.h); a verification pass that
// is not part of the use comes after.
RunRecord RunWorker(const WorkerRequest& req);

// The `worker` subcommand: runs RunWorker and writes its record as one JSON line (WireJson) to
// req.result_fd. Exit 0 when the record was written (whatever the run's status), 1 when it
// could not be.
int WorkerMain(const WorkerRequest& req);

}  // namespace loadbench
