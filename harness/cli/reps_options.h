// --reps N|auto and the --auto-* options, which `run` and `experiment` share: declared here,
// read into RepsOverrides here, and applied to the experiment in one place
// (ApplyRepsOverrides, harness/experiment/experiment.h).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "harness/experiment/experiment.h"

namespace loadbench::cli {

struct RepsFlags {
  std::string reps, target, budget;
  int min_rounds = -1, max_rounds = -1;
};

// Adds --reps (with `reps_help` saying what a round is) and the --auto-* options to `cmd`.
void AddRepsOptions(CLI::App* cmd, RepsFlags* f, const std::string& reps_help);

// The overrides the flags give; kBadInput naming the flag when one is malformed.
Status ParseRepsFlags(const RepsFlags& f, RepsOverrides* out);

}  // namespace loadbench::cli
