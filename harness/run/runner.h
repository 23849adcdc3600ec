// The runner: prepares and checks the cache state, runs every load in a fresh worker process,
// measures it from outside, and appends each run to runs.jsonl as it ends.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/run/rounds.h"
#include "harness/run/session.h"
#include "loaders/loader.h"
#include "loaders/base/status.h"

namespace loadbench {

struct RunOptions {
  std::string file;
  std::vector<StrategySpec> strategies;
  std::vector<std::string> caches;  // "cold", "warm"
  int reps = 5;                       // rounds; with auto_reps the most is autoreps'
  bool auto_reps = false;
  AutoReps autoreps;
  RoundOrder order = RoundOrder::kInterleaved;
  uint64_t seed = 0;                   // of the shuffled order
  bool ceiling = false;                // a ceiling run in every cold round
  std::string baseline;                // the spec text paired ratios are against
  std::string out_dir;  // empty: results/run-<UTC time>
  std::string experiment = "run";
  double timeout_s = 0;  // per run; 0 = none
  std::vector<std::string> counters;  // libpfm4 event names; empty: none
  double sample_ms = 10;              // timeline sampling interval; 0: no timelines
  int procs = 1;                      // workers loading the file at the same time
  uint64_t memory_limit = 0;          // bytes; each run in a memory cgroup of this limit
  std::string command_line;
};

// Runs the plan and prints progress (stderr) and the summary table (stdout). Returns the exit
// code per the CLI contract: 0 every run ok (unsupported runs aside), 1 some run failed or was
// invalid, 2 bad input (nothing written), 130 interrupted (finished runs kept).
int RunBenchmark(const RunOptions& opts);

// The summary table of a set of run records (as in runs.jsonl): per strategy and cache state,
// the ok runs' median/min/max wall time, GB/s, median peak RSS and faults, and how many runs
// were not ok.
std::string SummaryTable(const std::vector<nlohmann::ordered_json>& runs);

}  // namespace loadbench
