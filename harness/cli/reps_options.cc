#include "harness/cli/reps_options.h"

#include <fmt/format.h>

#include "harness/experiment/rounds.h"

namespace loadbench::cli {

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
