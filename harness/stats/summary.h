// The summary table a run or an experiment ends with.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace loadbench {

// The summary table of a set of run records (as in runs.jsonl): per strategy and cache state,
// the ok runs' median/min/max wall time, GB/s, median peak RSS and faults, and how many runs
// were not ok; then a line on the ceiling reads when there were any.
std::string SummaryTable(const std::vector<nlohmann::ordered_json>& runs);

}  // namespace loadbench
