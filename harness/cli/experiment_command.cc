// `loadbench experiment FILE`: an experiment file's plan, run by the executor into a results
// folder that a later invocation resumes; or, with --dry-run, the plan printed.
#include <optional>

#include "harness/cli/command.h"
#include "harness/cli/reps_options.h"
#include "harness/run/dry_run.h"
#include "harness/run/executor.h"
#include "harness/system/counters.h"

namespace loadbench::cli {
namespace {

class ExperimentCmd final : public Command {
 public:
  CLI::App* Add(CLI::App& app) override {
    auto* cmd = app.add_subcommand(
        "experiment",
        "Run an experiment file (experiments/*.toml): generate its files, run its plan with a "
        "progress line, and resume it when its results folder already holds some of its runs");
    cmd->add_option("file", path_, "Experiment file (TOML)")->required();
    cmd->add_option("--out", out_dir_,
                    "Results folder (default: results/<experiment name>); one that holds "
                    "some of this experiment's runs is resumed");
    cmd->add_option("--data", data_dir_, "Where generated files are cached by spec")
        ->capture_default_str();
    AddRepsOptions(cmd, &reps_, "Rounds, instead of the file's reps");
    cmd->add_flag("--dry-run", dry_run_,
                  "Print the plan (runs, disk needed, a time estimate from the probe); run "
                  "and write nothing");
    cmd->add_flag("--quiet", quiet_, "No progress line and no per-run lines");
    cmd->add_option("--seed", seed_,
                    "Seed of the shuffled order, instead of the file's (each repetition of an "
                    "A/A calibration draws its own orders)");
    cmd->add_flag("--cleanup", cleanup_,
                  "Remove the files this command generated once every run is done");
    return cmd;
  }

  int Run(const std::string& command_line) override {
    RepsOverrides reps;
    if (Status s = ParseRepsFlags(reps_, &reps); !s.ok()) return ReportError("experiment", s);
    Experiment e;
    Status s = LoadExperiment(path_, data_dir_, &e);
    if (s.ok() && seed_) {
      e.seed = *seed_;
      PlanRuns(&e);
    }
    if (s.ok()) s = ApplyRepsOverrides(reps, &e);
    if (!s.ok()) return ReportError("experiment", s);
    const std::string out_dir = out_dir_.empty() ? "results/" + e.name : out_dir_;
    if (dry_run_) return PrintPlan(e, data_dir_, out_dir);
    ExecuteOptions o;
    o.who = "loadbench experiment";
    o.out_dir = out_dir;
    o.resume = true;
    o.quiet = quiet_;
    o.data_dir = data_dir_;
    o.cleanup = cleanup_;
    o.command_line = command_line;
    (void)ParseCounterList("default", &o.counters);  // the same set as `run`'s default
    return Execute(e, o);
  }

 private:
  std::string path_, out_dir_, data_dir_ = "data";
  RepsFlags reps_;
  bool dry_run_ = false, quiet_ = false, cleanup_ = false;
  std::optional<uint64_t> seed_;
};

}  // namespace

std::unique_ptr<Command> ExperimentCommand() { return std::make_unique<ExperimentCmd>(); }

}  // namespace loadbench::cli
