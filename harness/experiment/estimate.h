// Rough estimates of how long runs take, from the machine's ceilings as the probe measured
// them: for the plan a dry run prints, and for the time left on the progress line.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/experiment/experiment.h"
#include "loaders/strategy/registry.h"
#include "loaders/use/spec.h"

namespace loadbench {

// The machine's ceilings an estimate of time is made from: a full probe's figures.
struct Ceilings {
  double cold_gbps = 0, cold_direct_gbps = 0, warm_gbps = 0, memcpy_gbps = 0, write_gbps = 0;
  double anon_fault_us = 0;  // per 4 KiB page of fresh memory
  double file_page_us = 0;   // per mapped 4 KiB page of a cached file
};

// The ceilings in a probe object (as `loadbench probe --json` prints); nullopt when it lacks
// the device figures (a quick probe).
std::optional<Ceilings> CeilingsOf(const nlohmann::ordered_json& probe);

// A rough estimate of one run's seconds (cache preparation, worker start and load) from the
// ceilings: the device or page-cache rate, plus the cost of fresh pages for strategies that
// allocate, and of mapping pages for those that map the file, times the workers.
double EstimateRunSeconds(const Ceilings& c, uint64_t file_bytes, const StrategySpec& spec,
                          const std::string& cache, int procs);

// Run `r` of `e` on a shaped link, estimated `local_s` as if it read the disk: no less than the
// bytes it pulls over the link (every reader's, for replicated readers) at 95% of the rate (TCP's
// payload), or iperf3's time for the link's ceiling. `local_s` as it is off a link, unshaped,
// or for a run that reads the file itself.
double EstimateOnLink(const Experiment& e, const ExperimentRun& r, uint64_t file_bytes,
                      double local_s);

}  // namespace loadbench
