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

// A row's label: the strategy spec, its role (unless `with_role` is false: a run's readers of
// every role together, as the many-readers table has them), "(unverified)", " xN" readers and
// their read pattern, the memory limit, and the file's name when `name_file`.
std::string RowLabel(const nlohmann::ordered_json& r, bool name_file, bool with_role = true);

// Runs of several readers, MLPerf Storage's way: a round (one run of N readers) lasts as long as
// its slowest reader; its throughput is every byte the readers delivered over that time; its
// spread is the slowest reader's time over the median reader's. A row per file, cache state,
// strategy, readers and pattern: ok rounds, and the medians of those three. A round with a
// reader not ok (or missing) has no duration: it is listed below with the reason. "" when no
// run had more than one reader.
std::string ReadersTable(const std::vector<nlohmann::ordered_json>& runs);

}  // namespace loadbench
