// `loadbench experiment --dry-run`: what the executor would run, what it needs (files, disk),
// and roughly how long it would take; nothing is run or written.
#pragma once

#include <string>

#include "harness/experiment/experiment.h"

namespace loadbench {

// Prints the plan of `e` into `out_dir` (runs already recorded there are not counted again),
// with generated files going to `data_dir`. Returns the exit code: 0.
int PrintPlan(const Experiment& e, const std::string& data_dir, const std::string& out_dir);

}  // namespace loadbench
