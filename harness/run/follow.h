// The ranks of an MPI job other than 0: they follow rank 0's messages (launch/ranks.h) until it
// ends, each host's first rank preparing its host for every run as rank 0 does its own.
#pragma once

#include "harness/launch/job.h"
#include "harness/run/executor.h"

namespace loadbench {

// Follows rank 0 until it ends; returns the exit code to end with.
int FollowJob(const Job& job, const ExecuteOptions& o);

}  // namespace loadbench
