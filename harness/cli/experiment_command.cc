// `loadbench experiment FILE`: an experiment file's plan, run by the executor into a results
// folder that a later invocation resumes; or, with --dry-run, the plan printed.
#include "harness/cli/commands.h"
#include "harness/cli/reps_options.h"
#include "harness/machine/counters.h"
#include "harness/run/dry_run.h"
#include "harness/run/executor.h"

namespace loadbench::cli {

int ExperimentCommand(const ExperimentFlags& f, const std::string& command_line) {
  RepsOverrides reps;
  if (Status s = ParseRepsFlags(f.reps, &reps); !s.ok()) return ReportError("experiment", s);
  Experiment e;
  Status s = LoadExperiment(f.path, f.data_dir, &e);
  if (s.ok() && f.seed) {
    e.seed = *f.seed;
    PlanRuns(&e);
  }
  if (s.ok()) s = ApplyRepsOverrides(reps, &e);
  if (!f.tune.empty()) {
    e.system.tune = f.tune != "off";
    e.system.tune_auto = f.tune == "auto";
  }
  if (s.ok() && f.profile.hz && !f.profile.on && !e.profile) {
    s = Status::BadInput("--profile-hz: only with --profile or the file's profile = true");
  }
  e.profile = e.profile || f.profile.on;
  if (f.profile.hz) e.profile_hz = *f.profile.hz;
  if (!s.ok()) return ReportError("experiment", s);
  const std::string out_dir = f.out_dir.empty() ? "results/" + e.name : f.out_dir;
  if (f.dry_run) return PrintPlan(e, f.data_dir, out_dir);
  ExecuteOptions o;
  o.who = "loadbench experiment";
  o.out_dir = out_dir;
  o.resume = true;
  o.quiet = f.quiet;
  o.verbose = f.verbose;
  o.data_dir = f.data_dir;
  o.cleanup = f.cleanup;
  o.wait = !f.no_wait;
  o.settle_wait_s = f.settle_wait_s;
  o.command_line = command_line;
  (void)ParseCounterList("default", &o.counters);  // the same set as `run`'s default
  return Execute(e, o);
}

}  // namespace loadbench::cli
