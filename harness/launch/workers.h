// Local workers: `loadbench worker` processes forked and executed on this machine for one run,
// their timelines sampled from outside, each one's record read from its result pipe, each
// reaped for its rusage. Several workers loading at once are held after their loads until all
// have loaded, so that their memory (shared pages, PSS) is measured side by side.
#pragma once

#include <memory>
#include <string>

#include "harness/launch/launcher.h"

namespace loadbench {

// The launcher of local workers (launch/launcher.h).
std::unique_ptr<Launcher> WorkersLauncher();

// Runs the readers of `req` as workers to the end, in the cgroup whose procs file is
// `cgroup_procs` ("" for none); reader k's part is `first_part` + k when the request has parts.
// On timeout or interruption kills them all; interrupted, it sets *interrupted and the outcomes
// mean nothing. (The ranks' launcher runs each rank's worker through it.)
std::vector<ReaderOutcome> RunWorkers(const LaunchRequest& req, const std::string& cgroup_procs,
                                      int first_part, bool* interrupted);

}  // namespace loadbench
