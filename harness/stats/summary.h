// The summary table a run or an experiment ends with.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace loadbench {

// The summary table of a set of run records (as in runs.jsonl): a row per file, cache state,
// strategy spec, role, procs and memory limit (never pooling unlike runs), with the ok runs'
// median/min/max wall time, GB/s of that file, median peak RSS, bytes read and the load's own
// faults ("-" where no run has the figure), and how many runs were not ok; then a line on the
// ceiling reads when there were any.
std::string SummaryTable(const std::vector<nlohmann::ordered_json>& runs);

}  // namespace loadbench
