// One measured run: the cache state prepared and checked, the strategy's workers spawned (in a
// memory cgroup when the run has a limit), their records completed with what the runner saw
// from outside, checked against the cache state the run promised, appended to runs.jsonl and
// logged. The ceiling run (a raw device read) is measured here too.
#pragma once

#include "harness/run/session.h"
#include "loaders/base/status.h"

namespace loadbench {

// One run of `p` on `file`: one record per worker. Interrupted (*interrupted set), it writes
// no record. Fails only when a record cannot be written.
Status MeasureRun(RunSession& rs, const PreparedFile& file, const RunPoint& p,
                  bool* interrupted);

}  // namespace loadbench
