#include <optional>

#include <fmt/format.h>

#include "harness/experiment/experiment.h"

namespace loadbench {

namespace {

// The patterns a condition of `procs` readers is run with: one reader loads the whole model
// whatever the pattern, so it is run once.
std::vector<std::string> PatternsFor(const Experiment& e, int procs) {
  if (procs == 1) return {"replicated"};
  return e.patterns;
}

}  // namespace

void PlanRuns(Experiment* e) {
  const size_t nf = e->files.size(), ns = e->strategies.size();
  e->runs.clear();
  if (e->order != RoundOrder::kGrouped) {
    for (int rep = 0; rep < e->reps; ++rep) {
      for (const std::string& cache : e->caches) {
        // The ceiling joins the rounds of cold conditions: the device speed is what a cold
        // load is measured against.
        const size_t members = ns + (e->ceiling && cache == "cold" ? 1 : 0);
        const std::vector<size_t> order = MembersInOrder(members, rep, e->order, e->seed);
        for (uint64_t limit : e->memory_limits) {
          for (int procs : e->procs) {
            for (const std::string& pattern : PatternsFor(*e, procs)) {
              for (size_t f = 0; f < nf; ++f) {
                for (size_t k = 0; k < members; ++k) {
                  e->runs.push_back(
                      {f, order[k], cache, rep, procs, limit, static_cast<int>(k), pattern});
                }
              }
            }
          }
        }
      }
    }
    return;
  }
  for (size_t f = 0; f < nf; ++f) {
    for (size_t k = 0; k < ns; ++k) {
      for (uint64_t limit : e->memory_limits) {
        for (int procs : e->procs) {
          for (const std::string& pattern : PatternsFor(*e, procs)) {
            for (const std::string& cache : e->caches) {
              for (int rep = 0; rep < e->reps; ++rep) {
                e->runs.push_back({f, k, cache, rep, procs, limit, -1, pattern});
              }
            }
          }
        }
      }
    }
  }
}

bool RepsOverrides::any() const {
  return reps || auto_reps || target || budget_s || min_rounds || max_rounds;
}

Status ApplyRepsOverrides(const RepsOverrides& o, Experiment* e) {
  if (!o.any()) return Status::Ok();
  if (o.reps) {
    e->auto_reps = false;
    e->reps = *o.reps;
  }
  if (o.auto_reps) e->auto_reps = true;
  if (o.target) e->autoreps.target = *o.target;
  if (o.budget_s) e->autoreps.budget_s = *o.budget_s;
  if (o.min_rounds) e->autoreps.min_rounds = *o.min_rounds;
  if (o.max_rounds) e->autoreps.max_rounds = *o.max_rounds;
  const bool auto_options = o.target || o.budget_s || o.min_rounds || o.max_rounds;
  if (!e->auto_reps && auto_options) {
    return Status::BadInput(e->path.empty() ? "--auto-* options need --reps auto"
                                            : "--auto-* options need --reps auto (or reps = "
                                              "\"auto\" in the file)");
  }
  if (e->auto_reps) {
    LB_RETURN_IF_ERROR(CheckAutoReps(e->autoreps));
    if (e->order == RoundOrder::kGrouped) {
      return Status::BadInput(fmt::format(
          "{}: --reps auto compares within rounds; the experiment's order is grouped", e->path));
    }
    e->reps = e->autoreps.max_rounds;
  }
  PlanRuns(e);
  return Status::Ok();
}

}  // namespace loadbench
