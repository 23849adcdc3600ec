#include "harness/cli/reps_options.h"

#include <fmt/format.h>

#include "harness/run/rounds.h"

namespace loadbench::cli {

void AddRepsOptions(CLI::App* cmd, RepsFlags* f, const std::string& reps_help) {
  cmd->add_option("--reps", f->reps,
                  reps_help + "; 'auto': rounds until every paired ratio with the baseline is "
                              "known within ±target (95% interval), see --auto-*");
  cmd->add_option("--auto-target", f->target,
                  "With --reps auto: the interval's half width to reach, relative (0.1 or 10%; "
                  "default 10%)");
  cmd->add_option("--auto-min-rounds", f->min_rounds,
                  "With --reps auto: rounds before the target is looked at (default 6: fewer "
                  "pairs give no 95% interval)")
      ->check(CLI::Range(1, 10000));
  cmd->add_option("--auto-max-rounds", f->max_rounds,
                  "With --reps auto: the most rounds (default 30)")
      ->check(CLI::Range(1, 10000));
  cmd->add_option("--auto-budget", f->budget,
                  "With --reps auto: no round is started that would end past this time (90s, "
                  "30min, 2h; default none)");
}

Status ParseRepsFlags(const RepsFlags& f, RepsOverrides* out) {
  out->auto_reps = f.reps == "auto";
  if (!f.reps.empty() && !out->auto_reps) {
    size_t used = 0;
    long v = 0;
    try {
      v = std::stol(f.reps, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != f.reps.size() || v < 1 || v > 100000) {
      return Status::BadInput(
          fmt::format("--reps: '{}' is not a number of rounds (1 to 100000) or auto", f.reps));
    }
    out->reps = static_cast<int>(v);
  }
  if (!f.target.empty()) {
    double target = 0;
    LB_RETURN_IF_ERROR(ParseTarget(f.target, "--auto-target", &target));
    out->target = target;
  }
  if (!f.budget.empty()) {
    double budget = 0;
    LB_RETURN_IF_ERROR(ParseDuration(f.budget, "--auto-budget", &budget));
    out->budget_s = budget;
  }
  if (f.min_rounds >= 0) out->min_rounds = f.min_rounds;
  if (f.max_rounds >= 0) out->max_rounds = f.max_rounds;
  return Status::Ok();
}

}  // namespace loadbench::cli
