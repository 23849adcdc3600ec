// --reps N|auto and the --auto-* options of run and experiment (RepsFlags, harness/cli/
// commands.h) read into RepsOverrides, which ApplyRepsOverrides (harness/experiment/
// experiment.h) applies to the experiment: the one place they take effect.
#pragma once

#include "harness/cli/commands.h"
#include "harness/experiment/experiment.h"

namespace loadbench::cli {

// The overrides the flags give; kBadInput naming the flag when one is malformed.
Status ParseRepsFlags(const RepsFlags& f, RepsOverrides* out);

}  // namespace loadbench::cli
