#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "harness/experiment/experiment.h"

namespace loadbench {

namespace {

// The patterns a condition of `procs` readers is run with: one reader loads the whole model
// whatever the pattern, so it is run once.
std::vector<ReadPattern> PatternsFor(const Experiment& e, int procs) {
  if (procs == 1) return {ReadPattern()};
  return e.patterns;
}

// The members of a round of `cache`: every strategy point; the disk's ceiling in cold rounds
// (the device speed is what a cold load is measured against); on a link, its own limit and
// the server's, in every round.
std::vector<size_t> RoundMembers(const Experiment& e, const std::string& cache) {
  const size_t ns = e.strategies.size();
  std::vector<size_t> members(ns);
  for (size_t k = 0; k < ns; ++k) members[k] = k;
  if (e.ceiling && cache == "cold") members.push_back(ns + kDiskCeilingRun);
  if (!e.link.rates.empty()) {
    members.push_back(ns + kLinkCeilingRun);
    members.push_back(ns + kServerCeilingRun);
  }
  return members;
}

std::vector<std::string> LinksOf(const Experiment& e) {
  return e.link.rates.empty() ? std::vector<std::string>{""} : e.link.rates;
}

// The storages' indexes: one (0) without any.
size_t StorageCount(const Experiment& e) { return std::max<size_t>(1, e.storages.size()); }

// Round `rep` on storage `st`: every condition, each with its members in the round's order.
void PlanRound(Experiment* e, size_t st, int rep) {
  for (const std::string& cache : e->caches) {
    const std::vector<size_t> members = RoundMembers(*e, cache);
    const std::vector<size_t> order = MembersInOrder(members.size(), rep, e->order, e->seed);
    for (const std::string& link : LinksOf(*e)) {
      for (uint64_t limit : e->memory_limits) {
        for (int procs : e->procs) {
          for (const ReadPattern& pattern : PatternsFor(*e, procs)) {
            for (size_t f = 0; f < e->files.size(); ++f) {
              for (size_t k = 0; k < members.size(); ++k) {
                e->runs.push_back({f, members[order[k]], cache, rep, procs, limit,
                                   static_cast<int>(k), pattern, link, st});
              }
            }
          }
        }
      }
    }
  }
}

// Grouped order on storage `st`: all repetitions of one combination back to back.
void PlanGrouped(Experiment* e, size_t st) {
  const size_t nf = e->files.size(), ns = e->strategies.size();
  for (size_t f = 0; f < nf; ++f) {
    for (size_t k = 0; k < ns; ++k) {
      for (uint64_t limit : e->memory_limits) {
        for (int procs : e->procs) {
          for (const ReadPattern& pattern : PatternsFor(*e, procs)) {
            for (const std::string& link : LinksOf(*e)) {
              for (const std::string& cache : e->caches) {
                for (int rep = 0; rep < e->reps; ++rep) {
                  e->runs.push_back({f, k, cache, rep, procs, limit, -1, pattern, link, st});
                }
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace

void PlanRuns(Experiment* e) {
  e->runs.clear();
  for (size_t st = 0; st < StorageCount(*e); ++st) {
    if (e->order == RoundOrder::kGrouped) {
      PlanGrouped(e, st);
    } else {
      for (int rep = 0; rep < e->reps; ++rep) PlanRound(e, st, rep);
    }
  }
}

Status CheckGroupedOrder(const Experiment& e) {
  if (e.order != RoundOrder::kGrouped) return Status::Ok();
  const char* what = e.ceiling               ? "a ceiling read in every cold round (ceiling)"
                     : !e.link.rates.empty() ? "the link's and the server's ceilings ([link])"
                                             : nullptr;
  if (what == nullptr) return Status::Ok();
  return Status::BadInput(
      fmt::format("order grouped runs each strategy's runs back to back, in no rounds, and {} is "
                  "read and compared within rounds: use order balanced, interleaved or shuffled",
                  what));
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
    if (e->storages.size() > 1) {
      return Status::BadInput(fmt::format(
          "{}: --reps auto with several storages: each storage's rounds come one after another; "
          "give --reps a number",
          e->path.empty() ? "--storage" : e->path));
    }
    e->reps = e->autoreps.max_rounds;
  }
  PlanRuns(e);
  return Status::Ok();
}

}  // namespace loadbench
