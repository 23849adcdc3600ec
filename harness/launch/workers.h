// Local workers: `loadbench worker` processes forked and executed on this machine for one run,
// their timelines sampled from outside, each one's record read from its result pipe, each
// reaped for its rusage. The workers of a run start together: each one sets up (exec, its
// strategy, perf when profiled), says it is ready and waits; once all are ready the runner
// releases them at once, and each starts its clock then. Several workers loading at once are
// held after their loads until all have loaded, so that their memory (shared pages, PSS) is
// measured side by side.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "harness/launch/launcher.h"

namespace loadbench {

// The launcher of local workers (launch/launcher.h).
std::unique_ptr<Launcher> WorkersLauncher();

// Runs the readers of `req` as workers to the end, in the cgroup whose procs file is
// `cgroup_procs` ("" for none); reader k's part is `first_part` + k when the request has parts.
// `all_ready` (when set) is called once every worker is ready, or gone, right before they are
// released: never when the run ends before that (timeout, interruption). The run's timeout
// counts from before the first fork, the wait at the barrier included. On timeout or
// interruption kills them all; interrupted, it sets *interrupted and the outcomes mean
// nothing. (The ranks' launcher runs each rank's worker through it, the ranks' barrier as
// `all_ready`.)
std::vector<ReaderOutcome> RunWorkers(const LaunchRequest& req, const std::string& cgroup_procs,
                                      int first_part, const std::function<void()>& all_ready,
                                      bool* interrupted);

}  // namespace loadbench
