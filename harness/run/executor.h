// The executor: carries out an experiment's plan into a results folder. `loadbench experiment`
// hands it an experiment read from a file, `loadbench run` one built from its flags; both get
// the same phases: the results folder checked (resumed or refused), files generated and
// prepared, env.json with the stability check, the runs in rounds (a fixed number, or until the
// paired ratios are known well enough), the summary, and an ending that keeps every finished
// run however the command stops.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/experiment/experiment.h"
#include "harness/launch/job.h"

namespace loadbench {

struct ExecuteOptions {
  std::string who;      // prefixes every message: "loadbench run", "loadbench experiment"
  std::string out_dir;  // the results folder
  // true: a folder holding some of this experiment's runs is resumed (experiment, run
  // --resume); false: a folder holding any runs is refused (run).
  bool resume = false;
  bool wait = true;    // for the machine, while another measurement runs (false: refuse, exit 2)
  bool quiet = false;  // no progress line, no per-run lines, no summary table
  double settle_wait_s = 60;          // how long a busy machine is waited for before the runs
  bool verbose = false;               // a line for every run (else only for those not ok)
  std::string data_dir = "data";      // where generated files are written
  bool cleanup = false;               // remove the files generated here once every run is done
  std::vector<std::string> counters;  // libpfm4 events counted over every load
  double sample_ms = 10;              // timeline sampling interval; 0: no timelines
  std::string command_line;
  const Job* job = nullptr;  // set by Execute under MPI
  // A [cluster]'s ranks: the cluster as its command made it (env.json's `cluster`, from
  // LOADBENCH_CLUSTER: harness/run/cluster_run.h); null otherwise.
  nlohmann::ordered_json cluster;
};

// Launched by an MPI launcher (mpirun, srun), every rank calls this: rank 0 runs the plan
// across the job's ranks (harness/launch/ranks.h), the others follow it, and every rank ends
// with rank 0's exit code; an experiment that does not set procs gets the job's size.
// Holds the results folder for this command alone and the machine for this measurement alone
// while it runs (harness/process/locks.h).
// Returns the exit code of the CLI contract: 0 every run ok (unsupported ones aside), 1 some
// run failed or was invalid, 2 bad input (nothing run), 3 the results could not be written
// (what was written is whole; the printed command resumes), 130 interrupted (finished runs
// kept).
int Execute(const Experiment& e, const ExecuteOptions& o);

}  // namespace loadbench
