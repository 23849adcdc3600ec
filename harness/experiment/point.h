// One run as planned: a strategy point (or the ceiling), a cache state, a repetition, and how
// it is run; and the identity of a run for resuming.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/experiment/command.h"
#include "harness/experiment/experiment.h"
#include "harness/record/record.h"
#include "harness/record/results.h"
#include "loaders/strategy/registry.h"
#include "loaders/use/spec.h"

namespace loadbench {

// The spec of a ceiling run: kCeiling, kLinkCeiling or kServerCeiling (record/record.h).
StrategySpec CeilingRunSpec(const char* name = kCeiling);

struct RunPoint {
  StrategySpec spec;
  ResolvedSpec strategy;      // the spec resolved; no strategy for a ceiling or command
  std::string cache;          // "cold" or "warm"
  int rep = 0;                // the round
  int position = -1;          // place in its round from 0; -1: not run in rounds
  int procs = 1;              // readers loading the model at the same time
  ReadPattern pattern;        // what each reader loads (loaders/use/part.h)
  uint64_t memory_limit = 0;  // bytes; 0: no memory cgroup
  std::string link;           // the link's rate; "" without a link
  std::string nic, uplink;    // a [cluster]'s rates; "" without one
  std::string storage;        // the storage's label; "" without a [[storage]]
  // Why the run fails before it starts (its storage could not be made), else empty.
  std::string failed;
  std::string unsupported;          // a reason known before the run (unknown strategy, bad option)
  std::optional<ExecCommand> exec;  // an exec strategy's command
};

// The run `r` of experiment `e` as a point to measure (a ceiling for strategy indexes from
// e.strategies.size() on).
RunPoint PointOf(const Experiment& e, const ExperimentRun& r);

// The identity of a run for resuming (record/results.h RunKey), from a point.
std::string RunKey(const std::string& file, const RunPoint& p);

}  // namespace loadbench
