// `loadbench experiment FILE`: runs an experiment's plan (harness/experiment/experiment.h) into a results
// folder, resuming it when the folder already holds some of its runs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/experiment/experiment.h"

namespace loadbench {

struct ExperimentOptions {
  std::string path;      // the experiment file
  std::string out_dir;   // empty: results/<experiment name>
  std::string data_dir = "data";  // where generated files are cached by spec
  bool dry_run = false;  // print the plan; run and write nothing
  bool quiet = false;    // no progress, no per-run lines
  bool cleanup = false;  // remove the files this command generated once every run is done
  std::optional<uint64_t> seed;  // --seed: instead of the file's
  int reps = 0;          // > 0: instead of the file's reps
  bool auto_reps = false;  // --reps auto: instead of the file's reps
  // --auto-*: instead of the file's (or the defaults); unset fields are negative.
  double auto_target = -1, auto_budget_s = -1;
  int auto_min_rounds = -1, auto_max_rounds = -1;
  std::string command_line;
};

// Returns the exit code of the CLI contract: 0 every run ok (unsupported ones aside), 1 some
// run failed or was invalid, 2 bad input (a malformed experiment, a results folder that holds
// another experiment's runs; nothing run), 130 interrupted (finished runs kept, and the
// command that resumes printed).
int RunExperiment(const ExperimentOptions& opts);

// The machine's ceilings an estimate of time is made from: a full probe's figures.
struct Ceilings {
  double cold_gbps = 0, cold_direct_gbps = 0, warm_gbps = 0, memcpy_gbps = 0, write_gbps = 0;
  double anon_fault_us = 0;       // per 4 KiB page of fresh memory
  double file_page_us = 0;        // per mapped 4 KiB page of a cached file
};

// The ceilings in a probe object (as `loadbench probe --json` prints); nullopt when it lacks
// the device figures (a quick probe).
std::optional<Ceilings> CeilingsOf(const nlohmann::ordered_json& probe);

// A rough estimate of one run's seconds (cache preparation, worker start and load) from the
// ceilings: the device or page-cache rate, plus the cost of fresh pages for strategies that
// allocate, and of mapping pages for those that map the file, times the workers.
double EstimateRunSeconds(const Ceilings& c, uint64_t file_bytes, const StrategySpec& spec,
                          const std::string& cache, int procs);

}  // namespace loadbench
